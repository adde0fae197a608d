"""Spark SQL on the lake: each statement goes to the handler of its kind.

Queries run in Spark with their lake references resolved (`sql_rewrite`); INSERT /
CREATE TABLE AS / DELETE / UPDATE / MERGE / DDL on lake tables run as engine operations,
each one snapshot, or all together as one snapshot between BEGIN and COMMIT
(`sql_blocks`); CALL, SHOW / DESCRIBE, EXPLAIN and SET are answered here or by Spark.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from sqlglot import exp

from ..lake import Lake, LakeError, Snapshot, Transaction
from .calls import is_call, run_call
from .catalog_queries import (
    CatalogQueryError,
    NotInLake,
    catalog_statement,
    is_catalog_statement,
)
from .ddl import column_spec, drop_dependent_views, run_ddl
from .dml import delete_where, update_where
from .driver_dml import delete_on_driver, update_on_driver
from .engine import CommitInfo, begin, create_table_as, in_transaction, insert_into
from .errors import (
    CallError,
    DDLError,
    EngineError,
    LakeSQLError,
    NotNullViolation,
    spark_error_text,
    spark_syntax_error,
)
from .literal_insert import insert_literals
from .merge import Aliases, equal_keys, merge_into
from .merge_sql import unqualify, when_clauses
from .scan import ScanMetrics
from .sql_blocks import TransactionBlock
from .sql_rewrite import QueryRewriter, parse
from .star_ordinals import expand_stars, may_need_expansion, stars_with_ordinals
from .statements import (
    CreateLayout,
    LayoutAlter,
    StatementError,
    extract_create_layout,
    parse_layout_alter,
    split_statements,
    without_leading_comments,
)
from .temp_views import drop_temp_view_here, dropped_views
from .view_types import Columns, has_typed_operations
from .views import read_columns

__all__ = ["LakeSQL", "LakeSQLError"]

_SESSION = re.compile(r"^\s*(SET|RESET)\b", re.I)  # Spark session settings
_EXPLAIN = re.compile(r"^\s*EXPLAIN(\s+(?:EXTENDED|FORMATTED|CODEGEN|COST))?\s+", re.I)

Result = DataFrame | Snapshot | None


@dataclass(frozen=True)
class _Done:
    """A statement a handler ran (its result may be None)."""

    result: Result


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
        self.block = TransactionBlock(lake)
        self.rewriter = QueryRewriter(
            spark, lake, self.block, default_schema=default_schema, catalog_name=catalog_name
        )

    @property
    def in_transaction(self) -> bool:
        return self.block.tx is not None

    @property
    def _tx(self) -> Transaction | None:
        return self.block.tx

    def replace_table(
        self, schema: str, name: str, df: DataFrame, *, drop_dependents: bool = False
    ) -> Snapshot | None:
        """CREATE OR REPLACE TABLE schema.name from `df` (in the open block, if any). With
        `drop_dependents` the views reading the old table are dropped in the same
        snapshot, as DROP … CASCADE does."""

        def stage(tx: Transaction) -> None:
            if drop_dependents and tx.has_table(schema, name):
                drop_dependent_views(tx, schema, name)
            create_table_as(self.lake, schema, name, df, replace=True, tx=tx)

        return in_transaction(self.lake, self.commit, self._tx, stage)

    # -- queries ---------------------------------------------------------------------
    def query(self, text: str) -> DataFrame:
        """A Spark query with lake references resolved (the text otherwise untouched)."""
        return self.rewriter.query(text)

    def rewrite(self, text: str) -> str:
        return self.rewriter.rewrite(text)

    @property
    def written_as(self) -> dict[str, str]:
        return self.rewriter.written_as

    @property
    def last_scans(self) -> list[tuple[str, ScanMetrics]]:
        return self.rewriter.last_scans

    # -- statements ------------------------------------------------------------------
    def execute(self, text: str) -> Result:
        """Run a script; the last statement's result is returned (a query's DataFrame, a
        change's snapshot, None inside a transaction block). BEGIN ... COMMIT makes its
        changes one snapshot; an error inside a block discards the whole block."""
        result: Result = None
        self.written_as.clear()  # kept after a query: its rows fail, if at all, when read
        for statement in split_statements(text):
            try:
                if may_need_expansion(statement):
                    statement = self._expand_star_ordinals(statement)
                result = self._statement(statement)
            except Exception as exc:
                self.block.discard()  # nothing of an open block was written
                if isinstance(exc, PySparkException):
                    raise LakeSQLError(spark_error_text(exc, self.written_as)) from exc
                raise
        return result

    def _expand_star_ordinals(self, text: str) -> str:
        """`SELECT *, … GROUP BY 1` as Spark accepts it (see `star_ordinals`)."""
        tree = parse(text)
        if not stars_with_ordinals(tree):
            return text
        query = (tree.expression if isinstance(tree, exp.Create | exp.Insert) else None) or tree
        columns = read_columns(self.spark, self.lake, query, self.default_schema)
        expanded = expand_stars(tree, columns, self.default_schema)
        return tree.sql(dialect="spark") if expanded else text

    def _statement(self, text: str) -> Result:
        bare = without_leading_comments(text)
        if self.block.is_control(bare):
            return self.block.control(bare, self.commit)
        for handler in (self._command, self._layout_statement):
            done = handler(bare)
            if done is not None:
                return done.result
        tree = parse(text)
        for tree_handler in (self._write, self._definition):
            done = tree_handler(tree, text)
            if done is not None:
                return done.result
        if isinstance(tree, exp.Command) and (problem := spark_syntax_error(self.spark, bare)):
            raise LakeSQLError(f"SQL syntax error: {problem}")
        start = " ".join(bare.split()[:4])
        raise LakeSQLError(
            f"{_statement_words(bare)} is not supported on the lake yet (the statement "
            f"starting {start!r})"
        )

    def _command(self, bare: str) -> _Done | None:
        """Statements that are not SQL on tables: EXPLAIN, CALL, SHOW / DESCRIBE, SET."""
        if (explain := _EXPLAIN.match(bare)) is not None:
            # the plan Spark would run, lake tables resolved (nothing is executed)
            mode = explain.group(1) or ""
            return _Done(self.spark.sql(f"EXPLAIN{mode} {self.rewrite(bare[explain.end() :])}"))
        if is_call(bare):
            if self._tx is not None:
                raise LakeSQLError(
                    "CALL / CHECKPOINT cannot run inside BEGIN … COMMIT: each maintenance "
                    "function commits its own snapshot"
                )
            try:
                return _Done(run_call(self.spark, self.lake, self.commit, bare))
            except (CallError, LakeError) as exc:
                raise LakeSQLError(str(exc)) from exc
        if is_catalog_statement(bare):
            try:
                return _Done(
                    catalog_statement(
                        self.spark, self.lake, self.catalog_name, self.default_schema, bare
                    )
                )
            except NotInLake as exc:
                if self.rewriter.is_spark_view(exc.name):  # a temporary view of this session
                    return _Done(self.spark.sql(bare))
                raise LakeSQLError(str(exc)) from exc
            except (CatalogQueryError, LakeError) as exc:
                raise LakeSQLError(str(exc)) from exc
        if _SESSION.match(bare):
            self.spark.sql(bare)  # SET key=value, SET TIME ZONE …: not lake statements
            return _Done(None)
        return None

    def _layout_statement(self, bare: str) -> _Done | None:
        """ALTER TABLE … SET PARTITIONED BY / SORTED BY, and CREATE TABLE with them."""
        try:
            layout = parse_layout_alter(bare)
            create_layout = extract_create_layout(bare) if layout is None else None
        except StatementError as exc:
            raise LakeSQLError(str(exc)) from exc
        if layout is not None:
            return _Done(self._layout(layout))
        if create_layout is None:
            return None
        tree = parse(create_layout.text)
        if not isinstance(tree, exp.Create) or tree.expression is None:
            raise LakeSQLError(
                "PARTITIONED BY / SORTED BY in CREATE TABLE need AS <query>; for an empty "
                "table use ALTER TABLE … SET PARTITIONED BY / SET SORTED BY"
            )
        return _Done(self._ctas(tree, create_layout.text, create_layout))

    def _write(self, tree: exp.Expression, text: str) -> _Done | None:
        """Queries, and statements that change rows."""
        if isinstance(tree, exp.Query):
            return _Done(self.query(text))
        if isinstance(tree, exp.Insert):
            return _Done(self._insert(tree, text))
        is_table = isinstance(tree, exp.Create) and tree.args.get("kind", "").upper() == "TABLE"
        if isinstance(tree, exp.Create) and is_table and tree.expression is not None:
            return _Done(self._ctas(tree, text))
        if isinstance(tree, exp.Delete | exp.Update):
            on_driver = self._change_on_driver(tree)
            if on_driver is not None:
                return on_driver
            schema, name = self._target(tree.this)
            where = tree.args.get("where")
            cond = where.this.sql(dialect="spark") if where is not None else None
            if isinstance(tree, exp.Delete):
                return _Done(
                    delete_where(
                        self.spark, self.lake, schema, name, cond, commit=self.commit, tx=self._tx
                    )
                )
            sets = {e.this.name: e.expression.sql(dialect="spark") for e in tree.expressions}
            return _Done(
                update_where(
                    self.spark, self.lake, schema, name, sets, cond, commit=self.commit, tx=self._tx
                )
            )
        if isinstance(tree, exp.Merge):
            return _Done(self._merge(tree))
        if isinstance(tree, exp.TruncateTable):
            for t in tree.expressions:
                schema, name = self._target(t, reads=False)
                delete_where(
                    self.spark, self.lake, schema, name, None, commit=self.commit, tx=self._tx
                )
            return _Done(None)
        return None

    def _change_on_driver(self, tree: exp.Delete | exp.Update) -> _Done | None:
        """A DELETE / UPDATE of an all-inlined table that `driver_dml` can decide."""
        target = tree.this
        more = [k for k, v in tree.args.items() if v and k not in ("this", "where", "expressions")]
        if not isinstance(target, exp.Table) or target.alias or more:
            return None  # FROM, USING, RETURNING, …: Spark's path decides
        named = (target.db or self.default_schema, target.name)
        where = tree.args.get("where")
        condition = where.this if where is not None else None
        if isinstance(tree, exp.Delete):
            done, snapshot = delete_on_driver(self.lake, self.commit, self._tx, named, condition)
        else:
            plain = all(
                isinstance(e, exp.EQ) and isinstance(e.this, exp.Column) for e in tree.expressions
            )
            if not plain:
                return None
            sets = [(e.this.name, e.expression) for e in tree.expressions]
            done, snapshot = update_on_driver(
                self.lake, self.commit, self._tx, named, sets, condition
            )
        return _Done(snapshot) if done else None

    def _definition(self, tree: exp.Expression, text: str) -> _Done | None:
        """DDL: temporary views stay in Spark, the rest changes the lake's catalog."""
        if drop_temp_view_here(self.spark, tree):
            return _Done(None)
        if self._spark_temp_view(tree):
            # temporary views live in the Spark session, never in the lake
            if (dropped := dropped_views(tree)) is not None:
                for t in dropped:
                    self.spark.catalog.dropTempView(t.name)
            else:
                self.spark.sql(self.rewriter.rewrite(text, tree))  # parsed from `text`
            return _Done(None)
        if not isinstance(tree, exp.Create | exp.Drop | exp.Alter | exp.Comment):
            return None
        if tree.find(exp.MaterializedProperty) is not None:
            raise LakeSQLError(
                f"materialized view {tree.this.sql(dialect='spark')}: DuckLake has no "
                "materialized views; create a view, or a table (materialized='table')"
            )
        view_sql = _view_text(tree, text)
        columns = self._check_view_query(tree, view_sql) if view_sql is not None else None
        try:
            return _Done(
                run_ddl(
                    self.lake,
                    tree,
                    self.default_schema,
                    self.commit,
                    view_sql,
                    tx=self._tx,
                    view_reads=columns,
                )
            )
        except DDLError as exc:
            raise LakeSQLError(str(exc)) from exc

    def _check_view_query(self, tree: exp.Expression, view_sql: str) -> Columns | None:
        """Spark analyses the view's query before it is stored: a missing table or
        column fails CREATE VIEW (as in dbt-spark), not the first reader. Inside a
        block that changed a relation the query reads, the check waits for a reader:
        the block's own changes are not visible to a scan before COMMIT. Returns the
        column types of the relations the query reads (None when unchecked)."""
        query = parse(view_sql)
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
        if not has_typed_operations(query):
            return {}  # its DuckDB text needs no Spark types
        return read_columns(self.spark, self.lake, query, self.default_schema)

    def _spark_temp_view(self, tree: exp.Expression) -> bool:
        kind = str(tree.args.get("kind") or "").upper()
        if isinstance(tree, exp.Create) and kind == "VIEW":
            return tree.find(exp.TemporaryProperty) is not None
        if (tables := dropped_views(tree)) is not None:
            return all(not t.db and self.rewriter.is_spark_view(t.name) for t in tables)
        return False

    def _target(self, table: exp.Expression, *, reads: bool = True) -> tuple[str, str]:
        if not isinstance(table, exp.Table):
            raise LakeSQLError(f"expected a lake table, got {table.sql(dialect='spark')!r}")
        schema = table.db or self.default_schema
        if self._tx is not None and self._tx.has_table(schema, table.name):
            if reads:
                self.rewriter.check_unchanged(schema, table.name, dml=True)
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
        if not overwrite and not partition and _plain_values(tree, target, rest):
            named = (target.db or self.default_schema, target.name)
            done, snapshot = insert_literals(
                self.lake, self.commit, self._tx, named, tree.expression, listed
            )
            if done:
                return snapshot
        schema, name = self._target(target, reads=overwrite)
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
        except EngineError as exc:
            if isinstance(exc, LakeSQLError | NotNullViolation):
                raise
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
        unqualify(tree, (target, t_alias), (using, s_alias))
        on = tree.args["on"].sql(dialect="spark")
        clauses = when_clauses(tree)
        aliases = Aliases(t_alias, s_alias)
        target_scan = ScanMetrics()
        done = merge_into(
            self.spark,
            self.lake,
            schema,
            name,
            source,
            on,
            clauses,
            target_alias=t_alias,
            source_alias=s_alias,
            keys=equal_keys(tree.args["on"], aliases),  # keys as data: ON is parsed here
            commit=self.commit,
            tx=self._tx,
            metrics=target_scan,
        )
        self.rewriter.last_scans.append((f"{schema}.{name}", target_scan))
        return done


def _plain_values(tree: exp.Insert, target: exp.Expression, text: str) -> bool:
    """VALUES into a table, with no escapes or double quotes, whose meaning Spark's
    settings could change (`literal_insert` decides the rest)."""
    plain = isinstance(tree.expression, exp.Values) and isinstance(target, exp.Table)
    return plain and not any(c in text for c in '\\"')


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
