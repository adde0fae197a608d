select customer_id, name, upper(country) as country, tier
from {{ ref('customers') }}
