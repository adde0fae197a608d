{#- on_schema_change: DuckLake ALTERs in one snapshot; no data file is rewritten
    (dropped columns stay in old files and are no longer read). -#}
{% macro ducklake__alter_relation_add_remove_columns(relation, add_columns, remove_columns) -%}
  {%- if add_columns or remove_columns -%}
    {% call statement('alter_relation_add_remove_columns') -%}
      begin;
      {%- if add_columns %}
      alter table {{ relation.render() }} add columns (
        {%- for column in add_columns %}{{ column.quoted }} {{ column.data_type }}{{ ', ' if not loop.last }}{% endfor -%}
      );
      {%- endif %}
      {%- for column in (remove_columns or []) %}
      alter table {{ relation.render() }} drop column {{ column.quoted }};
      {%- endfor %}
      commit
    {%- endcall %}
  {%- endif -%}
{%- endmacro %}

{#- DuckLake changes a column's type in place when the change is lossless (DuckLake's
    promotions); others are refused naming the column and both types. -#}
{% macro ducklake__alter_column_type(relation, column_name, new_column_type) -%}
  {% call statement('alter_column_type') -%}
    alter table {{ relation.render() }} alter column {{ adapter.quote(column_name) }} type {{ new_column_type }}
  {%- endcall %}
{%- endmacro %}
