{{ config(materialized='table') }}
select cast(id as int) as dim_id,
       case when {{ var('phase') }} = 2 and id % 10 = 0 then 'gold' else 'basic' end as tier
from range(100)
