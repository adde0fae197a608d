"""What DuckDB type an already translated operand evidently has, where its text shows it.

Some Spark casts become a DuckDB CASE over `typeof(x)` (`duckdb_views`), which names `x`
several times. Nested, such casts copied their operand's text again at every level: a
`dbt_utils.last_day` view grew from 22 KB of Spark SQL to 2.9 MB of DuckDB text and took
15 s to translate. Where the operand's DuckDB type is evident (a CAST, arithmetic of
numbers, a cast this translation wrote itself), the CASE's branch is chosen here instead,
so the text stays linear in the Spark text and DuckDB still takes the branch it would
have taken itself.
"""

from __future__ import annotations

from typing import Literal

from sqlglot import exp

Kind = Literal["exact", "float", "text", "timestamptz", "plain", "non_numeric"]

_KIND = "ducklake_duckdb_kind"  # meta of a node this translation wrote: its DuckDB kind

_T = exp.DataType.Type
_BY_TYPE: dict[object, Kind] = {
    # typeof() of these is among the numbers `_AS_TIMESTAMP` tests for
    **dict.fromkeys((_T.TINYINT, _T.SMALLINT, _T.INT, _T.BIGINT, _T.DECIMAL), "exact"),
    **dict.fromkeys((_T.FLOAT, _T.DOUBLE), "float"),
    **dict.fromkeys((_T.TEXT, _T.VARCHAR), "text"),
    **dict.fromkeys((_T.TIMESTAMPTZ, _T.TIMESTAMPLTZ), "timestamptz"),
    # written by CAST(x AS VARCHAR) alone in `_AS_TEXT`, no number in `_AS_TIMESTAMP`
    **dict.fromkeys((_T.DATE, _T.TIMESTAMP, _T.BOOLEAN), "plain"),
}


def mark(node: exp.Expression, kind: Kind) -> exp.Expression:
    """Record the DuckDB kind of a node this translation wrote."""
    node.meta[_KIND] = kind
    return node


def duckdb_kind(node: exp.Expression) -> Kind | None:
    """The DuckDB kind of a translated operand, None where its text does not show it."""
    while isinstance(node, exp.Paren):
        node = node.this
    known: Kind | None = node.meta.get(_KIND)
    if known is not None:
        return known
    if isinstance(node, exp.Cast):  # TRY_CAST too: the same type, or NULL
        return _BY_TYPE.get(node.args["to"].this)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return "text"
        return "float" if "e" in node.this.lower() else "exact"
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul)):
        sides = {duckdb_kind(node.this), duckdb_kind(node.expression)}
        if sides == {"exact"}:
            return "exact"
        if sides <= {"exact", "float"}:
            return "float"
        return None
    if isinstance(node, (exp.TimestampTrunc, exp.DateTrunc, exp.CurrentTimestamp)):
        return "non_numeric"  # a date or a timestamp, with or without a time zone
    return None
