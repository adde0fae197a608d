"""Spark temporary views a statement creates or drops (dbt stages every incremental
build's new rows as one), registered and dropped the cheap way when that is the same.

`CREATE OR REPLACE TEMPORARY VIEW v AS <query>` keeps the query's text: every later use
of `v` parses and analyzes it again (~10 ms, and ~17 ms more when the view is planned,
for a change feed's model), and creating it costs ~9 ms more than registering the
analyzed query, which later uses read as it is (`DataFrame.createOrReplaceTempView`).
A view of a column list or other clauses, one whose query reads a view of its own name,
or with two columns of one name (refused by Spark's CREATE VIEW) is left to the SQL.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from py4j.protocol import Py4JError
from pyspark.sql import SparkSession
from sqlglot import exp

__all__ = ["create_temp_view", "drop_temp_view_here", "dropped_views"]

# the text before a plain view's query: dbt's leading comment, CREATE OR REPLACE
# TEMPORARY VIEW and the view's name
_PLAIN_VIEW = re.compile(
    r"\s*(?:/\*.*?\*/\s*|--[^\n]*\n\s*)*create\s+or\s+replace\s+temp(?:orary)?\s+view\s+"
    r"(?:`(?:[^`]|``)+`|\w+)\s+as\b",
    re.IGNORECASE | re.DOTALL,
)


def create_temp_view(
    spark: SparkSession, text: str, tree: exp.Expression, rewrite: Callable[[], str]
) -> bool:
    """Register the plain temporary view `text` (parsed as `tree`) creates from its
    analyzed query (`rewrite()`: `text` with lake references resolved); False, with
    nothing done, for any other view."""
    name = _plain_view_name(tree)
    head = _PLAIN_VIEW.match(text)
    if name is None or head is None:
        return False
    rewritten = rewrite()
    if rewritten[: head.end()] != text[: head.end()]:  # only the query may be rewritten
        return False
    query = spark.sql(rewritten[head.end() :])
    columns = [c.lower() for c in query.columns]
    if len(set(columns)) != len(columns):
        return False
    query.createOrReplaceTempView("`" + name.replace("`", "``") + "`")  # a name, parsed
    return True


def _plain_view_name(tree: exp.Expression) -> str | None:
    """The name of `CREATE OR REPLACE TEMPORARY VIEW name AS query` with no other clause,
    whose query reads no relation of that name."""
    if not isinstance(tree, exp.Create) or not tree.args.get("replace"):
        return None
    properties = tree.args.get("properties")
    others = [p for p in (properties.expressions if properties else []) if not _temporary(p)]
    target = tree.this
    if others or not isinstance(target, exp.Table) or target.db or tree.expression is None:
        return None
    name = target.name
    if any(t.name.lower() == name.lower() for t in tree.expression.find_all(exp.Table)):
        return None
    return name


def _temporary(p: exp.Expression) -> bool:
    return isinstance(p, exp.TemporaryProperty)


def dropped_views(tree: exp.Expression) -> list[exp.Table] | None:
    """The views a `DROP VIEW` names; None for any other statement."""
    if not isinstance(tree, exp.Drop) or str(tree.args.get("kind") or "").upper() != "VIEW":
        return None
    return list(tree.args.get("tables") or [tree.this])


def drop_temp_view_here(spark: SparkSession, tree: exp.Expression) -> bool:
    """`DROP VIEW [IF EXISTS] name` of a temporary view, dropped by the session catalog
    when nothing is cached (so no cached plan can read the view): the Catalog API's
    uncache pass and a lookup before it cost ~5 ms a view, three views a model build.
    False, with nothing dropped, for anything else."""
    tables = dropped_views(tree)
    if tables is None or len(tables) != 1 or tables[0].db:
        return False
    session = getattr(spark, "_jsparkSession", None)  # classic PySpark only
    try:
        if session is None or not session.sharedState().cacheManager().isEmpty():
            return False
        return bool(session.sessionState().catalog().dropTempView(tables[0].name))
    except Py4JError:  # another Spark's internals: the Catalog API drops it
        return False
