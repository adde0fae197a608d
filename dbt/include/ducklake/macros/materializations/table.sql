{% materialization table, adapter='ducklake', supported_languages=['sql', 'python'] %}
  {%- set target_relation = this.incorporate(type='table') -%}
  {%- set existing_relation = load_cached_relation(this) -%}
  {%- do adapter.layout_clauses(model) -%}  {#- layout configs checked before any SQL -#}

  {{ ducklake__start_node() }}
  {{ ducklake__set_commit_context('table') }}
  {%- set model_sql = compiled_code -%}
  {%- if model.language == 'python' -%}
    {#- model(dbt, session) runs here; its DataFrame is written like a query's rows -#}
    {% call statement('python_model', language='python') -%} {{ compiled_code }} {%- endcall %}
    {%- set model_sql = 'select * from ' ~ adapter.python_view(this) -%}
  {%- endif -%}
  {% call statement('main') -%}
    {{ ducklake__node_sql(existing_relation, target_relation,
         create_table_as(False, target_relation, model_sql),
         ducklake__query_columns(model_sql)) }}
  {%- endcall %}
  {{ ducklake__drop_python_view() }}
  {{ ducklake__finish_node(target_relation) }}
  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
