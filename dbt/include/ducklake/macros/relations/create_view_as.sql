{#- Lake views store DuckDB-dialect SQL (transpiled), so DuckDB can query them too.
    An enforced contract is checked (names and types) before the view is created. -#}
{% macro ducklake__create_view_as(relation, sql) -%}
  {%- if config.get('contract').enforced -%}
    {{ get_assert_columns_equivalent(sql) }}
  {%- endif -%}
  {{ ducklake__sql_header() }}
  create or replace view {{ relation.render() }} as {{ sql }}
{%- endmacro %}

{#- A model's `sql_header` (e.g. `set spark.sql.…`) runs in the Spark session first. -#}
{% macro ducklake__sql_header() -%}
  {%- set sql_header = config.get('sql_header', none) -%}
  {%- if sql_header is not none -%}
    {{ sql_header | trim | trim(';') }};
  {% endif -%}
{%- endmacro %}
