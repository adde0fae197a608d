-- phase 2: a 1% MERGE (0.5% updated, 0.5% new), then a 1% DELETE
{{ config(
    materialized='incremental',
    incremental_strategy='merge',
    unique_key='id',
    post_hook="{% if var('phase') | int == 2 %}delete from {{ this }} where id % 100 = 3{% endif %}"
) }}
{% if is_incremental() %}
select id, k, v + 1 as v, name from {{ ref('big') }} where id % 200 = 7
union all
select id, cast(id % 100 as int) as k, id * 2 as v, concat('new', id) as name
from range(1000000, 1005000)
{% else %}
select * from {{ ref('big') }}
{% endif %}
