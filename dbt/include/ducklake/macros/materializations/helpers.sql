{#- SQL that creates a relation in one snapshot; when a relation of the other kind has
    the name, it is dropped in the same transaction. -#}
{% macro ducklake__create_replacing(existing_relation, wanted_type, create_sql) -%}
  {%- if existing_relation is not none and existing_relation.type != wanted_type -%}
    begin;
    drop {{ existing_relation.type }} {{ existing_relation }};
    {{ create_sql }};
    commit
  {%- else -%}
    {{ create_sql }}
  {%- endif -%}
{%- endmacro %}

{% macro ducklake__finish_node(target_relation) -%}
  {% do persist_docs(target_relation, model) %}
  {{ adapter.clear_commit_context() }}
  {{ run_hooks(post_hooks) }}
{%- endmacro %}
