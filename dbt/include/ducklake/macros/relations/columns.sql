{#- Columns come from DuckLake metadata (dbt-spark's fallback would run DESCRIBE). -#}
{% macro ducklake__get_columns_in_relation(relation) -%}
  {{ return(adapter.get_columns_in_relation(relation)) }}
{%- endmacro %}
