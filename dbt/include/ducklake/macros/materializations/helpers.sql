{#- The statements of one node build, committed as one DuckLake snapshot: a relation of
    the other kind with the same name is dropped, the new one created, and its docs
    (persist_docs) written as DuckLake comments — all in one transaction. -#}
{% macro ducklake__node_sql(existing_relation, target_relation, create_sql, column_names=none) -%}
  {%- set statements = [] -%}
  {%- if existing_relation is not none and existing_relation.type != target_relation.type -%}
    {%- do statements.append('drop ' ~ existing_relation.type ~ ' ' ~ existing_relation) -%}
  {%- endif -%}
  {%- do statements.append(create_sql) -%}
  {%- do statements.extend(ducklake__docs_statements(target_relation, column_names)) -%}
  {%- if statements | length == 1 -%}
    {{ statements[0] }}
  {%- else -%}
    begin;
    {% for s in statements %}{{ s }};
    {% endfor %}commit
  {%- endif -%}
{%- endmacro %}

{#- COMMENT ON statements for persist_docs; `column_names` are the relation's columns.
    DuckLake has no column comments on views (DuckDB refuses them too), so a view gets
    its relation comment only. -#}
{% macro ducklake__docs_statements(relation, column_names, current=none) -%}
  {#- `current`: the comments the table has ({'': table comment, column: comment});
      given on incremental runs, only comments that changed are written -#}
  {%- set out = [] -%}
  {%- set have = current or {} -%}
  {%- set kind = 'view' if relation.type == 'view' else 'table' -%}
  {%- if config.persist_relation_docs() and model.description and (current is none or have.get('') != model.description) -%}
    {%- do out.append('comment on ' ~ kind ~ ' ' ~ relation ~ ' is ' ~ ducklake__comment_literal(model.description)) -%}
  {%- endif -%}
  {%- if config.persist_column_docs() and model.columns and kind == 'table' -%}
    {#- warns about documented columns the table lacks, and leaves them out -#}
    {%- set present = validate_doc_columns(relation, model.columns, column_names or []) -%}
    {%- for name, column in present.items() if column.description and (current is none or have.get(name | lower) != column.description) -%}
      {%- do out.append('comment on column ' ~ relation ~ '.' ~ adapter.quote(name) ~ ' is ' ~ ducklake__comment_literal(column.description)) -%}
    {%- endfor -%}
  {%- endif -%}
  {{ return(out) }}
{%- endmacro %}

{#- Names of the columns a query returns (Spark analyses it; nothing runs). -#}
{% macro ducklake__query_columns(sql) -%}
  {%- if config.persist_column_docs() and model.columns -%}
    {{ return(get_columns_in_query(sql)) }}
  {%- endif -%}
  {{ return([]) }}
{%- endmacro %}

{#- A node's hooks as dbt runs them: `transaction: false` ones (before_begin,
    after_commit) outside the node's transaction, the others inside it. Pre-hooks commit
    before the node builds. When post-hooks run inside the transaction, the node builds
    into a staging copy of the catalog where each statement sees the ones before, and
    dbt's commit publishes it with its post-hooks as one snapshot: a failing post-hook
    publishes nothing of the node (staged_node.py). -#}
{% macro ducklake__start_node() -%}
  {{ run_hooks(pre_hooks, inside_transaction=False) }}
  {{ run_hooks(pre_hooks) }}
  {{ ducklake__stage_for_post_hooks() }}
{%- endmacro %}

{% macro ducklake__stage_for_post_hooks() -%}
  {%- if post_hooks | selectattr('transaction') | list | length > 0 -%}
    {%- do adapter.stage_node() -%}
  {%- endif -%}
{%- endmacro %}

{% macro ducklake__finish_node(target_relation) -%}
  {{ run_hooks(post_hooks) }}
  {%- do adapter.commit() -%}
  {{ adapter.clear_commit_context() }}
  {{ run_hooks(post_hooks, inside_transaction=False) }}
{%- endmacro %}

{#- A Python model's result lives in a Spark temporary view until its rows are written -#}
{% macro ducklake__drop_python_view() -%}
  {%- if model.language == 'python' -%}
    {% call statement('drop_python_view') -%}
      drop view if exists {{ adapter.python_view(this) }}
    {%- endcall %}
  {%- endif -%}
{%- endmacro %}
