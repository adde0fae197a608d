{#- A `dbt snapshot` run of a node is one DuckLake snapshot (the CTAS on the first run,
    one MERGE afterwards), so the SCD table as of any earlier run is
    `VERSION AS OF <that snapshot>`. Changes are staged as a Spark temporary view. -#}
{% materialization snapshot, adapter='ducklake' %}
  {%- set strategy_name = config.get('strategy') -%}
  {%- do adapter.layout_clauses(model) -%}  {#- layout configs checked before any SQL -#}
  {%- set target_relation_exists, target_relation = get_or_create_relation(
        database=model.database, schema=model.schema,
        identifier=model.get('alias', model.get('name')), type='table') -%}
  {%- if target_relation_exists and not target_relation.is_table -%}
    {% do exceptions.relation_wrong_type(target_relation, 'table') %}
  {%- endif -%}
  {% if not adapter.check_schema_exists(model.database, model.schema) %}
    {% do create_schema(model.schema) %}
  {% endif %}

  {{ ducklake__start_node() }}
  {%- if strategy_name == 'changes' -%}
    {%- do ducklake__snapshot_changes(target_relation if target_relation_exists else none, target_relation) -%}
    {{ ducklake__finish_node(target_relation) }}
    {{ return({'relations': [target_relation]}) }}
  {%- endif -%}
  {%- set strategy_macro = strategy_dispatch(strategy_name) -%}
  {%- set strategy = strategy_macro(model, "snapshotted_data", "source_data", model['config'], target_relation_exists) -%}
  {%- set internal = ['dbt_change_type', 'DBT_CHANGE_TYPE', 'dbt_unique_key', 'DBT_UNIQUE_KEY'] -%}
  {%- if config.get('unique_key') is not string -%}
    {%- for key in config.get('unique_key') or [] -%}
      {%- do internal.extend(['dbt_unique_key_' ~ loop.index, 'DBT_UNIQUE_KEY_' ~ loop.index]) -%}
    {%- endfor -%}
  {%- endif -%}

  {%- if not target_relation_exists -%}
    {{ ducklake__set_commit_context('snapshot ' ~ strategy_name) }}
    {%- set build_sql = build_snapshot_table(strategy, model['compiled_code']) -%}
    {%- set final_sql = ducklake__node_sql(none, target_relation, create_table_as(False, target_relation, build_sql), ducklake__query_columns(build_sql)) -%}
  {%- else -%}
    {%- set columns = config.get("snapshot_table_column_names") or get_snapshot_table_column_names() -%}
    {{ adapter.assert_valid_snapshot_target_given_strategy(target_relation, columns, strategy) }}
    {%- set staging_relation = make_temp_relation(target_relation) -%}
    {% call statement('stage_snapshot_changes') -%}
      {{ create_table_as(True, staging_relation, snapshot_staging_table(strategy, sql, target_relation)) }}
    {%- endcall %}
    {{ ducklake__set_commit_context('snapshot ' ~ strategy_name) }}
    {%- set missing_columns = adapter.get_missing_columns(staging_relation, target_relation) | rejectattr('name', 'in', internal) | list -%}
    {% do create_columns(target_relation, missing_columns) %}
    {%- set source_columns = adapter.get_columns_in_relation(staging_relation) | rejectattr('name', 'in', internal) | list -%}
    {%- set final_sql = snapshot_merge_sql(target=target_relation, source=staging_relation, insert_cols=source_columns | map(attribute='name') | map('string') | list) -%}
  {%- endif -%}

  {% call statement('main') -%}
    {{ final_sql }}
  {%- endcall %}
  {%- if staging_relation is defined -%}
    {% call statement('drop_staged_changes') -%}
      drop view if exists {{ staging_relation }}
    {%- endcall %}
  {%- endif -%}
  {{ ducklake__finish_node(target_relation) }}
  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}


{#- New versions take their values from the staged rows explicitly (an unqualified
    name in VALUES would be ambiguous between target and source here). -#}
{% macro ducklake__snapshot_merge_sql(target, source, insert_cols) -%}
  {%- set columns = config.get("snapshot_table_column_names") or get_snapshot_table_column_names() -%}
  merge into {{ target }} as DBT_INTERNAL_DEST
  using {{ source }} as DBT_INTERNAL_SOURCE
  on DBT_INTERNAL_SOURCE.{{ columns.dbt_scd_id }} = DBT_INTERNAL_DEST.{{ columns.dbt_scd_id }}
  when matched
    {%- if config.get("dbt_valid_to_current") %}
    and (DBT_INTERNAL_DEST.{{ columns.dbt_valid_to }} = {{ config.get('dbt_valid_to_current') }}
         or DBT_INTERNAL_DEST.{{ columns.dbt_valid_to }} is null)
    {%- else %}
    and DBT_INTERNAL_DEST.{{ columns.dbt_valid_to }} is null
    {%- endif %}
    and DBT_INTERNAL_SOURCE.dbt_change_type in ('update', 'delete')
    then update set {{ columns.dbt_valid_to }} = DBT_INTERNAL_SOURCE.{{ columns.dbt_valid_to }}
  when not matched and DBT_INTERNAL_SOURCE.dbt_change_type = 'insert'
    then insert ({% for c in insert_cols %}{{ adapter.quote(c) }}{{ ', ' if not loop.last }}{% endfor %})
    values ({% for c in insert_cols %}DBT_INTERNAL_SOURCE.{{ adapter.quote(c) }}{{ ', ' if not loop.last }}{% endfor %})
{%- endmacro %}

{% macro ducklake__create_columns(relation, columns) -%}
  {%- if columns | length > 0 -%}
    {% call statement('create_columns') -%}
      alter table {{ relation.render() }} add columns (
        {%- for column in columns %}{{ adapter.quote(column.name) }} {{ column.data_type }}{{ ', ' if not loop.last }}{% endfor -%}
      )
    {%- endcall %}
  {%- endif -%}
{%- endmacro %}


{#- strategy='changes' (CDC): the source is one lake table; this run's versions come from
    its change feed since the source snapshot the last run consumed (the adapter stages
    them as Spark views), merged as one DuckLake snapshot whose commit_extra_info records
    the source snapshot consumed (cdc_source_snapshot). -#}
{% macro ducklake__snapshot_changes(existing_relation, target_relation) -%}
  {%- set plan = adapter.plan_changes_snapshot(model, existing_relation, model['compiled_code']) -%}
  {%- if plan is none -%}
    {#- dbt wants a statement named main; this one reads nothing and writes nothing -#}
    {% call statement('main') -%} select 1 as no_source_change where 1 = 0 {%- endcall %}
    {{ return(none) }}
  {%- endif -%}
  {%- do adapter.set_commit_context(model, 'snapshot changes', config.get('commit_message'), {'cdc_source_snapshot': plan.source_snapshot}) -%}
  {%- set quoted = [] -%}
  {%- for c in plan.columns -%}{%- do quoted.append(adapter.quote(c)) -%}{%- endfor -%}
  {%- if existing_relation is none -%}
    {%- set build_sql = 'select ' ~ quoted | join(', ') ~ ' from ' ~ plan.new_view -%}
    {%- set final_sql = ducklake__node_sql(none, target_relation, create_table_as(False, target_relation, build_sql), plan.columns) -%}
  {%- else -%}
    {%- set valid_to = adapter.quote(plan.valid_to) -%}
    {%- set final_sql -%}
      begin;
      merge into {{ target_relation }} as DBT_INTERNAL_DEST using {{ plan.close_view }} as DBT_INTERNAL_SOURCE
        on {% for k in plan['keys'] %}DBT_INTERNAL_DEST.{{ adapter.quote(k) }} = DBT_INTERNAL_SOURCE.{{ adapter.quote(k) }} and {% endfor %}DBT_INTERNAL_DEST.{{ valid_to }} is null
        when matched then update set {{ valid_to }} = DBT_INTERNAL_SOURCE.{{ valid_to }};
      insert into {{ target_relation }} ({{ quoted | join(', ') }}) select {{ quoted | join(', ') }} from {{ plan.new_view }};
      commit
    {%- endset -%}
  {%- endif -%}
  {% call statement('main') -%}
    {{ final_sql }}
  {%- endcall %}
  {% call statement('drop_cdc_views') -%}
    drop view if exists {{ plan.new_view }}{% if plan.close_view %}; drop view if exists {{ plan.close_view }}{% endif %}
  {%- endcall %}
{%- endmacro %}
