{% macro ducklake__create_schema(relation) -%}
  {%- do adapter.check_node({'unique_id': 'schema ' ~ relation.schema, 'schema': relation.schema}) -%}
  {%- do adapter.set_commit_context({'unique_id': relation.schema, 'resource_type': 'schema'}, 'create schema', 'dbt create schema ' ~ relation.schema) -%}
  {% call statement('create_schema') -%}
    create schema if not exists {{ relation.without_identifier() }}
  {%- endcall %}
{%- endmacro %}

{% macro ducklake__drop_schema(relation) -%}
  {% call statement('drop_schema') -%}
    drop schema if exists {{ relation.without_identifier() }} cascade
  {%- endcall %}
{%- endmacro %}
