"""DDL statements on the lake (parsed by sqlglot, Spark dialect), each one snapshot.

CREATE/DROP SCHEMA, CREATE TABLE (columns), DROP TABLE/VIEW, CREATE [OR REPLACE] VIEW
(stored as DuckDB-dialect SQL so DuckDB can query it), ALTER TABLE ADD/DROP/RENAME
COLUMN, ALTER COLUMN TYPE, RENAME TO, and COMMENT ON TABLE/COLUMN/VIEW.
"""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp

from ..lake import ColumnSpec, Lake, Snapshot, Transaction, parse_type
from .duckdb_views import duckdb_view_sql
from .engine import CommitInfo, in_transaction
from .errors import DDLError
from .view_types import Columns


def column_spec(definition: exp.ColumnDef) -> ColumnSpec:
    """A Spark column definition as a DuckLake column (types via DuckDB's spelling)."""
    kind = definition.args.get("kind")
    if kind is None:
        raise DDLError(f"column {definition.name!r} needs a type")
    # DuckLake strings have no length: VARCHAR(50) / CHAR(3) are plain VARCHAR
    duck = re.sub(r"\bTEXT\(\s*\d+\s*\)", "TEXT", kind.sql(dialect="duckdb"))
    spec = parse_type(duck, definition.name)
    not_null = any(
        isinstance(c.kind, exp.NotNullColumnConstraint)
        for c in definition.args.get("constraints") or []
    )
    if not_null:
        spec.nullable = False
    return spec


def run_ddl(
    lake: Lake,
    tree: exp.Expression,
    default_schema: str,
    commit: CommitInfo | None,
    view_sql: str | None = None,
    tx: Transaction | None = None,
    view_reads: Columns | None = None,
) -> Snapshot | None:
    """Apply one DDL statement; `view_sql` is the Spark text of a CREATE VIEW's query,
    `view_reads` the column types of the relations it reads."""

    def stage(tx: Transaction) -> None:
        _stage(tx, tree, default_schema, view_sql, view_reads)

    return in_transaction(lake, commit, tx, stage)


def _schema_name(node: exp.Expression) -> str:
    """sqlglot parses `SCHEMA s` as a table whose db part is `s`."""
    return node.args["db"].name if node.args.get("db") is not None else node.name


def _names(table: exp.Expression, default_schema: str) -> tuple[str, str]:
    if not isinstance(table, exp.Table):
        raise DDLError(f"expected a lake object name, got {table.sql(dialect='spark')!r}")
    return table.db or default_schema, table.name


def _stage(
    tx: Transaction,
    tree: exp.Expression,
    default_schema: str,
    view_sql: str | None,
    view_reads: Columns | None = None,
) -> None:
    kind = str(tree.args.get("kind") or "").upper()
    if isinstance(tree, exp.Create) and kind == "SCHEMA":
        tx.create_schema(_schema_name(tree.this), if_not_exists=bool(tree.args.get("exists")))
    elif isinstance(tree, exp.Drop) and kind == "SCHEMA":
        for t in tree.args.get("tables") or [tree.this]:
            tx.drop_schema(
                _schema_name(t),
                cascade=bool(tree.args.get("cascade")),
                if_exists=bool(tree.args.get("exists")),
            )
    elif isinstance(tree, exp.Drop) and kind in ("TABLE", "VIEW"):
        _drop(tx, tree, kind, default_schema)
    elif isinstance(tree, exp.Create) and kind == "TABLE" and tree.expression is None:
        if not isinstance(tree.this, exp.Schema):
            raise DDLError("CREATE TABLE on the lake needs a column list or AS <query>")
        schema, name = _names(tree.this.this, default_schema)
        if tree.args.get("replace") and tx.has_table(schema, name):
            tx.drop_table(schema, name)
        elif tree.args.get("exists") and tx.has_table(schema, name):
            return
        tx.create_table(schema, name, [column_spec(c) for c in tree.this.expressions])
    elif isinstance(tree, exp.Create) and kind == "VIEW":
        _create_view(tx, tree, default_schema, view_sql, view_reads)
    elif isinstance(tree, exp.Alter):
        _alter(tx, tree, default_schema)
    elif isinstance(tree, exp.Comment):
        _comment(tx, tree, default_schema)
    else:
        raise DDLError(
            f"statement kind {type(tree).__name__.upper()} {kind} is not supported on the lake yet"
        )


def _drop(tx: Transaction, tree: exp.Drop, kind: str, default_schema: str) -> None:
    for t in tree.args.get("tables") or [tree.this]:
        schema, name = _names(t, default_schema)
        if tree.args.get("cascade"):
            drop_dependent_views(tx, schema, name)
        if kind == "TABLE":
            tx.drop_table(schema, name, if_exists=bool(tree.args.get("exists")))
        else:
            tx.drop_view(schema, name, if_exists=bool(tree.args.get("exists")))


def _create_view(
    tx: Transaction,
    tree: exp.Create,
    default_schema: str,
    view_sql: str | None,
    view_reads: Columns | None,
) -> None:
    target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
    schema, name = _names(target, default_schema)
    query = tree.expression
    if query is None:
        raise DDLError(f"CREATE VIEW {schema}.{name} needs AS <query>")
    aliases = [c.name for c in tree.this.expressions] if isinstance(tree.this, exp.Schema) else None
    tx.create_view(
        schema,
        name,
        duckdb_view_sql(query, view_reads, default_schema),
        dialect="duckdb",
        column_aliases=aliases,
        or_replace=bool(tree.args.get("replace")),
        spark_sql=view_sql,
    )


def drop_dependent_views(tx: Transaction, schema: str, name: str) -> None:
    """DROP … CASCADE: DuckLake records no view dependencies, so the views reading the
    object (directly or through other views) are found by parsing their SQL, and
    dropped in the same snapshot."""
    gone = {(schema.lower(), name.lower())}
    views = [v for v in tx.catalog.views() if tx.has_view(v.schema_name, v.name)]
    refs = {
        (v.schema_name, v.name): _references(v.spark_sql, v.sql, v.dialect, v.schema_name)
        for v in views
    }
    changed = True
    while changed:
        changed = False
        for (vs, vn), reads in refs.items():
            key = (vs.lower(), vn.lower())
            if key not in gone and reads & gone:
                gone.add(key)
                tx.drop_view(vs, vn)
                changed = True


def _references(
    spark_sql: str | None, sql: str, dialect: str | None, schema: str
) -> set[tuple[str, str]]:
    try:
        tree = (
            sqlglot.parse_one(spark_sql, read="spark")
            if spark_sql
            else sqlglot.parse_one(sql, read=dialect or "duckdb")
        )
    except sqlglot.errors.ParseError:
        return set()  # a view we cannot parse is left alone
    return {((t.db or schema).lower(), t.name.lower()) for t in tree.find_all(exp.Table) if t.name}


def _alter(tx: Transaction, tree: exp.Alter, default_schema: str) -> None:
    schema, name = _names(tree.this, default_schema)
    table = tx.table(schema, name)
    for action in tree.args.get("actions") or []:
        if isinstance(action, exp.ColumnDef):
            tx.add_column(table, column_spec(action))
        elif isinstance(action, exp.Schema):
            for definition in action.expressions:
                tx.add_column(table, column_spec(definition))
        elif isinstance(action, exp.Drop):
            for col in action.args.get("tables") or []:
                tx.drop_column(table, _path(col))
        elif isinstance(action, exp.RenameColumn):
            tx.rename_column(table, _path(action.this), action.args["to"].name)
        elif isinstance(action, exp.AlterColumn) and action.args.get("dtype") is not None:
            new = parse_type(action.args["dtype"].sql(dialect="duckdb"), action.name)
            tx.alter_column_type(table, action.name, new.type)
        elif isinstance(action, exp.AlterRename):
            tx.rename_table(schema, table.name, action.this.name)
        else:
            raise DDLError(
                f"ALTER TABLE {schema}.{name}: {action.sql(dialect='spark')!r} is not supported"
            )


def _path(col: exp.Expression) -> tuple[str, ...]:
    parts = [p.name for p in col.parts] if isinstance(col, exp.Column) else [col.name]
    return tuple(parts)


def _comment(tx: Transaction, tree: exp.Comment, default_schema: str) -> None:
    kind = str(tree.args.get("kind") or "").upper()
    text_node = tree.expression
    text = None if isinstance(text_node, exp.Null) else text_node.name
    target = tree.this
    if kind == "TABLE":
        schema, name = _names(target, default_schema)
        tx.comment_on_table(tx.table(schema, name), text)
    elif kind == "VIEW":
        schema, name = _names(target, default_schema)
        tx.comment_on_view(schema, name, text)
    elif kind == "COLUMN":
        parts = [p.name for p in target.parts]
        if len(parts) < 2:
            raise DDLError("COMMENT ON COLUMN needs table.column")
        schema = parts[-3] if len(parts) >= 3 else default_schema
        tx.comment_on_column(tx.table(schema, parts[-2]), parts[-1], text)
    else:
        raise DDLError(f"COMMENT ON {kind} is not supported on the lake")
