{#- Layout changes for hooks and run-operation, each one snapshot (altered_table):
      dbt run-operation ducklake_set_partitioned_by --args '{relation: shop.events, keys: ["month(ts)"]}'
      post_hook: "{{ ducklake_set_sorted_by(this, ['ts desc']) }}" -#}
{% macro ducklake_set_partitioned_by(relation, keys) -%}
  {{ ducklake__layout(relation, 'set partitioned by', keys) }}
{%- endmacro %}

{% macro ducklake_set_sorted_by(relation, keys) -%}
  {{ ducklake__layout(relation, 'set sorted by', keys) }}
{%- endmacro %}

{% macro ducklake_reset_partitioned_by(relation) -%}
  {{ ducklake__layout(relation, 'reset partitioned by', none) }}
{%- endmacro %}

{% macro ducklake_reset_sorted_by(relation) -%}
  {{ ducklake__layout(relation, 'reset sorted by', none) }}
{%- endmacro %}

{#- runs the ALTER itself (and renders nothing), so the same call works in a hook and
    in run-operation; checked only when it runs, so a bad key fails its own node (named
    by dbt), not the parse of the whole project -#}
{% macro ducklake__layout(relation, verb, keys) -%}
  {%- if execute -%}
    {%- do run_query(adapter.layout_statement(relation, verb, keys)) -%}
  {%- endif -%}
  {{ return('') }}
{%- endmacro %}

{#- DuckLake options, global or for a schema or a table (DuckDB's names):
      dbt run-operation ducklake_set_option --args '{option: parquet_compression, value: zstd, table_name: events}' -#}
{% macro ducklake_set_option(option, value, schema=none, table_name=none) -%}
  {%- if execute -%}
    {{ log('ducklake_set_option: ' ~ adapter.set_lake_option(option, value, schema, table_name), info=true) }}
  {%- endif -%}
  {{ return('') }}
{%- endmacro %}
