{#- docs generate: built from DuckLake metadata by the adapter (see catalog.py). -#}
{% macro ducklake__get_catalog(information_schema, schemas) -%}
  {{ return(adapter.catalog_table(schemas)) }}
{%- endmacro %}
