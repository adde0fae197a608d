{#- Ends every data file of the table in one snapshot (no file is rewritten). -#}
{% macro ducklake__truncate_relation(relation) -%}
  {% call statement('truncate_relation') -%}
    delete from {{ relation.render() }}
  {%- endcall %}
{%- endmacro %}
