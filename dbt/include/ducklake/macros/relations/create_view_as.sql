{#- Lake views store DuckDB-dialect SQL (transpiled), so DuckDB can query them too. -#}
{% macro ducklake__create_view_as(relation, sql) -%}
  create or replace view {{ relation }} as {{ sql }}
{%- endmacro %}
