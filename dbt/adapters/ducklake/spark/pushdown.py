"""Filters of a query that may prune a lake table's files before Spark reads them.

Only what is certainly about the table is taken: top-level AND terms of the WHERE of
the SELECT that reads the table as its only source (no joins, so no outer-join NULL
rows to get wrong), each `column op literal` on one of its top-level columns, with a
literal of the column's kind. Spark still applies the whole WHERE to the rows read.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from sqlglot import exp

from ..lake import FLOAT_TYPES, INTEGER_TYPES, is_decimal
from .prune import Predicate, coerce_value

_COMPARISONS: dict[type[exp.Expression], str] = {
    exp.EQ: "=",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.GT: ">",
    exp.GTE: ">=",
}
_FLIPPED = {"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def pushed_predicates(table: exp.Table, column_types: dict[str, str]) -> list[Predicate]:
    """`column_types`: the table's top-level columns (lower-cased) -> DuckLake type."""
    select = table.parent.parent if isinstance(table.parent, exp.From) else None
    if not isinstance(select, exp.Select) or select.args.get("joins"):
        return []
    where = select.args.get("where")
    if where is None:
        return []
    names = {table.alias_or_name.lower(), table.name.lower()}
    out = []
    for term in _conjuncts(where.this):
        predicate = _predicate(term, names, column_types)
        if predicate is not None:
            out.append(predicate)
    return out


def _conjuncts(node: Any) -> list[exp.Expression]:
    if isinstance(node, exp.And):
        return _conjuncts(node.left) + _conjuncts(node.right)
    if isinstance(node, exp.Paren):
        return _conjuncts(node.this)
    return [node]


def _predicate(term: exp.Expression, names: set[str], types: dict[str, str]) -> Predicate | None:
    if isinstance(term, exp.Binary) and type(term) in _COMPARISONS:
        op = _COMPARISONS[type(term)]
        left, right = term.left, term.right
        if not isinstance(left, exp.Column):
            left, right, op = right, left, _FLIPPED[op]
        column = _column(left, names, types)
        value = _literal(right, types.get(column or ""))
        return Predicate(column, op, value) if column and value is not None else None
    if isinstance(term, exp.Between):
        column = _column(term.this, names, types)
        low = _literal(term.args.get("low"), types.get(column or ""))
        high = _literal(term.args.get("high"), types.get(column or ""))
        if column and low is not None and high is not None:
            return Predicate(column, "between", (low, high))
        return None
    if isinstance(term, exp.In) and not term.args.get("query"):
        column = _column(term.this, names, types)
        values = [_literal(v, types.get(column or "")) for v in term.expressions]
        if column and values and all(v is not None for v in values):
            return Predicate(column, "in", values)
        return None
    if isinstance(term, exp.Is) and isinstance(term.expression, exp.Null):
        column = _column(term.this, names, types)
        return Predicate(column, "is_null") if column else None
    if isinstance(term, exp.Not) and isinstance(term.this, exp.Is):
        inner = term.this
        if isinstance(inner.expression, exp.Null):
            column = _column(inner.this, names, types)
            return Predicate(column, "is_not_null") if column else None
    return None


def _column(node: Any, names: set[str], types: dict[str, str]) -> str | None:
    if not isinstance(node, exp.Column) or node.args.get("db") or node.args.get("catalog"):
        return None
    if node.table and node.table.lower() not in names:
        return None
    name = node.name.lower()
    return name if name in types and types[name] != "timestamptz" else None


def _literal(node: Any, type_name: str | None) -> Any:
    """The literal's value when it is of the column's kind, else None (not pushed)."""
    if type_name is None:
        return None
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal):
        node = node.this  # DATE '2024-01-01', CAST('…' AS TIMESTAMP)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        value = _literal(node.this, type_name)
        return -value if isinstance(value, int | float) else None
    if not isinstance(node, exp.Literal):
        return None
    if node.is_string:
        return _text_value(node.this, type_name)
    text = node.this
    if type_name in INTEGER_TYPES:
        return int(text) if text.lstrip("-").isdigit() else None  # 1.5 is not an int
    if type_name in FLOAT_TYPES or is_decimal(type_name):
        try:
            return float(text) if type_name in FLOAT_TYPES else Decimal(text)
        except (ValueError, ArithmeticError):
            return None
    return None


def _text_value(text: str, type_name: str) -> Any:
    """A string literal for a VARCHAR, DATE or TIMESTAMP column, when it reads the same
    way here as in Spark (ISO dates and times only, as the pruning parses them)."""
    if type_name == "varchar":
        return text
    if type_name not in ("date", "timestamp"):
        return None
    try:
        coerce_value(type_name, text)
    except ValueError:
        return None
    return text
