{% materialization table, adapter='ducklake' %}
  {%- set target_relation = this.incorporate(type='table') -%}
  {%- set existing_relation = load_cached_relation(this) -%}
  {%- do adapter.layout_clauses(model) -%}  {#- layout configs checked before any SQL -#}

  {{ run_hooks(pre_hooks) }}
  {{ ducklake__set_commit_context('table') }}
  {% call statement('main') -%}
    {{ ducklake__node_sql(existing_relation, target_relation,
         create_table_as(False, target_relation, compiled_code),
         ducklake__query_columns(compiled_code)) }}
  {%- endcall %}
  {{ ducklake__finish_node(target_relation) }}
  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
