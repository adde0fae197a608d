{% macro ducklake__get_incremental_append_sql(arg_dict) -%}
  insert into {{ arg_dict['target_relation'] }}
  select {{ ducklake__column_list(arg_dict['dest_columns']) }} from {{ arg_dict['temp_relation'] }}
{%- endmacro %}
