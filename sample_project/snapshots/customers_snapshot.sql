{% snapshot customers_snapshot %}
{{ config(unique_key='customer_id', strategy='check', check_cols=['country', 'tier'], target_schema='shop_history') }}
select customer_id, name, country, tier from {{ ref('stg_customers') }}
{% endsnapshot %}
