{#- A `dbt snapshot` run of a node is one DuckLake snapshot (the CTAS on the first run,
    one MERGE afterwards), so the SCD table as of any earlier run is
    `VERSION AS OF <that snapshot>`. Changes are staged as a Spark temporary view. -#}
{% materialization snapshot, adapter='ducklake' %}
  {%- set strategy_name = config.get('strategy') -%}
  {%- do adapter.layout_clauses(model) -%}  {#- layout configs checked before any SQL -#}
  {%- set target_relation_exists, target_relation = get_or_create_relation(
        database=model.database, schema=model.schema,
        identifier=model.get('alias', model.get('name')), type='table') -%}
  {%- if target_relation_exists and not target_relation.is_table -%}
    {% do exceptions.relation_wrong_type(target_relation, 'table') %}
  {%- endif -%}
  {% if not adapter.check_schema_exists(model.database, model.schema) %}
    {% do create_schema(model.schema) %}
  {% endif %}

  {{ run_hooks(pre_hooks) }}
  {%- set strategy_macro = strategy_dispatch(strategy_name) -%}
  {%- set strategy = strategy_macro(model, "snapshotted_data", "source_data", model['config'], target_relation_exists) -%}
  {%- set internal = ['dbt_change_type', 'DBT_CHANGE_TYPE', 'dbt_unique_key', 'DBT_UNIQUE_KEY'] -%}
  {%- if config.get('unique_key') is not string -%}
    {%- for key in config.get('unique_key') or [] -%}
      {%- do internal.extend(['dbt_unique_key_' ~ loop.index, 'DBT_UNIQUE_KEY_' ~ loop.index]) -%}
    {%- endfor -%}
  {%- endif -%}

  {%- if not target_relation_exists -%}
    {{ ducklake__set_commit_context('snapshot ' ~ strategy_name) }}
    {%- set build_sql = build_snapshot_table(strategy, model['compiled_code']) -%}
    {%- set final_sql = ducklake__node_sql(none, target_relation, create_table_as(False, target_relation, build_sql), ducklake__query_columns(build_sql)) -%}
  {%- else -%}
    {%- set columns = config.get("snapshot_table_column_names") or get_snapshot_table_column_names() -%}
    {{ adapter.assert_valid_snapshot_target_given_strategy(target_relation, columns, strategy) }}
    {%- set staging_relation = make_temp_relation(target_relation) -%}
    {% call statement('stage_snapshot_changes') -%}
      {{ create_table_as(True, staging_relation, snapshot_staging_table(strategy, sql, target_relation)) }}
    {%- endcall %}
    {{ ducklake__set_commit_context('snapshot ' ~ strategy_name) }}
    {%- set missing_columns = adapter.get_missing_columns(staging_relation, target_relation) | rejectattr('name', 'in', internal) | list -%}
    {% do create_columns(target_relation, missing_columns) %}
    {%- set source_columns = adapter.get_columns_in_relation(staging_relation) | rejectattr('name', 'in', internal) | list -%}
    {%- set final_sql = snapshot_merge_sql(target=target_relation, source=staging_relation, insert_cols=source_columns | map(attribute='name') | map('string') | list) -%}
  {%- endif -%}

  {% call statement('main') -%}
    {{ final_sql }}
  {%- endcall %}
  {%- if staging_relation is defined -%}
    {% call statement('drop_staged_changes') -%}
      drop view if exists {{ staging_relation }}
    {%- endcall %}
  {%- endif -%}
  {{ ducklake__finish_node(target_relation) }}
  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}


{#- New versions take their values from the staged rows explicitly (an unqualified
    name in VALUES would be ambiguous between target and source here). -#}
{% macro ducklake__snapshot_merge_sql(target, source, insert_cols) -%}
  {%- set columns = config.get("snapshot_table_column_names") or get_snapshot_table_column_names() -%}
  merge into {{ target }} as DBT_INTERNAL_DEST
  using {{ source }} as DBT_INTERNAL_SOURCE
  on DBT_INTERNAL_SOURCE.{{ columns.dbt_scd_id }} = DBT_INTERNAL_DEST.{{ columns.dbt_scd_id }}
  when matched
    {%- if config.get("dbt_valid_to_current") %}
    and (DBT_INTERNAL_DEST.{{ columns.dbt_valid_to }} = {{ config.get('dbt_valid_to_current') }}
         or DBT_INTERNAL_DEST.{{ columns.dbt_valid_to }} is null)
    {%- else %}
    and DBT_INTERNAL_DEST.{{ columns.dbt_valid_to }} is null
    {%- endif %}
    and DBT_INTERNAL_SOURCE.dbt_change_type in ('update', 'delete')
    then update set {{ columns.dbt_valid_to }} = DBT_INTERNAL_SOURCE.{{ columns.dbt_valid_to }}
  when not matched and DBT_INTERNAL_SOURCE.dbt_change_type = 'insert'
    then insert ({% for c in insert_cols %}{{ adapter.quote(c) }}{{ ', ' if not loop.last }}{% endfor %})
    values ({% for c in insert_cols %}DBT_INTERNAL_SOURCE.{{ adapter.quote(c) }}{{ ', ' if not loop.last }}{% endfor %})
{%- endmacro %}

{% macro ducklake__create_columns(relation, columns) -%}
  {%- if columns | length > 0 -%}
    {% call statement('create_columns') -%}
      alter table {{ relation }} add columns (
        {%- for column in columns %}{{ adapter.quote(column.name) }} {{ column.data_type }}{{ ', ' if not loop.last }}{% endfor -%}
      )
    {%- endcall %}
  {%- endif -%}
{%- endmacro %}
