-- the marts agree: total revenue per customer equals total revenue per day
select 1
from (select sum(revenue) as r from {{ ref('customer_revenue') }}) a
cross join (select sum(revenue) as r from {{ ref('daily_revenue') }}) b
where a.r <> b.r
