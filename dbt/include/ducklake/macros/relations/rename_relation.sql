{% macro ducklake__rename_relation(from_relation, to_relation) -%}
  {% call statement('rename_relation') -%}
    alter {{ 'view' if from_relation.is_view else 'table' }} {{ from_relation.render() }} rename to {{ to_relation.render() }}
  {%- endcall %}
{%- endmacro %}
