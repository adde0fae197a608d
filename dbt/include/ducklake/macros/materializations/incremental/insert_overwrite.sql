{#- Dynamic partition overwrite: on a partitioned table the partitions present in the
    new rows are replaced; a table without partitioning is replaced whole. -#}
{% macro ducklake__get_incremental_insert_overwrite_sql(arg_dict) -%}
  {%- set target = arg_dict['target_relation'] -%}
  {%- set partition_columns = adapter.partition_columns(target) -%}
  insert overwrite table {{ target }}
  {%- if partition_columns %} partition ({% for c in partition_columns %}{{ adapter.quote(c) }}{{ ', ' if not loop.last }}{% endfor %}){% endif %}
  select {{ ducklake__column_list(arg_dict['dest_columns']) }} from {{ arg_dict['temp_relation'] }}
{%- endmacro %}
