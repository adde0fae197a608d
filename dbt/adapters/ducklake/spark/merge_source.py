"""What the driver MERGE (driver_merge) asks of its source: per WHEN clause its condition
and the value of every target column, computed by Spark over the source alone, and where
each sits in a row brought to the driver."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from operator import itemgetter
from typing import Any, Protocol

import sqlglot
from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from sqlglot import exp

from ..lake import Column
from .few_changes import ROW_ID
from .held_rows import held_rows
from .types import spark_type

__all__ = [
    "Asked",
    "Clause",
    "Layout",
    "asked_of",
    "fields_of",
    "layout_of",
    "quoted",
    "source_rows",
]

Rows = list[tuple[Any, ...]]


class Clause(Protocol):
    """A WHEN clause as `merge.When` holds it."""

    @property
    def kind(self) -> str: ...
    @property
    def action(self) -> str: ...
    @property
    def condition(self) -> str | None: ...
    @property
    def values(self) -> Mapping[str, str] | None: ...


Layout = list[tuple[int | None, tuple[int, int]]]


def quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


Asked = list[tuple[str, str, SparkColumn]]  # (what it computes, its name, the column)


def asked_of(
    clauses: Sequence[Clause],
    columns: Sequence[Column],
    keys: Sequence[tuple[str, str]],
    aliases: tuple[str, str],
) -> Asked | None:
    """Per clause: its condition (NULL as false) and, for UPDATE and INSERT, the value of
    every target column, over the source alone; None when one reads the target. A key
    an UPDATE leaves as it was equals its source key (ON says so), cast to its type."""
    t_alias, s_alias = aliases
    out: Asked = []
    names = {c.name.lower() for c in columns}
    source_key = {t.lower(): s for t, s in keys}
    for i, clause in enumerate(clauses):
        if clause.condition is not None:
            if not _source_only(clause.condition, s_alias, t_alias):
                return None
            condition = F.coalesce(F.expr(clause.condition), F.lit(False))
            out.append((f"if {clause.condition}", f"__c{i}", condition))
        if clause.action == "delete":
            continue
        given = {k.lower(): v for k, v in (clause.values or {}).items()}
        if set(given) - names:
            return None  # Spark's path names the unknown column
        for k, column in enumerate(columns):
            name = column.name.lower()
            if clause.values is None:
                value, what = F.col(f"{quoted(s_alias)}.{quoted(column.name)}"), f"`{column.name}`"
            elif name in given:
                if not _source_only(given[name], s_alias, t_alias):
                    return None
                value, what = F.expr(given[name]), given[name]
            elif clause.action == "update" and name in source_key:
                source = source_key[name]
                value, what = F.col(f"{quoted(s_alias)}.{quoted(source)}"), f"`{source}`"
            elif clause.action == "update":
                return None  # the row keeps a target value the driver did not read
            else:
                value, what = F.lit(None), "null"
            kind = spark_type(column)
            out.append((f"{what} as {kind.simpleString()}", f"__v{i}_{k}", value.cast(kind)))
    return out


def source_rows(
    spark: SparkSession,
    source: DataFrame,
    keys: Sequence[tuple[str, str]],
    asked: Asked,
    s_alias: str,
    limit: int,
) -> tuple[Rows, list[T.StructField]] | None:
    """The source's rows as (keys, then every asked column) and their fields, or None
    when there are more than `limit`; values asked twice are computed and brought here once."""
    wanted = [
        F.col(f"{quoted(s_alias)}.{quoted(s)}").alias(f"__k{i}") for i, (_, s) in enumerate(keys)
    ]
    distinct, spread = _distinct(len(wanted), asked)
    selected = source.alias(s_alias).select(*wanted, *distinct)
    rows = held_rows(spark, selected, limit)
    if rows is None:
        return None
    collected = spread(selected.schema.fields)
    fields = [
        *collected[: len(keys)],
        *(
            T.StructField(name, f.dataType, f.nullable)
            for f, (_, name, _) in zip(collected[len(keys) :], asked, strict=True)
        ),
    ]
    return [spread(r) for r in rows], fields


def _distinct(
    n_keys: int, asked: Asked
) -> tuple[list[SparkColumn], Callable[[Sequence[Any]], tuple[Any, ...]]]:
    """The asked columns computing what no earlier one does (an UPDATE and an INSERT of
    the same source row ask for its values twice: collected once), and how a row of the
    keys and those becomes a row of the keys and every asked column."""
    at: dict[str, int] = {}
    distinct: list[SparkColumn] = []
    for what, name, column in asked:
        if what not in at:
            at[what] = n_keys + len(distinct)
            distinct.append(column.alias(name))
    order = [*range(n_keys), *(at[what] for what, _, _ in asked)]
    if len(order) == 1:  # itemgetter of one item gives the item, not a tuple
        return distinct, lambda row: (row[0],)
    return distinct, itemgetter(*order)


# `[NOT] alias.column`: how dbt's MERGE macros spell most values and conditions
_QUALIFIED = re.compile(
    r"\s*(?:not\s+)?(`[^`]+`|[a-z_]\w*)\s*\.\s*(?:`[^`]+`|[a-z_]\w*)\s*", re.IGNORECASE
)


@functools.lru_cache(maxsize=1024)
def _source_only(text: str, s_alias: str, t_alias: str) -> bool:
    """Whether a Spark SQL expression reads only columns qualified by the source's
    alias (and no subquery). A qualified column, maybe negated, is told without a parse
    (~0.7 ms each, a dozen per MERGE)."""
    if (simple := _QUALIFIED.fullmatch(text)) is not None:
        alias = simple.group(1).strip("`").lower()
        return alias == s_alias.lower() and alias != t_alias.lower()
    try:
        tree = sqlglot.parse_one(text, read="spark")
    except sqlglot.errors.SqlglotError:
        return False
    if tree is None or any(True for _ in tree.find_all(exp.Select, exp.Subquery)):
        return False
    for column in tree.find_all(exp.Column):
        parts = [p.name.lower() for p in column.parts]
        if len(parts) != 2 or parts[0] != s_alias.lower() or parts[0] == t_alias.lower():
            return False
    return True


def fields_of(
    fields: Sequence[T.StructField], clauses: Sequence[Clause], action: str
) -> list[T.StructField]:
    """The new rows' fields: the first `action` clause's values (every clause gives
    every column, cast to its type), then an updated row's row id."""
    for i, clause in enumerate(clauses):
        if clause.action == action:
            values = [f for f in fields if f.name.startswith(f"__v{i}_")]
            moved = [T.StructField(ROW_ID, T.LongType(), False)] if action == "update" else []
            return values + moved
    return []


def layout_of(clauses: Sequence[Clause], n_keys: int, width: int) -> Layout:
    """Per clause: where its condition is in a collected row (None: none) and its
    `width` values (start, end), as `asked_of` lays them out after the keys."""
    out: Layout = []
    at = n_keys
    for clause in clauses:
        condition = None
        if clause.condition is not None:
            condition, at = at, at + 1
        span = (at, at)
        if clause.action != "delete":
            span, at = (at, at + width), at + width
        out.append((condition, span))
    return out
