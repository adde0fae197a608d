{{ config(
    materialized='incremental',
    incremental_strategy='merge',
    unique_key='order_id',
    on_schema_change='append_new_columns',
    commit_message='orders: merge the new and changed orders'
) }}
select order_id, customer_id, amount, order_date, status
from {{ ref('stg_orders') }}
{% if is_incremental() %}
-- new orders, and orders not shipped yet last time (their status may have moved on)
where order_id > (select coalesce(max(order_id), 0) from {{ this }})
   or order_id in (select order_id from {{ this }} where status <> 'shipped')
{% endif %}
