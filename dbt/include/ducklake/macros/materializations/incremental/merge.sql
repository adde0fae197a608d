{#- MERGE INTO as the engine runs it (merge-on-read, one snapshot); the statement is
    what target/run shows. -#}
{% macro ducklake__get_incremental_merge_sql(arg_dict) -%}
  {%- set dest_columns = arg_dict['dest_columns'] -%}
  {%- set keys = ducklake__unique_keys(arg_dict['unique_key']) -%}
  {%- set update_columns = get_merge_update_columns(config.get('merge_update_columns'), config.get('merge_exclude_columns'), dest_columns) -%}
  merge into {{ arg_dict['target_relation'] }} as DBT_INTERNAL_DEST
  using {{ arg_dict['temp_relation'] }} as DBT_INTERNAL_SOURCE
  on {% if keys -%}
    {%- for k in keys -%}DBT_INTERNAL_SOURCE.{{ k }} = DBT_INTERNAL_DEST.{{ k }}{{ ' and ' if not loop.last }}{%- endfor -%}
  {%- else -%}false{%- endif -%}
  {{ ducklake__predicates_sql(arg_dict['incremental_predicates']) }}
  {% if keys -%}
  when matched then update set
    {% for c in update_columns -%}{{ c }} = DBT_INTERNAL_SOURCE.{{ c }}{{ ', ' if not loop.last }}{%- endfor %}
  {% endif -%}
  when not matched then insert ({{ ducklake__column_list(dest_columns) }})
    values ({% for c in dest_columns %}DBT_INTERNAL_SOURCE.{{ adapter.quote(c.name) }}{{ ', ' if not loop.last }}{% endfor %})
{%- endmacro %}

{#- dbt's default column choice (dbt-spark's fallback answers None for "all"). -#}
{% macro ducklake__get_merge_update_columns(merge_update_columns, merge_exclude_columns, dest_columns) -%}
  {{ return(default__get_merge_update_columns(merge_update_columns, merge_exclude_columns, dest_columns)) }}
{%- endmacro %}
