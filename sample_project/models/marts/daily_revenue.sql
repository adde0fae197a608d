{{ config(
    materialized='incremental',
    incremental_strategy='insert_overwrite',
    partition_by=['month(order_date)'],
    sorted_by=['order_date']
) }}
-- laid out by month and sorted by day from the snapshot that creates it; each run
-- replaces only the months present in the new rows
select order_date, count(*) as orders, sum(amount) as revenue
from {{ ref('stg_orders') }}
group by order_date
