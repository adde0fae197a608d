"""What the driver MERGE (driver_merge) asks of its source: per WHEN clause its condition
and the value of every target column, computed by Spark over the source alone, and where
each sits in a row brought to the driver."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from operator import itemgetter
from typing import Any, Literal, NamedTuple, Protocol

import sqlglot
from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from sqlglot import exp

from ..lake import Column
from .few_changes import ROW_ID
from .held_rows import held_columns, held_rows
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


class Read(NamedTuple):
    """An asked column that is a source column as it is: a value (`kind`: its type,
    which the source column must have) or a condition (`kind` None: NULL as false,
    `negated`: NOT column)."""

    column: str
    kind: T.DataType | None
    negated: bool = False


class Ask(NamedTuple):
    """An asked column: what it computes (asked twice, computed once), its name, its
    Spark column (built when a query computes it), and how it reads the source when it
    is a source column as it is."""

    what: str
    name: str
    column: Callable[[], SparkColumn]
    read: Read | None


Asked = list[Ask]


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
        if (condition := clause.condition) is not None:
            if not _source_only(condition, s_alias, t_alias):
                return None
            tested = functools.partial(_condition_column, condition)
            out.append(
                Ask(f"if {condition}", f"__c{i}", tested, _as_read(condition, s_alias, None))
            )
        if clause.action == "delete":
            continue
        given = {k.lower(): v for k, v in (clause.values or {}).items()}
        if set(given) - names:
            return None  # Spark's path names the unknown column
        for k, column in enumerate(columns):
            name, kind = column.name.lower(), spark_type(column)
            if clause.values is None:
                text, what = f"{quoted(s_alias)}.{quoted(column.name)}", f"`{column.name}`"
                read: Read | None = Read(column.name, kind)
            elif name in given:
                if not _source_only(given[name], s_alias, t_alias):
                    return None
                text = what = given[name]
                read = _as_read(text, s_alias, kind)
            elif clause.action == "update" and name in source_key:
                source = source_key[name]
                text, what, read = (
                    f"{quoted(s_alias)}.{quoted(source)}",
                    f"`{source}`",
                    Read(source, kind),
                )
            elif clause.action == "update":
                return None  # the row keeps a target value the driver did not read
            else:
                text, what, read = "null", "null", None
            built = functools.partial(_value_column, text, kind)
            out.append(Ask(f"{what} as {kind.simpleString()}", f"__v{i}_{k}", built, read))
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
    read = _read_here(spark, source, keys, asked, limit)
    if read is not False:
        return read
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
            T.StructField(ask.name, f.dataType, f.nullable)
            for f, ask in zip(collected[len(keys) :], asked, strict=True)
        ),
    ]
    return [spread(r) for r in rows], fields


def _read_here(
    spark: SparkSession,
    source: DataFrame,
    keys: Sequence[tuple[str, str]],
    asked: Asked,
    limit: int,
) -> tuple[Rows, list[T.StructField]] | Literal[False] | None:
    """`source_rows` when every asked column is a source column as it is and the source
    a relation the driver holds (apply_changes' ranked window): its columns are read
    from the relation, with no query of them optimized (~15 ms of Spark's for 10,000
    rows); False when not so."""
    reads = [ask.read for ask in asked]
    fields = source.schema.fields
    at = {f.name.lower(): i for i, f in enumerate(fields)}
    if len(at) != len(fields):
        return False  # a name Spark would call ambiguous
    wanted = [at.get(s.lower()) for _, s in keys]
    for r in reads:
        if r is None or (i := at.get(r.column.lower())) is None:
            return False
        wanted.append(i)
        kind = fields[i].dataType
        if kind != (r.kind if r.kind is not None else T.BooleanType()):
            return False  # a cast that changes the value, or a condition not a boolean
    if any(i is None for i in wanted):
        return False
    positions = list(dict.fromkeys(i for i in wanted if i is not None))
    held = held_columns(spark, source, positions, limit)
    if held is False or held is None:
        return held
    index = {p: k for k, p in enumerate(positions)}
    take = itemgetter(*(index[i] for i in wanted if i is not None))
    rows = [take(r) for r in held] if len(wanted) > 1 else [(r[0],) for r in held]
    conditions = [(n, r.negated) for n, r in enumerate(reads, len(keys)) if r and r.kind is None]
    if conditions:
        rows = [_decided(row, conditions) for row in rows]
    out = [
        T.StructField(f"__k{n}", fields[i].dataType, fields[i].nullable)
        for n, i in enumerate(wanted[: len(keys)])
        if i is not None
    ]
    for ask, r, i in zip(asked, reads, wanted[len(keys) :], strict=True):
        assert r is not None and i is not None
        if r.kind is None:
            out.append(T.StructField(ask.name, T.BooleanType(), False))
        else:
            out.append(T.StructField(ask.name, r.kind, fields[i].nullable))
    return rows, out


def _decided(row: tuple[Any, ...], conditions: list[tuple[int, bool]]) -> tuple[Any, ...]:
    """`row` with each condition's column as `coalesce([NOT] column, false)` gives it."""
    values = list(row)
    for n, negated in conditions:
        value = values[n]
        values[n] = value is not None and value is not negated
    return tuple(values)


def _as_read(text: str, s_alias: str, kind: T.DataType | None) -> Read | None:
    """`[NOT] alias.column` of the source as a read of it (NOT only in a condition)."""
    simple = _QUALIFIED.fullmatch(text)
    if simple is None or _unquoted(simple.group(2)).lower() != s_alias.lower():
        return None
    negated = simple.group(1) is not None
    if negated and kind is not None:
        return None
    return Read(_unquoted(simple.group(3)), kind, negated)


def _unquoted(name: str) -> str:
    return name[1:-1].replace("``", "`") if name.startswith("`") else name


def _condition_column(text: str) -> SparkColumn:
    return F.coalesce(F.expr(text), F.lit(False))


def _value_column(text: str, kind: T.DataType) -> SparkColumn:
    return F.expr(text).cast(kind)


def _distinct(
    n_keys: int, asked: Asked
) -> tuple[list[SparkColumn], Callable[[Sequence[Any]], tuple[Any, ...]]]:
    """The asked columns computing what no earlier one does (an UPDATE and an INSERT of
    the same source row ask for its values twice: collected once), and how a row of the
    keys and those becomes a row of the keys and every asked column."""
    at: dict[str, int] = {}
    distinct: list[SparkColumn] = []
    for ask in asked:
        if ask.what not in at:
            at[ask.what] = n_keys + len(distinct)
            distinct.append(ask.column().alias(ask.name))
    order = [*range(n_keys), *(at[ask.what] for ask in asked)]
    if len(order) == 1:  # itemgetter of one item gives the item, not a tuple
        return distinct, lambda row: (row[0],)
    return distinct, itemgetter(*order)


# `[NOT] alias.column`: how dbt's MERGE macros spell most values and conditions
_QUALIFIED = re.compile(
    r"\s*(not\s+)?(`[^`]+`|[a-z_]\w*)\s*\.\s*(`[^`]+`|[a-z_]\w*)\s*", re.IGNORECASE
)


@functools.lru_cache(maxsize=1024)
def _source_only(text: str, s_alias: str, t_alias: str) -> bool:
    """Whether a Spark SQL expression reads only columns qualified by the source's
    alias (and no subquery). A qualified column, maybe negated, is told without a parse
    (~0.7 ms each, a dozen per MERGE)."""
    if (simple := _QUALIFIED.fullmatch(text)) is not None:
        alias = simple.group(2).strip("`").lower()
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
