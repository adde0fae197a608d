{#- Seeds are written by Spark from the CSV in one snapshot (create or full replace):
    no row-by-row INSERTs with bindings. -#}
{% macro ducklake__seed_column_types(model, agate_table) -%}
  {%- set overrides = model['config'].get('column_types', {}) -%}
  {%- set types = {} -%}
  {%- for name in agate_table.column_names -%}
    {%- do types.update({name: overrides.get(name, adapter.convert_type(agate_table, loop.index0))}) -%}
  {%- endfor -%}
  {{ return(types) }}
{%- endmacro %}

{% macro ducklake__create_csv_table(model, agate_table, full_refresh=false) -%}
  {{ ducklake__set_commit_context('seed') }}
  {%- set relation = this.incorporate(type='table') -%}
  {%- set types = ducklake__seed_column_types(model, agate_table) -%}
  {{ ducklake__stage_for_post_hooks() }}
  {%- do adapter.load_seed(relation, agate_table, types, full_refresh, model['config'].get('delimiter', ',')) -%}
  {{ return('-- ' ~ relation ~ ' written from the seed file by Spark') }}
{%- endmacro %}

{% macro ducklake__reset_csv_table(model, full_refresh, old_relation, agate_table) -%}
  {{ return(ducklake__create_csv_table(model, agate_table, full_refresh)) }}
{%- endmacro %}

{% macro ducklake__load_csv_rows(model, agate_table) -%}
  {{ return('') }}
{%- endmacro %}
