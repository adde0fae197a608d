{% materialization table, adapter='ducklake' %}
  {%- set target_relation = this.incorporate(type='table') -%}
  {%- set existing_relation = load_cached_relation(this) -%}

  {{ run_hooks(pre_hooks) }}
  {{ ducklake__set_commit_context('table') }}
  {% call statement('main') -%}
    {{ ducklake__create_replacing(existing_relation, 'table', create_table_as(False, target_relation, compiled_code)) }}
  {%- endcall %}
  {{ ducklake__finish_node(target_relation) }}
  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
