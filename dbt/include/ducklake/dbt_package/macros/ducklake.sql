{#- `ducklake.at(ref('m'), version=n)` and friends: thin names over the adapter's
    ducklake_* macros, so model SQL reads the way DuckLake's own functions do. -#}
{% macro at(relation, version=none, timestamp=none, invocation_id=none) -%}
  {{- ducklake_at(relation, version=version, timestamp=timestamp, invocation_id=invocation_id) -}}
{%- endmacro %}

{% macro table_changes(relation, start_snapshot, end_snapshot) -%}
  {{- ducklake_table_changes(relation, start_snapshot, end_snapshot) -}}
{%- endmacro %}

{% macro changes_since_last_build(relation) -%}
  {{- ducklake_changes_since_last_build(relation) -}}
{%- endmacro %}

{% macro table_insertions(relation, start_snapshot, end_snapshot) -%}
  {{- ducklake_table_insertions(relation, start_snapshot, end_snapshot) -}}
{%- endmacro %}

{% macro table_deletions(relation, start_snapshot, end_snapshot) -%}
  {{- ducklake_table_deletions(relation, start_snapshot, end_snapshot) -}}
{%- endmacro %}

{% macro snapshots(relation=none, limit=50) -%}
  {{- return(ducklake_snapshots(relation, limit)) -}}
{%- endmacro %}
