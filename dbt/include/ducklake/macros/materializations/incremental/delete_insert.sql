{#- Matching rows go and the new ones come in the same snapshot. -#}
{% macro ducklake__get_incremental_delete_insert_sql(arg_dict) -%}
  {%- set keys = ducklake__unique_keys(arg_dict['unique_key']) -%}
  begin;
  {% if keys -%}
  delete from {{ arg_dict['target_relation'] }}
  where ({{ keys | join(', ') }}) in (select {{ keys | join(', ') }} from {{ arg_dict['temp_relation'] }})
  {{- ducklake__predicates_sql(arg_dict['incremental_predicates']) }};
  {%- endif %}
  {{ ducklake__get_incremental_append_sql(arg_dict) }};
  commit
{%- endmacro %}
