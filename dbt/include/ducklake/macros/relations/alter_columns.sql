{#- on_schema_change: DuckLake ALTERs in one snapshot; no data file is rewritten
    (dropped columns stay in old files and are no longer read). -#}
{% macro ducklake__alter_relation_add_remove_columns(relation, add_columns, remove_columns) -%}
  {%- if add_columns or remove_columns -%}
    {% call statement('alter_relation_add_remove_columns') -%}
      begin;
      {%- if add_columns %}
      alter table {{ relation }} add columns (
        {%- for column in add_columns %}{{ column.quoted }} {{ column.data_type }}{{ ', ' if not loop.last }}{% endfor -%}
      );
      {%- endif %}
      {%- for column in (remove_columns or []) %}
      alter table {{ relation }} drop column {{ column.quoted }};
      {%- endfor %}
      commit
    {%- endcall %}
  {%- endif -%}
{%- endmacro %}
