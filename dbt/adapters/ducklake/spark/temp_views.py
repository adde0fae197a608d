"""Spark temporary views a statement drops (dbt stages every incremental build's new rows
as one), dropped the cheap way when that is the same."""

from __future__ import annotations

from py4j.protocol import Py4JError
from pyspark.sql import SparkSession
from sqlglot import exp

__all__ = ["drop_temp_view_here", "dropped_views"]


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
