"""`SELECT *, count(*) … GROUP BY 1, 2`: Spark refuses a star in a select list grouped by
ordinal positions (STAR_GROUP_BY_POS); dbt packages write it (`dbt_utils.group_by`) and
DuckDB, PostgreSQL and the warehouses accept it. The star is replaced by the columns it
stands for, which sqlglot resolves from the relations' columns, so Spark runs the query
the package meant. Nothing else in the statement changes.
"""

from __future__ import annotations

import re

from sqlglot import exp

from .view_types import Columns, resolved_copy

_MARK = "ducklake_select"
_HINT = re.compile(r"\bGROUP\s+BY\s+\d", re.IGNORECASE)


def may_need_expansion(text: str) -> bool:
    """A cheap test on the text before anything is parsed."""
    return "*" in text and _HINT.search(text) is not None


def stars_with_ordinals(tree: exp.Expression) -> list[exp.Select]:
    """The SELECTs Spark refuses: a star next to GROUP BY positions."""
    found = []
    for select in tree.find_all(exp.Select):
        group = select.args.get("group")
        if group is None or not any(_is_ordinal(e) for e in group.expressions):
            continue
        if any(_is_star(e) for e in select.expressions):
            found.append(select)
    return found


def expand_stars(tree: exp.Expression, columns: Columns, default_schema: str) -> bool:
    """Replace, in place, the star of each SELECT Spark refuses by its columns; False
    when a star cannot be resolved (Spark then reports its own error)."""
    targets = stars_with_ordinals(tree)
    for n, select in enumerate(targets):
        select.meta[_MARK] = n
    resolved = resolved_copy(tree, columns, default_schema)
    if resolved is None:
        return False
    expanded = {s.meta[_MARK]: s for s in resolved.find_all(exp.Select) if _MARK in s.meta}
    for n, select in enumerate(targets):
        if n not in expanded or not _splice(select, expanded[n]):
            return False
    return True


def _splice(select: exp.Select, resolved: exp.Select) -> bool:
    stars = [i for i, e in enumerate(select.expressions) if _is_star(e)]
    if len(stars) != 1:
        return False  # several stars: where each one's columns end is not known here
    (at,) = stars
    count = len(resolved.expressions) - len(select.expressions) + 1
    if count < 1:
        return False
    star = select.expressions[at]
    qualifier = star.table if isinstance(star, exp.Column) else ""
    names = [e.alias_or_name for e in resolved.expressions[at : at + count]]
    replacement = [exp.column(name, table=qualifier or None, quoted=True) for name in names]
    select.set("expressions", select.expressions[:at] + replacement + select.expressions[at + 1 :])
    return True


def _is_ordinal(node: exp.Expression) -> bool:
    return isinstance(node, exp.Literal) and node.is_int


def _is_star(node: exp.Expression) -> bool:
    return isinstance(node, exp.Star) or (
        isinstance(node, exp.Column) and isinstance(node.this, exp.Star)
    )
