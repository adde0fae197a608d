{#- A lake table is created (or replaced) by one CTAS statement: one DuckLake snapshot,
    and no moment where the old table is gone and the new one not there yet.
    With an enforced contract the columns are declared (names, types, NOT NULL) and the
    engine checks NOT NULL while writing: a violation fails and commits nothing.
    `partition_by` / `sorted_by` lay the table out in the same snapshot.
    `temporary` relations are Spark temporary views: they never reach the lake. -#}
{% macro ducklake__create_table_as(temporary, relation, compiled_code, language='sql') -%}
  {%- if language != 'sql' -%}
    {{ exceptions.raise_compiler_error("ducklake: model " ~ relation ~ " is " ~ language ~ "; only SQL models are supported") }}
  {%- endif -%}
  {%- if temporary -%}
    create or replace temporary view {{ relation.identifier }} as {{ compiled_code }}
  {%- else -%}
    {{ ducklake__sql_header() }}
    {%- set contract_config = config.get('contract') -%}
    {%- if contract_config.enforced -%}
      {{ get_assert_columns_equivalent(compiled_code) }}
      create or replace table {{ relation.render() }} {{ get_table_columns_and_constraints() }}
      {{ adapter.layout_clauses(model) }}
      as {{ get_select_subquery(compiled_code) }}
    {%- else -%}
      create or replace table {{ relation.render() }} {{ adapter.layout_clauses(model) }}
      as {{ compiled_code }}
    {%- endif -%}
  {%- endif -%}
{%- endmacro %}
