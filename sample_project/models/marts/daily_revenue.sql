{{ config(materialized='incremental', incremental_strategy='insert_overwrite') }}
select order_date, count(*) as orders, sum(amount) as revenue
from {{ ref('stg_orders') }}
group by order_date
