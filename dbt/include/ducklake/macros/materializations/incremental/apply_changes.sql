{#- incremental_strategy='apply_changes': the model selects an upstream's change feed
    (ducklake_changes_since_last_build, or table_changes) with its change_type and
    snapshot_id columns; the last change of each unique_key in the window decides:
    an insert or update_postimage upserts the row, a delete or update_preimage deletes
    it. For row-wise models (filters, projections, lookups of unchanging tables) the
    table then equals a full recompute. The feed's columns are not stored. -#}
{#- the model's columns other than the feed's, from its column names `names`;
    checks that the feed's are there -#}
{% macro ducklake__apply_changes_columns(names) -%}
  {%- set lowered = names | map('lower') | list -%}
  {%- if 'change_type' not in lowered or 'snapshot_id' not in lowered -%}
    {{ exceptions.raise_compiler_error("ducklake: model " ~ this ~ ": incremental_strategy 'apply_changes' needs the change feed's change_type and snapshot_id columns in the model's select (from ducklake_changes_since_last_build(...)); got: " ~ names | join(', ')) }}
  {%- endif -%}
  {%- if not ducklake__unique_keys(config.get('unique_key')) -%}
    {{ exceptions.raise_compiler_error("ducklake: model " ~ this ~ ": incremental_strategy 'apply_changes' needs a unique_key") }}
  {%- endif -%}
  {{ return(ducklake__without_feed_columns(names)) }}
{%- endmacro %}

{% macro ducklake__without_feed_columns(names) -%}
  {%- set kept = [] -%}
  {%- for n in names if n | lower not in ['snapshot_id', 'rowid', 'change_type'] -%}
    {%- do kept.append(n) -%}
  {%- endfor -%}
  {{ return(kept) }}
{%- endmacro %}

{#- a full refresh (or first build) stores the feed's inserted rows: every current row -#}
{% macro ducklake__apply_changes_full_sql(model_sql) -%}
  {%- set columns = ducklake__apply_changes_columns(get_columns_in_query(model_sql)) -%}
  select {% for c in columns %}{{ adapter.quote(c) }}{{ ', ' if not loop.last }}{% endfor %}
  from ({{ model_sql }}) as ducklake_feed
  where change_type in ('insert', 'update_postimage')
{%- endmacro %}

{#- Two views, three when on_schema_change compares columns: `<temp>__feed`, the model's
    query (planned once: reading a feed is its costliest planning, and its columns are
    then the view's); `<temp>__changes`, the last change per key with a removal flag
    (what the MERGE reads); and `<temp>`, its data columns (what on_schema_change
    compares with the table; a Spark statement of ~10 ms, left out when it compares
    nothing). Returns the data columns' names (what the key check compares). -#}
{% macro ducklake__stage_apply_changes(model_sql, temp_relation, on_schema_change) -%}
  {%- set feed = temp_relation.incorporate(path={'identifier': temp_relation.identifier ~ '__feed'}) -%}
  {% call statement('stage_feed') -%}
    create or replace temporary view {{ feed.identifier }} as {{ model_sql }}
  {%- endcall %}
  {%- set names = adapter.get_columns_in_relation(feed) | map(attribute='name') | list -%}
  {%- set columns = ducklake__apply_changes_columns(names) -%}
  {%- set lowered = names | map('lower') | list -%}
  {%- set keys = ducklake__unique_keys(config.get('unique_key')) -%}
  {%- set adds = "change_type in ('insert', 'update_postimage')" -%}
  {#- rows the driver holds (a small window read there) are ranked there: no Spark job -#}
  {%- if not adapter.last_changes_here(feed.identifier, temp_relation.identifier ~ '__changes', keys) -%}
  {% call statement('stage_changes') -%}
    create or replace temporary view {{ temp_relation.identifier }}__changes as
    select * from (
      select ducklake_feed.*, not ({{ adds }}) as ducklake_removed,
        row_number() over (
          partition by {% for k in keys %}{{ k }}{{ ', ' if not loop.last }}{% endfor %}
          order by snapshot_id desc, case when {{ adds }} then 1 else 0 end desc
          {%- if 'rowid' in lowered %}, rowid desc{% endif %}) as ducklake_change_rank
      from {{ feed.identifier }} as ducklake_feed
    ) as ranked
    where ducklake_change_rank = 1
  {%- endcall %}
  {%- endif -%}
  {%- if on_schema_change != 'ignore' -%}
  {% call statement('stage_new_rows') -%}
    create or replace temporary view {{ temp_relation.identifier }} as
    select {% for c in columns %}{{ adapter.quote(c) }}{{ ', ' if not loop.last }}{% endfor %}
    from {{ temp_relation.identifier }}__changes
  {%- endcall %}
  {%- endif -%}
  {{ return(columns) }}
{%- endmacro %}

{% macro ducklake__get_incremental_apply_changes_sql(arg_dict) -%}
  {%- set dest_columns = arg_dict['dest_columns'] -%}
  {%- set keys = ducklake__unique_keys(arg_dict['unique_key']) -%}
  {%- set update_columns = get_merge_update_columns(config.get('merge_update_columns'), config.get('merge_exclude_columns'), dest_columns) -%}
  merge into {{ arg_dict['target_relation'] }} as DBT_INTERNAL_DEST
  using {{ arg_dict['temp_relation'].identifier }}__changes as DBT_INTERNAL_SOURCE
  on {% for k in keys -%}DBT_INTERNAL_SOURCE.{{ k }} = DBT_INTERNAL_DEST.{{ k }}{{ ' and ' if not loop.last }}{%- endfor -%}
  {{ ducklake__predicates_sql(arg_dict['incremental_predicates']) }}
  when matched and DBT_INTERNAL_SOURCE.ducklake_removed then delete
  when matched then update set
    {% for c in update_columns -%}{{ c }} = DBT_INTERNAL_SOURCE.{{ c }}{{ ', ' if not loop.last }}{%- endfor %}
  when not matched and not DBT_INTERNAL_SOURCE.ducklake_removed then insert ({{ ducklake__column_list(dest_columns) }})
    values ({% for c in dest_columns %}DBT_INTERNAL_SOURCE.{{ adapter.quote(c.name) }}{{ ', ' if not loop.last }}{% endfor %})
{%- endmacro %}

{#- dbt finds a strategy by the name get_incremental_<strategy>_sql; this one is ours -#}
{% macro get_incremental_apply_changes_sql(arg_dict) -%}
  {{- return(adapter.dispatch('get_incremental_apply_changes_sql', 'dbt')(arg_dict)) -}}
{%- endmacro %}
