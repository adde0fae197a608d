-- `rows` rows (1M by default; the tests pass their size), written by tasks on the executors
{{ config(materialized='table') }}
select id, cast(id % 100 as int) as k, id * 2 as v, concat('n', id) as name
from range({{ var("rows", 1000000) }})
