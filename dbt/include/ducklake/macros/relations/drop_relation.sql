{% macro ducklake__drop_relation(relation) -%}
  {% call statement('drop_relation', auto_begin=False) -%}
    drop {{ relation.type or 'table' }} if exists {{ relation.render() }}
  {%- endcall %}
{%- endmacro %}
