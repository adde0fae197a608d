{#- Every materialization starts here: the node's names are checked, then every
    snapshot it writes names the run: author (profile), a commit message
    (config `commit_message` overrides the default) and JSON extra info; a snapshot
    that writes the model's rows (`writes_rows`) also records the change-feed
    positions its SQL read. -#}
{% macro ducklake__set_commit_context(action, writes_rows=true) -%}
  {%- do adapter.check_node(model) -%}
  {%- set consumed = adapter.consumed_changes(model) if writes_rows else {} -%}
  {%- do adapter.set_commit_context(model, action, config.get('commit_message'), consumed) -%}
{%- endmacro %}
