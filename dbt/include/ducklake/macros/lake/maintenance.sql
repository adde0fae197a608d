{#- DuckLake maintenance with DuckDB's names and parameters, for run-operation and hooks.
    Each runs as a `CALL` in lake SQL (its data work as Spark jobs), logs the rows DuckDB's
    function returns and renders nothing, so the same call works in a post-hook:
      dbt run-operation ducklake_merge_adjacent_files --args '{relation: shop.events}'
      dbt run-operation ducklake_expire_snapshots --args '{older_than: "7 days", dry_run: true}'
      post_hook: "{{ ducklake_merge_adjacent_files(this, every_n_builds=10) }}"
    `relation` is a relation or 'schema.name'; `older_than` is an age ('7 days') or a
    timestamp ('2026-01-01 00:00:00'). -#}
{% macro ducklake_merge_adjacent_files(relation=none, schema=none, max_compacted_files=none, min_file_size=none, max_file_size=none, every_n_builds=none) -%}
  {%- if execute and every_n_builds is not none and relation is not none -%}
    {%- set builds = adapter.builds_since_compaction(relation) -%}
    {%- if builds < every_n_builds | int -%}
      {{ log('ducklake_merge_adjacent_files: ' ~ relation ~ ' has ' ~ builds ~ ' build(s) since its last compaction; compacting every ' ~ every_n_builds, info=true) }}
      {{ return('') }}
    {%- endif -%}
  {%- endif -%}
  {{ return(ducklake__call('ducklake_merge_adjacent_files', relation, {'schema': schema, 'max_compacted_files': max_compacted_files, 'min_file_size': min_file_size, 'max_file_size': max_file_size})) }}
{%- endmacro %}

{% macro ducklake_rewrite_data_files(relation=none, schema=none, delete_threshold=none) -%}
  {{ return(ducklake__call('ducklake_rewrite_data_files', relation, {'schema': schema, 'delete_threshold': delete_threshold})) }}
{%- endmacro %}

{% macro ducklake_flush_inlined_data(relation=none, schema=none) -%}
  {%- set parts = ducklake__relation_parts(relation) -%}
  {{ return(ducklake__call('ducklake_flush_inlined_data', none, {'schema_name': parts[0] if relation is not none else schema, 'table_name': parts[1]})) }}
{%- endmacro %}

{% macro ducklake_expire_snapshots(versions=none, older_than=none, dry_run=false) -%}
  {{ return(ducklake__call('ducklake_expire_snapshots', none, {'versions': versions, 'older_than': older_than, 'dry_run': dry_run})) }}
{%- endmacro %}

{% macro ducklake_cleanup_old_files(older_than=none, cleanup_all=false, dry_run=false) -%}
  {{ return(ducklake__call('ducklake_cleanup_old_files', none, {'older_than': older_than, 'cleanup_all': cleanup_all, 'dry_run': dry_run})) }}
{%- endmacro %}

{% macro ducklake_delete_orphaned_files(older_than=none, cleanup_all=false, dry_run=false) -%}
  {{ return(ducklake__call('ducklake_delete_orphaned_files', none, {'older_than': older_than, 'cleanup_all': cleanup_all, 'dry_run': dry_run})) }}
{%- endmacro %}

{#- flush, expire, merge, rewrite, cleanup, orphans: DuckDB's CHECKPOINT, with the lake's
    options (expire_older_than, delete_older_than, rewrite_delete_threshold, auto_compact) -#}
{% macro ducklake_checkpoint() -%}
  {%- if execute and adapter.defer_call('ducklake_checkpoint', 'checkpoint') -%}
    {{ log('ducklake_checkpoint: runs once the node is published', info=true) }}
  {%- elif execute -%}
    {%- do run_query('checkpoint') -%}
    {{ log('ducklake_checkpoint: done', info=true) }}
  {%- endif -%}
  {{ return('') }}
{%- endmacro %}

{% macro ducklake__relation_parts(relation) -%}
  {%- if relation is none -%}
    {{ return([none, none]) }}
  {%- elif relation is string -%}
    {%- set pieces = relation.split('.') -%}
    {{ return([pieces[-2] if pieces | length > 1 else target.schema, pieces[-1]]) }}
  {%- else -%}
    {{ return([relation.schema, relation.identifier]) }}
  {%- endif -%}
{%- endmacro %}

{% macro ducklake__call(function, relation, named) -%}
  {%- set args = ["'lake'"] -%}
  {%- if relation is not none -%}
    {%- set parts = ducklake__relation_parts(relation) -%}
    {%- do args.append(ducklake__call_value(parts[1])) -%}
    {%- do named.update({'schema': parts[0]}) -%}
  {%- endif -%}
  {%- for key, value in named.items() if value is not none -%}
    {%- if key == 'older_than' -%}
      {%- do args.append(key ~ ' => ' ~ ducklake__call_time(value)) -%}
    {%- else -%}
      {%- do args.append(key ~ ' => ' ~ ducklake__call_value(value)) -%}
    {%- endif -%}
  {%- endfor -%}
  {%- set statement = 'call ' ~ function ~ '(' ~ args | join(', ') ~ ')' -%}
  {%- if execute and adapter.defer_call(function, statement) -%}
    {#- a post-hook of a node staged for its transaction: runs once it is published -#}
    {{ log(function ~ ': runs once the node is published', info=true) }}
  {%- elif execute -%}
    {%- set result = run_query(statement) -%}
    {{ log(function ~ ': ' ~ (result.rows | length) ~ ' row(s)', info=true) }}
    {%- for row in result.rows -%}
      {{ log('  ' ~ row.values() | join('  '), info=true) }}
    {%- endfor -%}
  {%- endif -%}
  {{ return('') }}
{%- endmacro %}

{% macro ducklake__call_value(value) -%}
  {%- if value is sameas true or value is sameas false -%}
    {{ return(value | string | lower) }}
  {%- elif value is number -%}
    {{ return(value | string) }}
  {%- elif value is string -%}
    {{ return("'" ~ value | replace("'", "''") ~ "'") }}
  {%- else -%}
    {%- set items = [] -%}
    {%- for v in value -%}{%- do items.append(ducklake__call_value(v)) -%}{%- endfor -%}
    {{ return('[' ~ items | join(', ') ~ ']') }}
  {%- endif -%}
{%- endmacro %}

{% macro ducklake__call_time(value) -%}
  {%- set quoted = value | string | replace("'", "''") -%}
  {%- if modules.re.match('^\\d{4}-\\d{2}-\\d{2}', value | string) -%}
    {{ return("timestamp '" ~ quoted ~ "'") }}
  {%- else -%}
    {{ return("now() - interval '" ~ quoted ~ "'") }}
  {%- endif -%}
{%- endmacro %}
