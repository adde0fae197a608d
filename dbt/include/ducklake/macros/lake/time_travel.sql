{#- Time travel and the change feed, usable wherever a relation goes in model SQL
    (adapter macros are global in dbt, hence the ducklake_ prefix rather than a
    `ducklake.` namespace, which dbt gives installed packages only):
      select * from {{ ducklake_at(ref('orders'), version=12) }}
      select * from {{ ducklake_at(ref('orders'), invocation_id='…') }}  -- as that dbt run left it
      select * from {{ ducklake_table_changes(ref('orders'), 10, 12) }}
    Change-feed bounds are snapshot ids, timestamps as SQL (timestamp '2026-01-01') or any
    SQL expression. -#}
{% macro ducklake_at(relation, version=none, timestamp=none, invocation_id=none) -%}
  {%- set given = [version, timestamp, invocation_id] | reject('none') | list -%}
  {%- if given | length != 1 -%}
    {{ exceptions.raise_compiler_error("ducklake_at(" ~ relation ~ "): give exactly one of version, timestamp, invocation_id") }}
  {%- endif -%}
  {%- if invocation_id is not none -%}
    {%- set version = adapter.snapshot_of_run(relation, invocation_id) if execute else 0 -%}
  {%- endif -%}
  {#- the table's own name: under --empty a ref renders as an empty subquery -#}
  {%- set name = relation.render() if relation.render is defined else relation -%}
  {%- if version is not none -%}
    {%- set at = name ~ ' VERSION AS OF ' ~ (version | int) -%}
  {%- else -%}
    {#- a quote in the value stays inside the literal; the engine reads it as a timestamp -#}
    {%- set at = name ~ " TIMESTAMP AS OF '" ~ (timestamp | string | replace("'", "''")) ~ "'" -%}
  {%- endif -%}
  {%- if relation.limit is defined and relation.limit is not none -%}
    (select * from {{ at }} limit {{ relation.limit }})
  {%- else -%}
    {{ at }}
  {%- endif -%}
{%- endmacro %}

{% macro ducklake_table_changes(relation, start_snapshot, end_snapshot) -%}
  table_changes('{{ relation.schema }}.{{ relation.identifier }}', {{ start_snapshot }}, {{ end_snapshot }})
{%- endmacro %}

{#- An upstream's changes since this model's last build, in table_changes' columns
    (snapshot_id, rowid, change_type, then the table's), up to the snapshot current when
    the model compiles. The first build, a full refresh, or a build with no record for
    this upstream reads every current row as an `insert`. The position read is written
    into the snapshot that writes the model's rows, so a failed build consumes nothing.
    incremental_strategy='apply_changes' applies such rows by unique_key. -#}
{% macro ducklake_changes_since_last_build(relation) -%}
  {%- if not execute -%}
    {{- return(ducklake_table_changes(relation, 0, 0)) -}}
  {%- endif -%}
  {%- set window = adapter.changes_since_last_build(model, relation, is_incremental()) -%}
  {%- set name = relation.schema ~ '.' ~ relation.identifier -%}
  {%- if window.mode == 'changes' -%}
    table_changes('{{ name }}', {{ window.start }}, {{ window.end }})
  {%- elif window.mode == 'none' -%}
    (select * from table_changes('{{ name }}', {{ window.end }}, {{ window.end }}) where false)
  {%- else -%}
    ducklake_table_rows('{{ name }}', {{ window.end }})
  {%- endif -%}
{%- endmacro %}

{% macro ducklake_table_insertions(relation, start_snapshot, end_snapshot) -%}
  table_insertions('{{ relation.schema }}.{{ relation.identifier }}', {{ start_snapshot }}, {{ end_snapshot }})
{%- endmacro %}

{% macro ducklake_table_deletions(relation, start_snapshot, end_snapshot) -%}
  table_deletions('{{ relation.schema }}.{{ relation.identifier }}', {{ start_snapshot }}, {{ end_snapshot }})
{%- endmacro %}

{#- dbt run-operation ducklake_snapshots --args '{relation: shop.orders}': the history
    of one relation (or of the whole lake): id, time, author, message, node. -#}
{% macro ducklake_snapshots(relation=none, limit=50) -%}
  {%- set rows = adapter.snapshot_history(relation, limit) -%}
  {%- for r in rows -%}
    {{ log(r.snapshot_id ~ '  ' ~ r.time ~ '  ' ~ (r.author or '-') ~ '  ' ~ (r.message or '-') ~ ('  [' ~ r.node ~ ']' if r.node else ''), info=true) }}
  {%- endfor -%}
  {{ return(rows) }}
{%- endmacro %}
