{#- Every materialization starts here: the node's names are checked, then every
    snapshot it writes names the run: author (profile), a commit message
    (config `commit_message` overrides the default) and JSON extra info. -#}
{% macro ducklake__set_commit_context(action) -%}
  {%- do adapter.check_node(model) -%}
  {%- do adapter.set_commit_context(model, action, config.get('commit_message'),
                                    adapter.consumed_changes(model, action)) -%}
{%- endmacro %}
