{% snapshot dims_snapshot %}
{{ config(unique_key='dim_id', strategy='check', check_cols=['tier'], target_schema='steps_history') }}
select * from {{ ref('dims') }}
{% endsnapshot %}
