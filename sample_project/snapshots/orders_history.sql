{# Every version an order had in orders_incremental, read from its change feed (CDC):
   each build reads only what changed since the last one. #}
{% snapshot orders_history %}
{{ config(unique_key='order_id', strategy='changes', target_schema='shop_history') }}
select order_id, customer_id, amount, status from {{ ref('orders_incremental') }}
{% endsnapshot %}
