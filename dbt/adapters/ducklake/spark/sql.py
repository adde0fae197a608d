"""Spark SQL on the lake: lake table references resolved in place, DML routed to the engine.

A query's text is never regenerated: sqlglot (Spark dialect) finds the table references
and their offsets, and each lake reference — `schema.table`, `lake.schema.table`, quoted
names, with `VERSION AS OF n` or `TIMESTAMP AS OF '...'` — is replaced in the original
text by a temporary view of its scan; so are the change-feed table functions
`table_changes('t', start, end)`, `table_insertions`, `table_deletions`. CTE names, Spark
temp views and non-lake tables are left alone. INSERT / CREATE TABLE AS / DELETE /
UPDATE / MERGE / DDL on lake tables run as engine operations, each one snapshot, or all
together as one snapshot between BEGIN and COMMIT (a nested BEGIN … COMMIT joins the
enclosing block).
"""

from __future__ import annotations

import itertools
import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime

import sqlglot
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.tokens import TokenType

from ..lake.errors import LakeError
from ..lake.lake import Lake
from ..lake.models import Snapshot
from ..lake.reader import CatalogReader
from ..lake.transaction import Transaction
from .calls import CallError, is_call, run_call
from .catalog_queries import (
    INFORMATION_SCHEMA,
    INFORMATION_SCHEMA_VIEWS,
    CatalogQueryError,
    NotInLake,
    catalog_statement,
    information_schema,
    is_catalog_statement,
)
from .changes import table_changes
from .ddl import DDLError, column_spec, run_ddl
from .dml import delete_where, update_where
from .engine import CommitInfo, NotNullViolation, begin, create_table_as, insert_into
from .errors import spark_error_text
from .merge import When, merge_into
from .pushdown import pushed_predicates
from .scan import ScanMetrics, scan_table
from .star_ordinals import expand_stars, may_need_expansion, stars_with_ordinals
from .statements import (
    CreateLayout,
    LayoutAlter,
    StatementError,
    extract_create_layout,
    parse_layout_alter,
    split_statements,
)
from .view_types import Columns
from .views import read_columns, scan_relation

_ids = itertools.count()
# unreadable statements become exp.Command, reported by this module as an error; sqlglot
# would also print a warning for each on stderr
logging.getLogger("sqlglot").setLevel(logging.ERROR)
_TIME_TRAVEL = re.compile(
    r"\s+(?:FOR\s+)?(?:SYSTEM_)?(VERSION|TIMESTAMP)\s+AS\s+OF\s+"
    r"(\d+|'(?:[^']|'')*'|TIMESTAMP\s*'(?:[^']|'')*')",
    re.IGNORECASE,
)
_LEADING_COMMENTS = re.compile(r"^(?:\s*(?:/\*.*?\*/|--[^\n]*(?:\n|$)))*\s*", re.DOTALL)
_BEGIN = re.compile(r"^\s*(BEGIN|START\s+TRANSACTION)(\s+(TRANSACTION|WORK))?\s*$", re.I)
_COMMIT = re.compile(r"^\s*(COMMIT|END)(\s+(TRANSACTION|WORK))?\s*$", re.I)
_SESSION = re.compile(r"^\s*(SET|RESET)\b", re.I)  # Spark session settings
_EXPLAIN = re.compile(r"^\s*EXPLAIN(\s+(?:EXTENDED|FORMATTED|CODEGEN|COST))?\s+", re.I)
_ROLLBACK = re.compile(r"^\s*(ROLLBACK|ABORT)(\s+(TRANSACTION|WORK))?\s*$", re.I)
FEED_FUNCTIONS = {
    f"{prefix}table_{feed}": feed
    for prefix in ("", "ducklake_")
    for feed in ("changes", "insertions", "deletions")
}


class LakeSQLError(ValueError):
    pass


@dataclass
class _Ref:
    start: int
    end: int  # exclusive, time-travel clause included
    schema: str
    name: str
    at: int | datetime | None
    node: exp.Table


class LakeSQL:
    """Runs Spark SQL statements against one lake (`catalog_name` is how SQL names it)."""

    def __init__(
        self,
        spark: SparkSession,
        lake: Lake,
        *,
        default_schema: str = "main",
        catalog_name: str = "ducklake",
        commit: CommitInfo | None = None,
    ):
        self.spark = spark
        self.lake = lake
        self.default_schema = default_schema
        self.catalog_name = catalog_name
        self.commit = commit or CommitInfo()
        self._tx: Transaction | None = None
        self._depth = 0  # nesting of BEGIN … COMMIT inside the open block
        # (table, what its scan planned) for each lake table the last query read
        self.last_scans: list[tuple[str, ScanMetrics]] = []
        self.written_as: dict[str, str] = {}  # temporary view -> the reference it replaced

    @property
    def in_transaction(self) -> bool:
        return self._tx is not None

    # -- queries ---------------------------------------------------------------------
    def query(self, text: str) -> DataFrame:
        """A Spark query with lake references resolved (the text otherwise untouched)."""
        return self.spark.sql(self.rewrite(text))

    def rewrite(self, text: str) -> str:
        tree = _parse(text)
        cat = self.lake.catalog()
        refs = self._lake_refs(tree, text, cat)
        spans: list[tuple[int, int, DataFrame]] = []
        self.last_scans = []
        for ref in refs:
            self._check_unchanged(ref.schema, ref.name, ref.at)
            spans.append((ref.start, ref.end, self._scan(ref)))
        spans += self._feed_calls(tree, text)
        spans += self._information_schema(tree, cat)
        edits = []
        for start, end, df in spans:
            view = self._register(df)
            self.written_as[view] = text[start:end]  # errors name it as the user did
            edits.append((start, end, view))
        edits += _text_type_casts(text)
        out = text
        for start, end, replacement in sorted(edits, key=lambda s: s[0], reverse=True):
            out = out[:start] + replacement + out[end:]
        return out

    def _scan(self, ref: _Ref) -> DataFrame:
        """A table's scan prunes files by the query's filters on it; a view is expanded."""
        cat = self.lake.catalog(ref.at)
        table = cat.find_table(ref.schema, ref.name)
        if table is None:
            return scan_relation(self.spark, self.lake, ref.schema, ref.name, at=ref.at)
        metrics = ScanMetrics()
        df = scan_table(
            self.spark,
            self.lake,
            ref.schema,
            ref.name,
            predicates=lambda columns: pushed_predicates(
                ref.node, {c.name.lower(): c.type for c in columns}
            ),
            metrics=metrics,
            catalog=cat,
        )
        self.last_scans.append((f"{ref.schema}.{ref.name}", metrics))
        return df

    @staticmethod
    def _register(df: DataFrame) -> str:
        view = f"__ducklake_{next(_ids)}"
        df.createOrReplaceTempView(view)
        return view

    def _information_schema(
        self, tree: exp.Expression, cat: CatalogReader
    ) -> list[tuple[int, int, DataFrame]]:
        """`[lake.]information_schema.tables` and friends: DuckDB's views over the catalog."""
        spans = []
        for table in tree.find_all(exp.Table):
            db, catalog, name_id = table.args.get("db"), table.args.get("catalog"), table.this
            if db is None or db.name.lower() != INFORMATION_SCHEMA or "start" not in db.meta:
                continue
            if catalog is not None and catalog.name.lower() != self.catalog_name.lower():
                continue
            view = table.name.lower()
            if view not in INFORMATION_SCHEMA_VIEWS:
                known = ", ".join(INFORMATION_SCHEMA_VIEWS)
                raise LakeSQLError(f"information_schema.{view}: the lake answers {known}")
            df = information_schema(self.spark, self.lake, self.catalog_name, view, cat)
            start = (catalog or db).meta["start"]
            spans.append((start, name_id.meta["end"] + 1, df))
        return spans

    def _check_unchanged(
        self, schema: str, name: str, at: int | datetime | None = None, *, dml: bool = False
    ) -> None:
        """Statements of a block read the lake as of BEGIN: reading a table the block
        already changed is refused. A DML target may follow ADD/DROP COLUMN (its rows
        are read in the new columns), not a change of its rows."""
        if self._tx is None or at is not None:
            return
        tx = self._tx
        changed = tx.has_new_rows_or_identity(schema, name) if dml else tx.has_changed(schema, name)
        if changed:
            raise LakeSQLError(
                f"{schema}.{name} was changed earlier in this transaction block; reading it "
                "again before COMMIT is not supported (the block sees the state at BEGIN). "
                "Commit first or reorder the statements."
            )

    def _feed_calls(self, tree: exp.Expression, text: str) -> list[tuple[int, int, DataFrame]]:
        """table_changes / table_insertions / table_deletions calls used as tables."""
        called = [
            t.this.name.lower()
            for t in tree.find_all(exp.Table)
            if isinstance(t.this, exp.Anonymous) and t.this.name.lower() in FEED_FUNCTIONS
        ]
        if not called:
            return []
        tokens = Spark().tokenizer().tokenize(text)
        spans = []
        for i, tok in enumerate(tokens):
            feed = FEED_FUNCTIONS.get(tok.text.lower())
            if (
                feed is None
                or i + 1 >= len(tokens)
                or tokens[i + 1].token_type != TokenType.L_PAREN
            ):
                continue
            start = tok.start
            if i >= 2 and tokens[i - 1].token_type == TokenType.DOT:
                if tokens[i - 2].text.lower() != self.catalog_name.lower():
                    continue
                start = tokens[i - 2].start
            depth, j = 0, i + 1
            while j < len(tokens):
                depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(tokens[j].token_type, 0)
                if depth == 0:
                    break
                j += 1
            call = _parse(text[tok.start : tokens[j].end + 1])
            spans.append((start, tokens[j].end + 1, self._feed(feed, call)))
        return spans

    def _feed(self, feed: str, call: exp.Expression) -> DataFrame:
        args = list(call.expressions) if isinstance(call, exp.Anonymous) else []
        usage = f"table_{feed}('[schema.]table', start, end)"
        if len(args) not in (2, 3) or not (isinstance(args[0], exp.Literal) and args[0].is_string):
            raise LakeSQLError(f"{usage}: got {call.sql(dialect='spark')}")
        parts = args[0].name.split(".")
        schema, name = (parts[0], parts[1]) if len(parts) == 2 else (self.default_schema, parts[0])
        bounds = [self._bound(a) for a in args[1:]]
        return table_changes(
            self.spark,
            self.lake,
            schema,
            name,
            bounds[0],
            bounds[1] if len(bounds) > 1 else None,
            feed=feed,
        )

    def _bound(self, arg: exp.Expression) -> int | datetime:
        """A snapshot id or a time: literals directly, other expressions evaluated by Spark."""
        if isinstance(arg, exp.Literal) and not arg.is_string:
            return int(arg.name)
        if isinstance(arg, exp.Literal):
            return _travel_target("TIMESTAMP", f"'{arg.name}'")
        value = self.spark.sql(f"SELECT {arg.sql(dialect='spark')}").first()
        result = value[0] if value is not None else None
        if isinstance(result, int):
            return result
        if isinstance(result, datetime):
            return result if result.tzinfo else result.replace(tzinfo=UTC)
        raise LakeSQLError(f"change feed bound {arg.sql(dialect='spark')} is not an id or a time")

    def _lake_refs(self, tree: exp.Expression, text: str, cat: CatalogReader) -> list[_Ref]:
        ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
        relations = {(t.schema_name, t.name) for t in cat.tables()}
        relations |= {(v.schema_name, v.name) for v in cat.views()}
        refs = []
        for table in tree.find_all(exp.Table):
            name_id = table.this
            if not isinstance(name_id, exp.Identifier) or "start" not in name_id.meta:
                continue
            db, catalog = table.args.get("db"), table.args.get("catalog")
            if catalog is not None and catalog.name.lower() != self.catalog_name.lower():
                continue
            if db is None and (table.name.lower() in ctes or self._is_spark_view(table.name)):
                continue
            schema = db.name if db is not None else self.default_schema
            if (schema, table.name) not in relations:
                continue
            first = catalog or db or name_id
            start = first.meta["start"]
            end = name_id.meta["end"] + 1  # offsets include quotes of quoted names
            at = None
            travel = _TIME_TRAVEL.match(text, end)
            if travel is not None:
                at = _travel_target(travel.group(1), travel.group(2))
                end = travel.end()
            refs.append(_Ref(start, end, schema, table.name, at, table))
        return refs

    def _is_spark_view(self, name: str) -> bool:
        try:
            return bool(self.spark.catalog.tableExists(name))
        except Exception:  # Connect sessions without a catalog answer: assume not
            return False

    # -- statements ------------------------------------------------------------------
    def execute(self, text: str) -> DataFrame | Snapshot | None:
        """Run a script; the last statement's result is returned (a query's DataFrame, a
        change's snapshot, None inside a transaction block). BEGIN ... COMMIT makes its
        changes one snapshot; an error inside a block discards the whole block."""
        result: DataFrame | Snapshot | None = None
        self.written_as.clear()  # kept after a query: its rows fail, if at all, when read
        for statement in split_statements(text):
            try:
                if may_need_expansion(statement):
                    statement = self._expand_star_ordinals(statement)
                result = self._statement(statement)
            except Exception as exc:
                if self._tx is not None:
                    self._tx, self._depth = None, 0  # nothing of the block was written
                if isinstance(exc, PySparkException):
                    raise LakeSQLError(spark_error_text(exc, self.written_as)) from exc
                raise
        return result

    def _expand_star_ordinals(self, text: str) -> str:
        """`SELECT *, … GROUP BY 1` as Spark accepts it (see `star_ordinals`)."""
        tree = _parse(text)
        if not stars_with_ordinals(tree):
            return text
        query = (tree.expression if isinstance(tree, exp.Create | exp.Insert) else None) or tree
        columns = read_columns(self.spark, self.lake, query, self.default_schema)
        return tree.sql(dialect="spark") if expand_stars(tree, columns) else text

    def _statement(self, text: str) -> DataFrame | Snapshot | None:
        bare = _LEADING_COMMENTS.sub("", text)  # dbt prefixes a /* query comment */
        if _BEGIN.match(bare):
            # a block opened inside a block joins it: one snapshot at the outer COMMIT
            if self._tx is None:
                self._tx, self._depth = begin(self.lake, self.commit), 0
            self._depth += 1
            return None
        if _COMMIT.match(bare):
            self._depth -= 1
            if self._tx is None or self._depth > 0:
                self._depth = max(self._depth, 0)
                return None
            tx, self._tx = self._tx, None
            return tx.commit()
        if _ROLLBACK.match(bare):
            self._tx, self._depth = None, 0
            return None
        if (explain := _EXPLAIN.match(bare)) is not None:
            # the plan Spark would run, lake tables resolved (nothing is executed)
            mode = explain.group(1) or ""
            return self.spark.sql(f"EXPLAIN{mode} {self.rewrite(bare[explain.end() :])}")
        if is_call(bare):
            if self._tx is not None:
                raise LakeSQLError(
                    "CALL / CHECKPOINT cannot run inside BEGIN … COMMIT: each maintenance "
                    "function commits its own snapshot"
                )
            try:
                return run_call(self.spark, self.lake, self.commit, bare)
            except (CallError, LakeError) as exc:
                raise LakeSQLError(str(exc)) from exc
        if is_catalog_statement(bare):
            try:
                return catalog_statement(
                    self.spark, self.lake, self.catalog_name, self.default_schema, bare
                )
            except NotInLake as exc:
                if self._is_spark_view(exc.name):  # a temporary view of this session
                    return self.spark.sql(bare)
                raise LakeSQLError(str(exc)) from exc
            except (CatalogQueryError, LakeError) as exc:
                raise LakeSQLError(str(exc)) from exc
        if _SESSION.match(bare):
            self.spark.sql(bare)  # SET key=value, SET TIME ZONE …: not lake statements
            return None
        try:
            layout = parse_layout_alter(bare)
        except StatementError as exc:
            raise LakeSQLError(str(exc)) from exc
        if layout is not None:
            return self._layout(layout)
        try:
            create_layout = extract_create_layout(bare)
        except StatementError as exc:
            raise LakeSQLError(str(exc)) from exc
        if create_layout is not None:
            tree = _parse(create_layout.text)
            if not isinstance(tree, exp.Create) or tree.expression is None:
                raise LakeSQLError(
                    "PARTITIONED BY / SORTED BY in CREATE TABLE need AS <query>; for an empty "
                    "table use ALTER TABLE … SET PARTITIONED BY / SET SORTED BY"
                )
            return self._ctas(tree, create_layout.text, create_layout)
        tree = _parse(text)
        if isinstance(tree, exp.Query):
            return self.query(text)
        if isinstance(tree, exp.Insert):
            return self._insert(tree, text)
        is_table = isinstance(tree, exp.Create) and tree.args.get("kind", "").upper() == "TABLE"
        if isinstance(tree, exp.Create) and is_table and tree.expression is not None:
            return self._ctas(tree, text)
        if isinstance(tree, exp.Delete):
            schema, name = self._target(tree.this)
            where = tree.args.get("where")
            cond = where.this.sql(dialect="spark") if where is not None else None
            return delete_where(
                self.spark, self.lake, schema, name, cond, commit=self.commit, tx=self._tx
            )
        if isinstance(tree, exp.Update):
            schema, name = self._target(tree.this)
            sets = {e.this.name: e.expression.sql(dialect="spark") for e in tree.expressions}
            where = tree.args.get("where")
            cond = where.this.sql(dialect="spark") if where is not None else None
            return update_where(
                self.spark, self.lake, schema, name, sets, cond, commit=self.commit, tx=self._tx
            )
        if isinstance(tree, exp.Merge):
            return self._merge(tree)
        if self._spark_temp_view(tree):
            # temporary views live in the Spark session, never in the lake
            if isinstance(tree, exp.Drop):
                for t in tree.args.get("tables") or [tree.this]:
                    self.spark.catalog.dropTempView(t.name)
            else:
                self.spark.sql(self.rewrite(text))
            return None
        if isinstance(tree, exp.TruncateTable):
            for t in tree.expressions:
                schema, name = self._target(t, reads=False)
                delete_where(
                    self.spark, self.lake, schema, name, None, commit=self.commit, tx=self._tx
                )
            return None
        if isinstance(tree, exp.Create | exp.Drop | exp.Alter | exp.Comment):
            view_sql = _view_text(tree, text)
            columns = self._check_view_query(tree, view_sql) if view_sql is not None else None
            try:
                return run_ddl(
                    self.lake,
                    tree,
                    self.default_schema,
                    self.commit,
                    view_sql,
                    tx=self._tx,
                    view_reads=columns,
                )
            except DDLError as exc:
                raise LakeSQLError(str(exc)) from exc
        start = " ".join(bare.split()[:4])
        raise LakeSQLError(
            f"{_statement_words(bare)} is not supported on the lake yet (the statement "
            f"starting {start!r})"
        )

    def _check_view_query(self, tree: exp.Expression, view_sql: str) -> Columns | None:
        """Spark analyses the view's query before it is stored: a missing table or
        column fails CREATE VIEW (as in dbt-spark), not the first reader. Inside a
        block that changed a relation the query reads, the check waits for a reader:
        the block's own changes are not visible to a scan before COMMIT. Returns the
        column types of the relations the query reads (None when unchecked)."""
        query = _parse(view_sql)
        if self._tx is not None:
            for table in query.find_all(exp.Table):
                schema = table.db or self.default_schema
                if self._tx.has_changed(schema, table.name):
                    return None
        target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
        name = ".".join(p.name for p in target.parts)
        try:
            # the text a reader runs: stored SQL goes through sqlglot's Spark dialect
            self.query(query.sql(dialect="spark"))
        except PySparkException as exc:
            raise LakeSQLError(f"view {name}: {spark_error_text(exc, self.written_as)}") from exc
        except LakeSQLError as exc:
            raise LakeSQLError(f"view {name}: {exc}") from exc
        return read_columns(self.spark, self.lake, query, self.default_schema)

    def _spark_temp_view(self, tree: exp.Expression) -> bool:
        kind = str(tree.args.get("kind") or "").upper()
        if isinstance(tree, exp.Create) and kind == "VIEW":
            return tree.find(exp.TemporaryProperty) is not None
        if isinstance(tree, exp.Drop) and kind == "VIEW":
            tables = tree.args.get("tables") or [tree.this]
            return all(not t.db and self._is_spark_view(t.name) for t in tables)
        return False

    def _target(self, table: exp.Expression, *, reads: bool = True) -> tuple[str, str]:
        if not isinstance(table, exp.Table):
            raise LakeSQLError(f"expected a lake table, got {table.sql(dialect='spark')!r}")
        schema = table.db or self.default_schema
        if self._tx is not None and self._tx.has_table(schema, table.name):
            if reads:
                self._check_unchanged(schema, table.name, dml=True)
            return schema, table.name
        if self.lake.catalog().find_table(schema, table.name) is None:
            raise LakeSQLError(f"lake table {schema}.{table.name} does not exist")
        return schema, table.name

    def _layout(self, layout: LayoutAlter) -> Snapshot | None:
        schema = layout.schema or self.default_schema
        own = self._tx is None
        tx = self._tx or begin(self.lake, self.commit)
        table = tx.table(schema, layout.table)
        if layout.partition is not None:
            if layout.partition:
                tx.set_partitioned_by(table, layout.partition)
            else:
                tx.reset_partitioned_by(table)
        elif layout.sort:
            tx.set_sorted_by(table, layout.sort)
        else:
            tx.reset_sorted_by(table)
        return tx.commit() if own else None

    def _insert(self, tree: exp.Insert, text: str) -> Snapshot | None:
        target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
        overwrite = bool(tree.args.get("overwrite"))
        schema, name = self._target(target, reads=overwrite)
        rest = text[_end_of(target) :]
        partition = target.args.get("partition") is not None
        if partition:  # INSERT OVERWRITE t PARTITION (...): replace only the new partitions
            clause = re.match(r"\s*PARTITION\s*", rest, re.IGNORECASE)
            if clause is not None:
                rest = rest[clause.end() :]
                rest = rest[_balanced_end(rest) :]
        listed = None
        if isinstance(tree.this, exp.Schema):  # an explicit column list
            rest = rest[_balanced_end(rest) :]
            listed = [c.name for c in tree.this.expressions]
        df = self.query(rest)
        if listed is not None:
            df = self._by_name(df, schema, name, listed)
        return insert_into(
            self.lake,
            schema,
            name,
            df,
            overwrite=overwrite,
            partitions_only=overwrite and partition,
            commit=self.commit,
            tx=self._tx,
        )

    def _by_name(self, df: DataFrame, schema: str, name: str, listed: list[str]) -> DataFrame:
        """INSERT INTO t (c, a) …: the query's columns go to the listed ones, by position;
        unlisted table columns get NULL."""
        if self._tx is not None and self._tx.has_table(schema, name):
            table_columns = [c.name for c in self._tx.table(schema, name).columns]
        else:
            cat = self.lake.catalog()
            table_columns = [c.name for c in cat.columns(cat.table(schema, name).table_id)]
        lowered = [n.lower() for n in listed]
        unknown = [n for n in listed if n.lower() not in {c.lower() for c in table_columns}]
        if unknown or len(listed) != len(df.columns) or len(set(lowered)) != len(lowered):
            raise LakeSQLError(
                f"INSERT into {schema}.{name}: column list ({', '.join(listed)}) does not match "
                f"the query's {len(df.columns)} columns or the table's columns "
                f"({', '.join(table_columns)})"
            )
        positional = df.toDF(*[f"__ducklake_c{i}" for i in range(len(listed))])
        return positional.select(
            *[
                F.col(f"__ducklake_c{lowered.index(c.lower())}").alias(c)
                if c.lower() in lowered
                else F.lit(None).alias(c)
                for c in table_columns
            ]
        )

    def _ctas(
        self, tree: exp.Create, text: str, layout: CreateLayout | None = None
    ) -> Snapshot | None:
        table = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
        if not isinstance(table, exp.Table) or tree.expression is None:
            raise LakeSQLError("CREATE TABLE on the lake needs AS <query>")
        schema = table.db or self.default_schema
        start = _end_of(table)
        columns = None
        if isinstance(tree.this, exp.Schema):  # declared columns: types and NOT NULL
            start += _balanced_end(text[start:])
            try:
                columns = [column_spec(d) for d in tree.this.expressions]
            except DDLError as exc:
                raise LakeSQLError(str(exc)) from exc
        found = re.compile(r"\bAS\b", re.IGNORECASE).search(text, start)
        if found is None:
            raise LakeSQLError("CREATE TABLE on the lake needs AS <query>")
        df = self.query(text[found.end() :])
        try:
            return create_table_as(
                self.lake,
                schema,
                table.name,
                df,
                replace=bool(tree.args.get("replace")),
                columns=columns,
                partition_by=layout.partition if layout else None,
                sort_by=layout.sort if layout else None,
                commit=self.commit,
                tx=self._tx,
            )
        except (ValueError, NotNullViolation) as exc:
            raise LakeSQLError(str(exc)) from exc

    def _merge(self, tree: exp.Merge) -> Snapshot | None:
        target = tree.this
        schema, name = self._target(target)
        t_alias = target.alias or target.name
        using = tree.args["using"]
        s_alias = using.alias or (using.name if isinstance(using, exp.Table) else "s")
        if isinstance(using, exp.Table):
            plain = exp.Table(this=using.this, db=using.args.get("db"))
            source = self.query(f"SELECT * FROM {plain.sql(dialect='spark')}")
        else:
            source = self.query(using.this.sql(dialect="spark"))
        _unqualify(tree, (target, t_alias), (using, s_alias))
        on = tree.args["on"].sql(dialect="spark")
        clauses = []
        whens = tree.args.get("whens")
        for w in whens.expressions if whens is not None else tree.expressions:
            matched = bool(w.args.get("matched"))
            by_source = bool(w.args.get("source"))
            kind = (
                "matched" if matched else ("not_matched_by_source" if by_source else "not_matched")
            )
            cond = w.args.get("condition")
            then = w.args.get("then")
            condition = cond.sql(dialect="spark") if cond is not None else None
            if isinstance(then, exp.Update):
                values = (
                    None
                    if then.expressions == [exp.Star()] or not then.expressions
                    else {e.this.name: e.expression.sql(dialect="spark") for e in then.expressions}
                )
                clauses.append(When(kind, "update", condition, values))
            elif isinstance(then, exp.Insert):
                cols, vals = then.this, then.expression
                if isinstance(cols, exp.Star) or cols is None:
                    clauses.append(When(kind, "insert", condition, None))
                else:
                    names = [c.name for c in cols.expressions]
                    exprs = [v.sql(dialect="spark") for v in vals.expressions]
                    clauses.append(
                        When(kind, "insert", condition, dict(zip(names, exprs, strict=True)))
                    )
            elif isinstance(then, exp.Var) and then.name.upper() == "DELETE":
                clauses.append(When(kind, "delete", condition))
            else:
                raise LakeSQLError(f"MERGE clause {w.sql(dialect='spark')!r} is not supported")
        return merge_into(
            self.spark,
            self.lake,
            schema,
            name,
            source,
            on,
            clauses,
            target_alias=t_alias,
            source_alias=s_alias,
            commit=self.commit,
            tx=self._tx,
        )


def _unqualify(tree: exp.Merge, *sides: tuple[exp.Expression, str]) -> None:
    """`schema.table.column` (valid in Spark and DuckDB when a MERGE side has no alias)
    becomes `alias.column`, the form the engine resolves."""
    for column in tree.find_all(exp.Column):
        db = column.args.get("db")
        if db is None:
            continue
        for side, alias in sides:
            if not isinstance(side, exp.Table) or side.alias:
                continue
            same_table = column.table.lower() == side.name.lower()
            side_db = side.args.get("db")
            if same_table and (side_db is None or side_db.name.lower() == db.name.lower()):
                column.set("db", None)
                column.set("catalog", None)
                column.set("table", exp.to_identifier(alias))
                break


def _text_type_casts(text: str) -> list[tuple[int, int, str]]:
    """`x::text` and `CAST(x AS text)` (PostgreSQL's string type, common in dbt SQL) as
    Spark's `string`; Spark has no TEXT type, so valid Spark SQL is never changed."""
    tokens = Spark().tokenizer().tokenize(text)
    out = []
    for i, tok in enumerate(tokens):
        if tok.token_type != TokenType.TEXT or i == 0:
            continue
        before = tokens[i - 1].token_type
        after = tokens[i + 1].token_type if i + 1 < len(tokens) else None
        if before == TokenType.DCOLON or (before == TokenType.ALIAS and after == TokenType.R_PAREN):
            out.append((tok.start, tok.end + 1, "string"))
    return out


def _view_text(tree: exp.Expression, text: str) -> str | None:
    """The query of CREATE VIEW … AS <query>, as written (None for other statements)."""
    if not isinstance(tree, exp.Create) or str(tree.args.get("kind") or "").upper() != "VIEW":
        return None
    target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
    start = _end_of(target)
    if isinstance(tree.this, exp.Schema):  # a column alias list
        start += _balanced_end(text[start:])
    found = re.compile(r"\bAS\b", re.IGNORECASE).search(text, start)
    return text[found.end() :].strip() if found is not None else None


def _end_of(table: exp.Expression) -> int:
    """Offset just after a table reference's name in the original text."""
    return int(table.this.meta["end"]) + 1


def _balanced_end(text: str) -> int:
    """Offset after the parenthesised group that `text` starts with (spaces first)."""
    depth, i = 0, 0
    while i < len(text):
        ch = text[i]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        elif depth == 0 and not ch.isspace():
            return 0
        i += 1
    return 0


def _statement_words(text: str) -> str:
    """`SHOW`, `GRANT`: the statement's kind as the user spelled it."""
    words = re.findall(r"[A-Za-z_]+", text)[:1]
    return " ".join(words).upper() or "this statement"


def _parse(text: str) -> exp.Expression:
    try:
        parsed = sqlglot.parse(text, read="spark")
    except sqlglot.errors.ParseError as exc:  # its first line names the problem and place
        raise LakeSQLError(f"SQL syntax error: {str(exc).splitlines()[0]}") from exc
    statements = [s for s in parsed if s is not None]
    if len(statements) != 1:
        raise LakeSQLError(f"expected one SQL statement, got {len(statements)}")
    tree = statements[0]
    assert isinstance(tree, exp.Expression)
    return tree


def _travel_target(kind: str, value: str) -> int | datetime:
    if kind.upper() == "VERSION":
        if not value.isdigit():
            raise LakeSQLError(f"VERSION AS OF takes a snapshot id, got {value}")
        return int(value)
    literal = value.split("'", 1)[1].rsplit("'", 1)[0].replace("''", "'")
    try:
        stamp = datetime.fromisoformat(literal)
    except ValueError:
        raise LakeSQLError(
            f"TIMESTAMP AS OF {literal!r} is not a timestamp; write it like "
            "'2026-01-31 12:00:00' or '2026-01-31T12:00:00+00:00'"
        ) from None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)
