{#- persist_docs: DuckLake comments on tables, views and columns. -#}
{% macro ducklake__persist_docs(relation, model, for_relation, for_columns) -%}
  {%- if for_relation and config.persist_relation_docs() and model.description -%}
    {% do alter_relation_comment(relation, model.description) %}
  {%- endif -%}
  {%- if for_columns and config.persist_column_docs() and model.columns -%}
    {% do alter_column_comment(relation, model.columns) %}
  {%- endif -%}
{%- endmacro %}

{% macro ducklake__alter_relation_comment(relation, relation_comment) -%}
  {% call statement('alter_relation_comment') -%}
    comment on {{ 'view' if relation.is_view else 'table' }} {{ relation.render() }} is {{ ducklake__comment_literal(relation_comment) }}
  {%- endcall %}
{%- endmacro %}

{% macro ducklake__alter_column_comment(relation, column_dict) -%}
  {%- set existing = adapter.get_columns_in_relation(relation) | map(attribute='name') | map('lower') | list -%}
  {%- for column_name, column in column_dict.items() if column.description and column_name | lower in existing -%}
    {% call statement('alter_column_comment') -%}
      comment on column {{ relation.render() }}.{{ adapter.quote(column_name) if column.quote else column_name }} is {{ ducklake__comment_literal(column.description) }}
    {%- endcall %}
  {%- endfor -%}
{%- endmacro %}

{% macro ducklake__comment_literal(text) -%}
  '{{ text | replace("\\", "\\\\") | replace("'", "\\'") }}'
{%- endmacro %}
