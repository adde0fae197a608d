{#- Each build is one DuckLake snapshot: the new rows are staged as a Spark temporary
    view, then one BEGIN … COMMIT block applies on_schema_change's column ALTERs
    (DuckLake ALTERs, no rewrite) and the strategy's statements together. -#}
{% materialization incremental, adapter='ducklake', supported_languages=['sql', 'python'] %}
  {%- set target_relation = this.incorporate(type='table') -%}
  {%- set existing_relation = load_cached_relation(this) -%}
  {%- set strategy = ducklake__validate_incremental(config) -%}
  {%- set on_schema_change = incremental_validate_on_schema_change(config.get('on_schema_change'), default='ignore') -%}
  {%- set full_refresh = existing_relation is none or existing_relation.is_view or should_full_refresh() -%}

  {{ ducklake__start_node() }}
  {%- set model_sql = compiled_code -%}
  {%- if model.language == 'python' -%}
    {#- model(dbt, session) runs here (dbt.is_incremental tells it which rows to return) -#}
    {% call statement('python_model', language='python') -%} {{ compiled_code }} {%- endcall %}
    {%- set model_sql = 'select * from ' ~ adapter.python_view(this) -%}
  {%- endif -%}
  {%- if strategy == 'apply_changes' and full_refresh -%}
    {%- set model_sql = ducklake__apply_changes_full_sql(model_sql) -%}
  {%- endif -%}
  {%- if full_refresh -%}
    {{ ducklake__set_commit_context('incremental ' ~ strategy ~ (' full refresh' if existing_relation is not none else ' create')) }}
    {%- set build_sql = ducklake__node_sql(existing_relation, target_relation,
          create_table_as(False, target_relation, model_sql), ducklake__query_columns(model_sql)) -%}
  {%- else -%}
    {%- set temp_relation = make_temp_relation(this) -%}
    {%- if strategy == 'apply_changes' -%}
      {%- set new_names = ducklake__stage_apply_changes(model_sql, temp_relation, on_schema_change) -%}
    {%- else -%}
      {% call statement('stage_new_rows') -%}
        {{ create_table_as(True, temp_relation, model_sql) }}
      {%- endcall %}
      {%- set new_names = adapter.get_columns_in_relation(temp_relation) | map(attribute='name') | list -%}
    {%- endif -%}
    {%- set layout_alters = adapter.layout_alters(existing_relation, model) -%}
    {%- if layout_alters -%}
      {#- the partition_by / sorted_by config changed: one altered_table snapshot;
          files already written keep their layout and stay readable -#}
      {{ ducklake__set_commit_context('incremental layout change', writes_rows=false) }}
      {% call statement('layout_change') -%}
        begin; {{ layout_alters | join('; ') }}; commit
      {%- endcall %}
    {%- endif -%}
    {{ ducklake__set_commit_context('incremental ' ~ strategy) }}
    {#- column ALTERs (on_schema_change) and the data change: one snapshot -#}
    {% call statement('begin_build') -%} begin {%- endcall %}
    {%- set dest_columns = process_schema_changes(on_schema_change, temp_relation, existing_relation) -%}
    {%- if not dest_columns -%}
      {%- set dest_columns = adapter.get_columns_in_relation(existing_relation) -%}
    {%- endif -%}
    {%- do adapter.check_unique_key(model, ducklake__unique_keys(config.get('unique_key')),
          {'the new rows': new_names, existing_relation ~ '': dest_columns | map(attribute='name') | list}) -%}
    {%- set strategy_macro = adapter.get_incremental_strategy_macro(context, strategy) -%}
    {%- set build_sql = strategy_macro({
          'target_relation': target_relation,
          'temp_relation': temp_relation,
          'unique_key': config.get('unique_key'),
          'dest_columns': dest_columns,
          'incremental_predicates': config.get('predicates') or config.get('incremental_predicates'),
        }) -%}
  {%- endif -%}

  {% call statement('main') -%}
    {{ build_sql }}
  {%- endcall %}
  {%- if not full_refresh -%}
    {#- persist_docs: comments that changed since the table was built, same snapshot -#}
    {%- set docs = ducklake__docs_statements(target_relation, dest_columns | map(attribute='name') | list,
                                             adapter.current_comments(target_relation)) -%}
    {%- if docs -%}
      {% call statement('persist_docs') -%} {{ docs | join(';\n') }} {%- endcall %}
    {%- endif -%}
    {% call statement('commit_build') -%} commit {%- endcall %}
  {%- endif %}

  {%- if not full_refresh -%}
    {#- apply_changes stages this view only for on_schema_change (apply_changes.sql) -#}
    {%- if strategy != 'apply_changes' or on_schema_change != 'ignore' -%}
    {% call statement('drop_staged_rows') -%}
      drop view if exists {{ temp_relation }}
    {%- endcall %}
    {%- endif -%}
    {%- if strategy == 'apply_changes' -%}
      {% call statement('drop_staged_changes') -%}
        drop view if exists {{ temp_relation.identifier }}__changes
      {%- endcall %}
      {% call statement('drop_staged_feed') -%}
        drop view if exists {{ temp_relation.identifier }}__feed
      {%- endcall %}
    {%- endif -%}
  {%- endif -%}
  {{ ducklake__drop_python_view() }}
  {{ ducklake__finish_node(target_relation) }}
  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}


{#- Configs are checked before any SQL runs. Strategies other than the built-in ones
    are user macros `get_incremental_<name>_sql`; dbt's lookup names the missing one. -#}
{% macro ducklake__validate_incremental(config) -%}
  {%- set strategy = config.get('incremental_strategy') or 'merge' -%}
  {%- do adapter.get_incremental_strategy_macro(context, strategy) -%}
  {%- set on_change = config.get('on_schema_change') or 'ignore' -%}
  {%- set accepted_changes = ['ignore', 'fail', 'append_new_columns', 'sync_all_columns'] -%}
  {%- if on_change not in accepted_changes -%}
    {{ exceptions.raise_compiler_error("ducklake: model " ~ this ~ ": on_schema_change '" ~ on_change ~ "' is not supported; accepted: " ~ accepted_changes | join(', ')) }}
  {%- endif -%}
  {%- do adapter.layout_clauses(model) -%}
  {%- if strategy == 'microbatch' and not config.get('event_time') -%}
    {{ exceptions.raise_compiler_error("ducklake: model " ~ this ~ ": incremental_strategy 'microbatch' needs config event_time") }}
  {%- endif -%}
  {{ return(strategy) }}
{%- endmacro %}

{#- helpers shared by the strategies -#}
{% macro ducklake__column_list(columns) -%}
  {%- for c in columns -%}{{ adapter.quote(c.name) }}{{ ', ' if not loop.last }}{%- endfor -%}
{%- endmacro %}

{% macro ducklake__unique_keys(unique_key) -%}
  {%- if unique_key is none -%}{{ return([]) }}{%- endif -%}
  {%- set keys = [unique_key] if unique_key is string else unique_key -%}
  {{ return(keys | map('trim') | reject('equalto', '') | unique | list) }}
{%- endmacro %}

{#- `predicates` is dbt's other name for incremental_predicates; one predicate may be
    given as a string -#}
{% macro ducklake__predicates_sql(incremental_predicates) -%}
  {%- set listed = [incremental_predicates] if incremental_predicates is string else (incremental_predicates or []) -%}
  {%- for p in listed %} and ({{ p }}){% endfor -%}
{%- endmacro %}
