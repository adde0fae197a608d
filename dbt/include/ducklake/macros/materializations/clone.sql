{#- `dbt clone`: each relation of the state becomes a view here, pinned by time travel to
    the snapshot the clone ran at (`select * from src VERSION AS OF n`; DuckDB reads it as
    `AT (VERSION => n)`). No data file is copied or shared: DuckDB's cleanup deletes a
    file once the table that wrote it no longer needs it, whatever else refers to it, so
    a table entry sharing the source's files could lose them. A pinned view reads the
    source's own files as of n; once snapshot n is expired (ducklake_expire_snapshots),
    reading the clone fails naming the snapshot (clone again with --full-refresh). A
    view of the state is cloned as a view of it (views have no snapshots of their own).
    `can_clone_table` is false: no zero-copy table clone exists on DuckLake. -#}
{% macro ducklake__can_clone_table() %}
  {{ return(False) }}
{% endmacro %}

{% materialization clone, adapter='ducklake' %}
  {%- if not defer_relation -%}
    {{ log("No relation found in state manifest for " ~ model.unique_id, info=True) }}
    {{ return({'relations': []}) }}
  {%- endif -%}
  {%- set existing_relation = load_cached_relation(this) -%}
  {%- if existing_relation and not flags.FULL_REFRESH -%}
    {{ log("Relation " ~ existing_relation ~ " already exists", info=True) }}
    {{ return({'relations': []}) }}
  {%- endif -%}
  {%- if this.schema | lower == defer_relation.schema | lower and this.identifier | lower == defer_relation.identifier | lower -%}
    {{ log("Target relation and defer relation are the same, skipping clone for relation: " ~ this.render()) }}
    {{ return({'relations': []}) }}
  {%- endif -%}
  {%- set source = load_cached_relation(defer_relation) -%}
  {%- if source is none -%}
    {{ exceptions.raise_compiler_error("ducklake: dbt clone of " ~ model.unique_id ~ ": " ~ defer_relation.render() ~ " (from the state) is not in this lake; clone reads the state's relations through views, so both targets must use the same lake") }}
  {%- endif -%}
  {%- set target_relation = this.incorporate(type='view') -%}
  {%- if source.is_view -%}
    {%- set pinned = none -%}
    {%- set clone_sql = 'select * from ' ~ defer_relation.render() -%}
  {%- else -%}
    {%- set pinned = adapter.latest_snapshot_id() -%}
    {%- set clone_sql = 'select * from ' ~ defer_relation.render() ~ ' VERSION AS OF ' ~ pinned -%}
  {%- endif -%}
  {%- do adapter.set_commit_context(model, 'clone', config.get('commit_message'),
        {'clone_of': defer_relation.render(), 'clone_snapshot': pinned,
         'state': invocation_args_dict.get('state') or invocation_args_dict.get('defer_state')}) -%}
  {% call statement('main') -%}
    {{ ducklake__node_sql(existing_relation, target_relation, get_create_view_as_sql(target_relation, clone_sql)) }}
  {%- endcall %}
  {{ adapter.clear_commit_context() }}
  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
