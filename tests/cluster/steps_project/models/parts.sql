-- partitioned and sorted, merged in phase 2 and then compacted
{{ config(
    materialized='incremental',
    incremental_strategy='merge',
    unique_key='id',
    partition_by=['bucket(4, k)'],
    sorted_by=['v'],
    post_hook="{% if var('phase') | int == 2 %}{{ ducklake_merge_adjacent_files(this) }}{% endif %}"
) }}
select id, k, v, name from {{ ref('big') }}
{% if is_incremental() %}
where id between 50000 and 149999
{% else %}
where id < 100000
{% endif %}
