{#- Nodes carry the lake's name as their database (dbt-spark's fallback would drop it,
    and docs could not match catalog rows to nodes). -#}
{% macro ducklake__generate_database_name(custom_database_name=none, node=none) -%}
  {{ return(default__generate_database_name(custom_database_name, node)) }}
{%- endmacro %}
