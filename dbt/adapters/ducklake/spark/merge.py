"""MERGE INTO as one distributed Spark plan and one snapshot (merge-on-read).

Target rows (with file ids, positions and row ids) are full-outer-joined with the source
on the ON condition. Clauses of each kind are tried in order; the first whose condition
holds decides a row's fate. Deleted and updated target rows are removed through
`dml.stage_deletes`, updated rows are written again with their row ids, inserted rows as
new rows. A target row matched by more than one source row is an error and nothing is
committed (as in Delta Lake and DuckDB).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import reduce
from typing import cast

import sqlglot
from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from sqlglot import exp

from ..lake import Column, Lake, Snapshot, StagedTable, Transaction
from .compat import HAS_DATAFRAME_SUBQUERIES
from .dml import few_victims, stage_deletes, target_rows
from .driver_merge import merge_on_driver
from .engine import CommitInfo, in_transaction, inlining_limit, stage_rows
from .errors import MergeError
from .few_changes import ROW_ID, Outcome, stage_few
from .prune import Predicate
from .scan import ScanMetrics
from .scan_files import FILE_ID_COL, POS_COL
from .types import keys_compare, spark_type

KINDS = ("matched", "not_matched", "not_matched_by_source")
# Below this many rows in the target's data files, the job over the source that finds
# its key ranges costs more than reading every target file: measured on a snapshot
# MERGE into a few small files, that job and its planning took ~0.5 s of ~2.5 s.
PRUNE_FROM_ROWS = 100_000
ACTIONS = {
    "matched": ("update", "delete"),
    "not_matched": ("insert",),
    "not_matched_by_source": ("update", "delete"),
}


KeyPair = tuple[str, str]  # (target column, source column) that ON requires equal


@dataclass(frozen=True)
class Aliases:
    target: str
    source: str


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


@dataclass(frozen=True)
class _Plan:
    """What one MERGE asks, as its steps use it."""

    on: str  # the ON condition, Spark SQL
    clauses: Sequence[When]
    aliases: Aliases
    keys: tuple[KeyPair, ...]
    scan: ScanMetrics  # what the target scan read
    whole_on: tuple[KeyPair, ...] = ()  # ON's equal keys when they are all of ON

    @property
    def by_source_only(self) -> bool:
        """No WHEN NOT MATCHED BY SOURCE: only target rows a source row matches change."""
        return not any(c.kind == "not_matched_by_source" for c in self.clauses)


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
    keys: Sequence[KeyPair] | None = None,
    commit: CommitInfo | None = None,
    tx: Transaction | None = None,
    metrics: ScanMetrics | None = None,
) -> Snapshot | None:
    """MERGE INTO schema.name AS t USING source AS s ON <on> WHEN ... (Spark SQL exprs).

    `keys`: the (target column, source column) pairs ON requires equal, as data (a
    caller that parsed ON passes `equal_keys` of its tree); None: found in `on`'s text.
    They bound the target scan to the source keys' ranges. `metrics` receives what the
    target scan read."""
    aliases = Aliases(target_alias, source_alias)
    tree = _parsed(on)
    on_keys = equal_keys(tree, aliases)
    known_keys = on_keys if keys is None else keys
    whole_on = _whole_on_keys(tree, on_keys)

    def stage(tx: Transaction) -> None:
        src = _Source(source.withColumn("__ducklake_s", F.lit(True)))
        try:
            attempt = ScanMetrics()  # a retried transaction scans afresh
            plan = _Plan(on, clauses, aliases, tuple(known_keys), attempt, whole_on)
            _merge(spark, lake, tx, (schema, name), src, plan)
            if metrics is not None:
                vars(metrics).update(vars(attempt))
        finally:
            src.df.unpersist()

    return in_transaction(lake, commit, tx, stage)


class _Source:
    """The MERGE source. A big target reads it up to three times (key range, semi
    join, outer join): then a query that reads files or shuffles (a dbt model's,
    usually) is computed once and kept. A small target reads it once, in the join, and
    keeping it would only cost its planning (~0.3 s of a dbt snapshot's MERGE)."""

    def __init__(self, df: DataFrame):
        self.df = df
        self._asked = False

    def reused(self) -> DataFrame:
        """The source, for a read that is not its last."""
        if not self._asked:
            self._asked = True
            if _costly(self.df):
                self.df = self.df.persist()
        return self.df

    @property
    def kept(self) -> bool:
        """Persisted (then SQL text must not name it: see `_matching`)."""
        return bool(self.df.is_cached)


# in an analyzed plan: a read of files or tables (not rows the driver holds), and the
# operators that shuffle or join
_READS = re.compile(r"(?<!Local)Relation\b")
_SHUFFLES = ("Aggregate", "Window", "Join", "Sort", "Repartition", "Distinct", "Deduplicate")


def _costly(df: DataFrame) -> bool:
    """Whether computing `df` again costs more than keeping it: its plan reads files or
    shuffles. Asked of the analyzed plan, which the DataFrame already has (planning it
    for execution, only to look, cost 0.06-0.2 s per MERGE). Unknown (Spark Connect):
    yes."""
    jdf = getattr(df, "_jdf", None)
    if jdf is None:
        return True
    plan = jdf.queryExecution().analyzed().toString()
    return bool(_READS.search(plan)) or any(op in plan for op in _SHUFFLES)


def _merge(
    spark: SparkSession,
    lake: Lake,
    tx: Transaction,
    qualified: tuple[str, str],
    source: _Source,
    plan: _Plan,
) -> None:
    schema, name = qualified
    table = tx.table(schema, name)
    columns = table.column_list()
    clauses, (t_alias, s_alias) = plan.clauses, (plan.aliases.target, plan.aliases.source)
    if plan.whole_on and merge_on_driver(
        spark,
        lake,
        tx,
        table,
        source.df,
        plan.whole_on,
        clauses,
        (t_alias, s_alias),
        plan.scan,
        _repeated(table),
    ):
        return
    target = _target(spark, lake, tx, qualified, source, plan)
    src = source.df
    if plan.by_source_only:
        # target rows no source row matches take no clause: a left join from the source
        # drops them, and lets Spark broadcast a small target instead of shuffling both
        joined = src.alias(s_alias).join(target.alias(t_alias), F.expr(plan.on), "left")
    else:
        joined = target.alias(t_alias).join(src.alias(s_alias), F.expr(plan.on), "full_outer")
    decided = joined.withColumn("__ducklake_clause", _first_clause(clauses))
    decided = decided.where(F.col("__ducklake_clause").isNotNull())
    # a small target: the changes are likely few, and then they reach the driver in
    # one query and are staged from there
    if plan.scan.rows_read < PRUNE_FROM_ROWS and _staged_few(spark, lake, tx, table, decided, plan):
        return
    decided = decided.persist()
    try:
        # rows per clause (the job that fills the cache): which steps have work, whether
        # victims are few enough to stage on the driver, and whether new rows are
        # inlined (a LIMIT over the cache) or written at once (no write-then-read-back)
        per_clause = _rows_per_clause(decided)
        limit = inlining_limit(lake, table)
        _stage_victims(spark, lake, tx, table, decided, clauses, per_clause, plan.scan, t_alias)
        for action in ("update", "insert"):
            chosen = [i for i, c in enumerate(clauses) if c.action == action]
            count = sum(per_clause.get(i, 0) for i in chosen)
            if not count:
                continue
            values = _new_values(plan, columns, action, chosen)
            rows = decided.where(F.col("__ducklake_clause").isin(chosen)).select(*values)
            moved, big = action == "update", count > limit
            stage_rows(lake, tx, table, rows, keep_row_ids=moved, write_first=big, packed=True)
    finally:
        decided.unpersist()


def _whole_on_keys(tree: exp.Expression | None, keys: list[KeyPair]) -> tuple[KeyPair, ...]:
    """ON's equal key pairs `keys` when they are the whole condition (else none)."""
    if tree is None:
        return ()
    return tuple(keys) if len(keys) == len(list(_conjuncts(tree))) else ()


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

    few = few_victims(count)
    stage_deletes(spark, lake, tx, table, victims, scan.files, on_repeat=_repeated(table), few=few)


def _repeated(table: StagedTable) -> Callable[[int], MergeError]:
    """The error of a target row that more than one source row matches."""

    def error(rowid: int) -> MergeError:
        return MergeError(
            f"MERGE into {table.qualified_name}: target row {rowid} matches more than "
            "one source row; make the ON condition unique per target row. Nothing was "
            "committed."
        )

    return error


def _staged_few(
    spark: SparkSession,
    lake: Lake,
    tx: Transaction,
    table: StagedTable,
    decided: DataFrame,
    plan: _Plan,
) -> bool:
    """`few_changes.stage_few` for this MERGE: each action's values as columns."""
    clauses, t = plan.clauses, plan.aliases.target
    columns = table.column_list()
    chosen = {a: [i for i, c in enumerate(clauses) if c.action == a] for a in ("update", "insert")}
    values = {a: _new_values(plan, columns, a, indexes) for a, indexes in chosen.items() if indexes}
    outcome = Outcome(
        removed=[i for i, c in enumerate(clauses) if c.kind != "not_matched"],
        chosen={a: chosen[a] for a in values},
        lineage=[F.col(f"{t}.{name}").alias(name) for name in (FILE_ID_COL, POS_COL, "rowid")],
        values=values,
    )
    return stage_few(spark, lake, tx, table, decided, outcome, plan.scan.files, _repeated(table))


def _new_values(
    plan: _Plan, columns: list[Column], action: str, chosen: list[int]
) -> list[SparkColumn]:
    """The table's columns of the rows `action`'s clauses write (`chosen`: their
    indexes); updated rows keep their row ids, as a last column."""
    t, s = plan.aliases.target, plan.aliases.source
    moved = action == "update"
    names = [c.name for c in columns]
    values = _values(plan.clauses, chosen, columns, names, t, s, keep_target=moved)
    if moved:
        values.append(F.col(f"{t}.rowid").alias(ROW_ID))
    return values


def _rows_per_clause(decided: DataFrame) -> dict[int, int]:
    """How many joined rows each WHEN clause takes (one row per clause that took any)."""
    counted = decided.groupBy("__ducklake_clause").count().collect()
    return {int(r[0]): int(r[1]) for r in counted}


def _target(
    spark: SparkSession,
    lake: Lake,
    tx: Transaction,
    qualified: tuple[str, str],
    source: _Source,
    plan: _Plan,
) -> DataFrame:
    """The target rows the MERGE can change, with their lineage (`rowid`, file, pos)."""
    schema, name = qualified
    s_alias = plan.aliases.source
    columns = tx.table(schema, name).column_list()
    types_by_name = {c.name.lower(): c for c in columns}
    # the key ranges cost a job over the source: asked only when the target's files hold
    # enough rows for pruning them to pay
    ranges: list[Predicate] = []

    def key_ranges(_columns: Sequence[Column]) -> list[Predicate]:
        ranges.extend(_key_ranges(source.reused(), plan.keys, columns))
        return ranges

    predicates = key_ranges if plan.by_source_only else ()
    target = target_rows(
        spark,
        lake,
        tx,
        schema,
        name,
        predicates=predicates,
        metrics=plan.scan,
        prune_from_rows=PRUNE_FROM_ROWS,
    )
    # the scan reads only the target columns the statement can use: the ON keys and the
    # values updates keep (a dbt merge that sets every column reads just the keys)
    kept = _target_columns_used(plan.on, plan.clauses, columns, s_alias)
    target = target.select(*[f"`{n}`" for n in kept], "rowid", FILE_ID_COL, POS_COL)
    # the same ranges as a filter: Parquet skips the row groups they rule out (a file
    # written in key order holds a narrow key range per row group)
    for key in ranges:
        if types_by_name[key.column.lower()].type in _LITERAL_RANGE_TYPES:
            low, high = key.value
            target = target.where(F.col(_quoted(key.column)).between(F.lit(low), F.lit(high)))
    if plan.by_source_only and plan.scan.rows_read >= PRUNE_FROM_ROWS:
        # only target rows some source row matches can change: a semi join finds them in
        # one pass (the small source is the build side), so only those rows look up
        # their lineage; a small target skips it (one broadcast job less)
        target = _matching(spark, target, source, plan)
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


def _matching(spark: SparkSession, target: DataFrame, source: _Source, plan: _Plan) -> DataFrame:
    """Target rows that some source row matches, asked as `EXISTS`: the optimizer moves
    that filter (it would not move a semi join) below the scan's per-file columns, so
    only the matching rows look up their file, row id and position.

    With ON's equal keys the subquery is built as DataFrames, matching on the keys
    alone (the join after it applies the rest of ON). Without keys it is SQL text, but
    not for a persisted source: Spark plans a DataFrame named in SQL text (a temporary
    view) without its cached rows, so the source would be computed again and its size
    be unknown (measured on a dbt change-feed MERGE: the 10M-row target shuffled for a
    sort-merge join that AQE turned into a broadcast only afterwards)."""
    t, s = plan.aliases.target, plan.aliases.source
    src = source.reused()
    if plan.keys and HAS_DATAFRAME_SUBQUERIES:
        same = [
            F.col(f"{_quoted(s)}.{_quoted(s_col)}")
            == F.col(f"{_quoted(t)}.{_quoted(t_col)}").outer()
            for t_col, s_col in plan.keys
        ]
        return target.alias(t).where(src.alias(s).where(reduce(operator.and_, same)).exists())
    if source.kept or plan.keys:  # Spark 3.5: no DataFrame subqueries
        return target.alias(t).join(src.alias(s), F.expr(plan.on), "left_semi")
    escaped = plan.on.replace("{", "{{").replace("}", "}}")
    return spark.sql(
        f"SELECT * FROM {{target}} AS {_quoted(t)} WHERE EXISTS "
        f"(SELECT 1 FROM {{source}} AS {_quoted(s)} WHERE {escaped})",
        target=target,
        source=src,
    )


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


_RANGE_TYPES = ("int8", "int16", "int32", "int64", "date", "timestamp", "timestamptz", "varchar")
# the key types whose min/max come back from Spark as values a literal gives back exactly
# (a timestamp would pass through the driver's time zone)
_LITERAL_RANGE_TYPES = ("int8", "int16", "int32", "int64", "date", "varchar")


def equal_keys(condition: exp.Expression | None, aliases: Aliases) -> list[KeyPair]:
    """The (target column, source column) pairs an ON condition requires equal: each
    `t.a = s.b` that is a conjunct of the whole condition. Other conjuncts (`t.x > 5`,
    `t.v <> 'a or b'`, a parenthesised OR) only narrow the match further; a top-level
    OR has no such conjunct, since either side alone can match."""
    target, source = aliases.target.lower(), aliases.source.lower()
    pairs: list[KeyPair] = []
    for conjunct in _conjuncts(condition) if condition is not None else ():
        if not isinstance(conjunct, exp.EQ):  # `<=>` also matches NULLs: no range holds it
            continue
        left, right = _unwrapped(conjunct.this), _unwrapped(conjunct.expression)
        if not isinstance(left, exp.Column) or not isinstance(right, exp.Column):
            continue
        if left.args.get("db") or right.args.get("db"):
            continue  # a struct field (`t.addr.zip`), not a column of its own
        if left.table.lower() == source and right.table.lower() == target:
            left, right = right, left
        if left.table.lower() == target and right.table.lower() == source:
            pairs.append((left.name, right.name))
    return pairs


def _conjuncts(node: exp.Expression) -> Iterator[exp.Expression]:
    node = _unwrapped(node)
    if isinstance(node, exp.And):
        yield from _conjuncts(node.this)
        yield from _conjuncts(node.expression)
    else:
        yield node


def _unwrapped(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _parsed(text: str) -> exp.Expression | None:
    """A Spark SQL expression's tree; None when sqlglot cannot read it (then nothing is
    pruned and every target column is read: slower, never wrong)."""
    try:
        tree = cast(exp.Expression, sqlglot.parse_one(text, read="spark"))
    except sqlglot.errors.SqlglotError:
        return None
    return tree


def _key_ranges(
    source: DataFrame, keys: Sequence[KeyPair], columns: Sequence[Column]
) -> list[Predicate]:
    """`target key between min and max of the source key` for each key pair, so the
    target scan skips files whose stats rule the source's keys out."""
    types = {c.name.lower(): c for c in columns}
    fields = {f.name.lower(): f for f in source.schema.fields}
    pairs: list[tuple[Column, str]] = []
    for target_name, source_name in keys:
        col, found = types.get(target_name.lower()), fields.get(source_name.lower())
        if col is None or found is None or col.type not in _RANGE_TYPES:
            continue
        if keys_compare(spark_type(col), found.dataType):
            pairs.append((col, found.name))
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


def _target_columns_used(
    on: str, clauses: Sequence[When], columns: Sequence[Column], source_alias: str = "s"
) -> list[str]:
    """Target columns the MERGE may read: any named in ON, a condition or a value
    (unless qualified by the source's alias: `s.v` reads no target column), and any an
    UPDATE leaves as it was."""
    texts = [on]
    for c in clauses:
        texts.append(c.condition or "")
        texts += list((c.values or {}).values())
    source = source_alias.lower()
    words: set[str] = set()
    for text in filter(None, texts):
        tree = _parsed(text)
        if tree is None:
            return [c.name for c in columns]
        for column in tree.find_all(exp.Column):
            parts = [part.name.lower() for part in column.parts]
            if len(parts) == 1 or parts[0] != source:
                words.update(parts)
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
