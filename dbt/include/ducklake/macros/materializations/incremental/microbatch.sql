{#- Each batch replaces its event_time window in one snapshot. -#}
{% macro ducklake__get_incremental_microbatch_sql(arg_dict) -%}
  {%- set event_time = config.get('event_time') -%}
  begin;
  delete from {{ arg_dict['target_relation'] }}
  where {{ event_time }} >= timestamp '{{ model.batch.event_time_start }}'
    and {{ event_time }} < timestamp '{{ model.batch.event_time_end }}'
  {{- ducklake__predicates_sql(arg_dict['incremental_predicates']) }};
  {{ ducklake__get_incremental_append_sql(arg_dict) }};
  commit
{%- endmacro %}
