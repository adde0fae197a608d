{% materialization view, adapter='ducklake' %}
  {%- set target_relation = this.incorporate(type='view') -%}
  {%- set existing_relation = load_cached_relation(this) -%}

  {{ ducklake__start_node() }}
  {{ ducklake__set_commit_context('view') }}
  {% call statement('main') -%}
    {{ ducklake__node_sql(existing_relation, target_relation, get_create_view_as_sql(target_relation, compiled_code)) }}
  {%- endcall %}
  {{ ducklake__finish_node(target_relation) }}
  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
