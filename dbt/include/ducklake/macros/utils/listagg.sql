{#- listagg with its order honoured (dbt-spark's version ignores it): Spark's
    `listagg(…) WITHIN GROUP (ORDER BY …)`, and for a limit the rows collected as
    (sort keys, value) structs, sorted by the same keys, sliced and joined. -#}
{% macro ducklake__listagg(measure, delimiter_text, order_by_clause, limit_num) -%}
  {%- if limit_num -%}
    {%- set keys = ducklake__order_keys(order_by_clause) -%}
    array_join(slice(transform(
      {%- if keys %}
      array_sort(collect_list(struct(
        {%- for k in keys %}{{ k.expr }} as k{{ loop.index }}, {% endfor %}{{ measure }} as v)),
        (l, r) -> {{ ducklake__compare_keys(keys, 0) }})
      {%- else %}
      collect_list(struct({{ measure }} as v))
      {%- endif %},
      x -> x.v), 1, {{ limit_num }}), {{ delimiter_text }})
  {%- else -%}
    listagg({{ measure }}, {{ delimiter_text }})
    {%- if order_by_clause %} within group ({{ order_by_clause }}){% endif -%}
  {%- endif -%}
{%- endmacro %}

{#- "order by a desc, b" -> [{expr: a, desc: true}, {expr: b, desc: false}] -#}
{% macro ducklake__order_keys(order_by_clause) -%}
  {%- set keys = [] -%}
  {%- if order_by_clause -%}
    {%- set body = modules.re.sub('(?i)^\\s*order\\s+by\\s+', '', order_by_clause) -%}
    {%- for part in body.split(',') -%}
      {%- set m = modules.re.match('(?is)^\\s*(.+?)(\\s+(asc|desc))?\\s*$', part) -%}
      {%- do keys.append({'expr': m.group(1), 'desc': (m.group(3) or '') | lower == 'desc'}) -%}
    {%- endfor -%}
  {%- endif -%}
  {{ return(keys) }}
{%- endmacro %}

{#- a comparator over the struct fields k1..kn: -1, 0, 1 (NULLs last) -#}
{% macro ducklake__compare_keys(keys, i) -%}
  {%- if i >= keys | length -%}0{%- else -%}
    {%- set f = 'k' ~ (i + 1) -%}
    {%- set before, after = ('1', '-1') if keys[i].desc else ('-1', '1') -%}
    case when l.{{ f }} is null and r.{{ f }} is null then {{ ducklake__compare_keys(keys, i + 1) }}
         when l.{{ f }} is null then 1 when r.{{ f }} is null then -1
         when l.{{ f }} < r.{{ f }} then {{ before }} when l.{{ f }} > r.{{ f }} then {{ after }}
         else {{ ducklake__compare_keys(keys, i + 1) }} end
  {%- endif -%}
{%- endmacro %}
