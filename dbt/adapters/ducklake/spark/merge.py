"""MERGE INTO as one distributed Spark plan and one snapshot (merge-on-read).

Target rows (with file ids, positions and row ids) are full-outer-joined with the source
on the ON condition. Clauses of each kind are tried in order; the first whose condition
holds decides a row's fate. Deleted and updated target rows are removed through
`dml.stage_deletes`, updated rows are written again with their row ids, inserted rows as
new rows. A target row matched by more than one source row is an error and nothing is
committed (as in Delta Lake and DuckDB).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..lake import Column, Lake, Snapshot, StagedTable, Transaction
from .dml import few_victims, stage_deletes, target_rows
from .engine import CommitInfo, in_transaction, inlining_limit, stage_rows
from .errors import MergeError
from .prune import Predicate
from .scan import ScanMetrics
from .scan_files import FILE_ID_COL, POS_COL
from .types import spark_type

KINDS = ("matched", "not_matched", "not_matched_by_source")
ACTIONS = {
    "matched": ("update", "delete"),
    "not_matched": ("insert",),
    "not_matched_by_source": ("update", "delete"),
}


@dataclass(frozen=True)
class When:
    """One WHEN clause. `values` maps target columns to expressions; None means `*`."""

    kind: str  # matched | not_matched | not_matched_by_source
    action: str  # update | delete | insert
    condition: str | None = None
    values: Mapping[str, str] | None = field(default=None)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise MergeError(f"WHEN clause kind {self.kind!r}: accepted {', '.join(KINDS)}")
        if self.action not in ACTIONS[self.kind]:
            raise MergeError(
                f"WHEN {self.kind.replace('_', ' ').upper()} cannot {self.action.upper()}; "
                f"accepted: {', '.join(a.upper() for a in ACTIONS[self.kind])}"
            )


def merge_into(
    spark: SparkSession,
    lake: Lake,
    schema: str,
    name: str,
    source: DataFrame,
    on: str,
    clauses: Sequence[When],
    *,
    target_alias: str = "t",
    source_alias: str = "s",
    commit: CommitInfo | None = None,
    tx: Transaction | None = None,
) -> Snapshot | None:
    """MERGE INTO schema.name AS t USING source AS s ON <on> WHEN ... (Spark SQL exprs)."""

    def stage(tx: Transaction) -> None:
        # the source is read up to three times (key range, semi join, outer join): a query
        # that reads files or shuffles (a dbt model's, usually) is computed once and kept
        src = source.withColumn("__ducklake_s", F.lit(True))
        if _costly(src):
            src = src.persist()
        try:
            _merge(spark, lake, tx, (schema, name), src, on, clauses, target_alias, source_alias)
        finally:
            src.unpersist()

    return in_transaction(lake, commit, tx, stage)


def _costly(df: DataFrame) -> bool:
    """Whether computing `df` again costs more than keeping it: its plan reads files or
    shuffles. Unknown (Spark Connect): yes."""
    jdf = getattr(df, "_jdf", None)
    if jdf is None:
        return True
    plan = jdf.queryExecution().executedPlan().toString()
    return "FileScan" in plan or "Exchange" in plan


def _merge(
    spark: SparkSession,
    lake: Lake,
    tx: Transaction,
    qualified: tuple[str, str],
    src: DataFrame,
    on: str,
    clauses: Sequence[When],
    target_alias: str,
    source_alias: str,
) -> None:
    schema, name = qualified
    table = tx.table(schema, name)
    columns = table.column_list()
    names = [c.name for c in columns]
    scan = ScanMetrics()
    target = _target(
        spark, lake, tx, qualified, src, on, clauses, (target_alias, source_alias), scan
    )
    joined = target.alias(target_alias).join(src.alias(source_alias), F.expr(on), "full_outer")
    decided = joined.withColumn("__ducklake_clause", _first_clause(clauses))
    decided = decided.where(F.col("__ducklake_clause").isNotNull()).persist()
    try:
        # rows per clause (the job that fills the cache): which steps have work, whether
        # victims are few enough to stage on the driver, and whether new rows are
        # inlined (a LIMIT over the cache) or written at once (no write-then-read-back)
        per_clause = _rows_per_clause(decided)
        _stage_victims(spark, lake, tx, table, decided, clauses, per_clause, scan, target_alias)
        limit = inlining_limit(lake, table)
        for action in ("update", "insert"):
            chosen = [i for i, c in enumerate(clauses) if c.action == action]
            count = sum(per_clause.get(i, 0) for i in chosen)
            if not count:
                continue
            moved = action == "update"  # updated rows keep their row ids
            values = _values(
                clauses, chosen, columns, names, target_alias, source_alias, keep_target=moved
            )
            if moved:
                values.append(F.col(f"{target_alias}.rowid").alias("_ducklake_internal_row_id"))
            rows = decided.where(F.col("__ducklake_clause").isin(chosen)).select(*values)
            big = count > limit
            stage_rows(lake, tx, table, rows, keep_row_ids=moved, write_first=big, packed=True)
    finally:
        decided.unpersist()


def _stage_victims(
    spark: SparkSession,
    lake: Lake,
    tx: Transaction,
    table: StagedTable,
    decided: DataFrame,
    clauses: Sequence[When],
    per_clause: Mapping[int, int],
    scan: ScanMetrics,
    target_alias: str,
) -> None:
    """Remove the target rows an UPDATE or DELETE clause took. Every matched row is a
    victim (UPDATE and DELETE both remove it): a target row matched twice shows up
    twice, which fails the MERGE."""
    removed = [i for i, c in enumerate(clauses) if c.kind != "not_matched"]
    count = sum(per_clause.get(i, 0) for i in removed)
    if not count:
        return
    victims = decided.where(F.col("__ducklake_clause").isin(removed)).select(
        F.col(f"{target_alias}.{FILE_ID_COL}").alias(FILE_ID_COL),
        F.col(f"{target_alias}.{POS_COL}").alias(POS_COL),
        F.col(f"{target_alias}.rowid").alias("rowid"),
    )

    def repeated(rowid: int) -> MergeError:
        return MergeError(
            f"MERGE into {table.qualified_name}: target row {rowid} matches more than "
            "one source row; make the ON condition unique per target row. Nothing was "
            "committed."
        )

    few = few_victims(count)
    stage_deletes(spark, lake, tx, table, victims, scan.files, on_repeat=repeated, few=few)


def _rows_per_clause(decided: DataFrame) -> dict[int, int]:
    """How many joined rows each WHEN clause takes (one row per clause that took any)."""
    counted = decided.groupBy("__ducklake_clause").count().collect()
    return {int(r[0]): int(r[1]) for r in counted}


def _target(
    spark: SparkSession,
    lake: Lake,
    tx: Transaction,
    qualified: tuple[str, str],
    src: DataFrame,
    on: str,
    clauses: Sequence[When],
    aliases: tuple[str, str],
    scan: ScanMetrics,
) -> DataFrame:
    """The target rows the MERGE can change, with their lineage (`rowid`, file, pos)."""
    schema, name = qualified
    target_alias, source_alias = aliases
    columns = tx.table(schema, name).column_list()
    by_source_only = not any(c.kind == "not_matched_by_source" for c in clauses)
    # the key ranges cost a job over the source: asked only when there are files to prune
    predicates = (
        (lambda _columns: _key_ranges(src, on, target_alias, source_alias, columns))
        if by_source_only
        else ()
    )
    target = target_rows(spark, lake, tx, schema, name, predicates=predicates, metrics=scan)
    # the scan reads only the target columns the statement can use: the ON keys and the
    # values updates keep (a dbt merge that sets every column reads just the keys)
    kept = _target_columns_used(on, clauses, columns, source_alias)
    target = target.select(*[f"`{n}`" for n in kept], "rowid", FILE_ID_COL, POS_COL)
    if by_source_only:
        # only target rows some source row matches can change: a semi join finds them in
        # one pass (the small source is the build side), so the outer join below and
        # the persisted result hold changed rows, not the table
        target = _matching(spark, target, src, on, target_alias, source_alias)
    return target.withColumn("__ducklake_t", F.lit(True))


def _first_clause(clauses: Sequence[When]) -> SparkColumn:
    """Per joined row, the index of the first WHEN clause that applies (NULL: none)."""
    t_in = F.col("__ducklake_t").isNotNull()
    s_in = F.col("__ducklake_s").isNotNull()
    state = (
        F.when(t_in & s_in, F.lit("matched"))
        .when(s_in, F.lit("not_matched"))
        .otherwise(F.lit("not_matched_by_source"))
    )
    choice: SparkColumn = F.lit(None).cast("int")
    for i in reversed(range(len(clauses))):
        c = clauses[i]
        hit = (state == F.lit(c.kind)) & (F.expr(c.condition) if c.condition else F.lit(True))
        choice = F.when(hit, F.lit(i)).otherwise(choice)
    return choice


def _matching(
    spark: SparkSession, target: DataFrame, src: DataFrame, on: str, t: str, s: str
) -> DataFrame:
    """Target rows that some source row matches, asked as `WHERE EXISTS`: the optimizer
    moves that filter (it would not move a semi join) below the scan's per-file columns,
    so only the matching rows look up their file, row id and position."""
    escaped = on.replace("{", "{{").replace("}", "}}")
    return spark.sql(
        f"SELECT * FROM {{target}} AS {_quoted(t)} WHERE EXISTS "
        f"(SELECT 1 FROM {{source}} AS {_quoted(s)} WHERE {escaped})",
        target=target,
        source=src,
    )


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


_KEY_EQUALITY = re.compile(r"^\s*`?(\w+)`?\.`?(\w+)`?\s*=\s*`?(\w+)`?\.`?(\w+)`?\s*$")
_RANGE_TYPES = ("int8", "int16", "int32", "int64", "date", "timestamp", "timestamptz", "varchar")


def _key_ranges(
    source: DataFrame, on: str, t: str, s: str, columns: Sequence[Column]
) -> list[Predicate]:
    """`target key between min and max of the source key` for each `t.k = s.k` conjunct
    of ON, so the target scan skips files whose stats rule the source's keys out."""
    if re.search(r"\bor\b", on, flags=re.IGNORECASE):
        return []  # a disjunction can match rows outside any one key's range
    types = {c.name.lower(): c for c in columns}
    source_types = {f.name: f.dataType for f in source.schema.fields}
    pairs: list[tuple[Column, str]] = []
    for conjunct in re.split(r"\s+and\s+", on, flags=re.IGNORECASE):
        m = _KEY_EQUALITY.match(conjunct)
        if m is None:
            continue
        left, right = (m.group(1), m.group(2)), (m.group(3), m.group(4))
        if left[0].lower() == s.lower() and right[0].lower() == t.lower():
            left, right = right, left
        if left[0].lower() != t.lower() or right[0].lower() != s.lower():
            continue
        col = types.get(left[1].lower())
        if col is None or col.type not in _RANGE_TYPES or right[1] not in source_types:
            continue
        if _comparable(spark_type(col), source_types[right[1]]):
            pairs.append((col, right[1]))
    if not pairs:
        return []
    aggs = []
    for _col, src_col in pairs:
        aggs += [F.min(F.col(f"`{src_col}`")), F.max(F.col(f"`{src_col}`"))]
    bounds = source.agg(*aggs).collect()[0]  # one row; collect is one job, first() two
    predicates = []
    for i, (col, _src) in enumerate(pairs):
        lo, hi = (bounds[2 * i], bounds[2 * i + 1]) if bounds is not None else (None, None)
        if lo is not None and hi is not None:
            predicates.append(Predicate(col.name, "between", (lo, hi)))
    return predicates


_IDENTIFIER = re.compile(r"(?:(`[^`]+`|\w+)\s*\.\s*)?(`[^`]+`|\w+)")


def _target_columns_used(
    on: str, clauses: Sequence[When], columns: Sequence[Column], source_alias: str = "s"
) -> list[str]:
    """Target columns the MERGE may read: any named in ON, a condition or a value (by
    word, unless qualified by the source's alias: `s.v` reads no target column), and any
    an UPDATE leaves as it was."""
    texts = [on]
    for c in clauses:
        texts.append(c.condition or "")
        texts += list((c.values or {}).values())
    source = source_alias.lower()
    words: set[str] = set()
    for text in texts:
        for qualifier, name in _IDENTIFIER.findall(text):
            qualifier, name = qualifier.strip("`").lower(), name.strip("`").lower()
            words.add(qualifier)
            if qualifier != source:
                words.add(name)
    kept = []
    for col in columns:
        name = col.name.lower()
        left_as_is = any(c.action == "update" and not _assigns(c, name) for c in clauses)
        if name in words or left_as_is:
            kept.append(col.name)
    return kept


def _assigns(clause: When, column: str) -> bool:
    """Whether the clause gives `column` a value (`*` gives every column one)."""
    values = clause.values
    return values is None or column.lower() in {k.lower() for k in values}


def _comparable(target: T.DataType, source: T.DataType) -> bool:
    """Whether the source's min/max order keys as the target's stats do (no casts
    between strings and numbers, which order differently)."""
    if isinstance(target, T.IntegralType) and isinstance(source, T.IntegralType):
        return True
    return target == source


def _values(
    clauses: Sequence[When],
    chosen: list[int],
    columns: list[Column],
    names: list[str],
    t: str,
    s: str,
    *,
    keep_target: bool,
) -> list[SparkColumn]:
    """Per target column: the value the deciding clause gives it."""
    out = []
    for col in columns:
        assigned_by_all = all(_assigns(clauses[i], col.name) for i in chosen)
        keep = keep_target and not assigned_by_all
        expr: SparkColumn = F.col(f"{t}.`{col.name}`") if keep else F.lit(None)
        for i in reversed(chosen):
            c = clauses[i]
            if c.values is None:  # UPDATE SET * / INSERT *: the source column of that name
                value = F.col(f"{s}.`{col.name}`")
            else:
                lowered = {k.lower(): v for k, v in c.values.items()}
                unknown = set(lowered) - {n.lower() for n in names}
                if unknown:
                    raise MergeError(f"MERGE: no target column(s) {', '.join(sorted(unknown))}")
                if col.name.lower() not in lowered:
                    continue
                value = F.expr(lowered[col.name.lower()])
            expr = F.when(F.col("__ducklake_clause") == F.lit(i), value).otherwise(expr)
        out.append(expr.cast(spark_type(col)).alias(col.name))
    return out
