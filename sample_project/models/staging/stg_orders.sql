select order_id, customer_id, amount, ordered_at, cast(ordered_at as date) as order_date, status
from {{ ref('orders') }}
where status <> 'returned'
