"""The last change of each key in a change feed, ranked on the driver.

`incremental_strategy='apply_changes'` MERGEs the last change per `unique_key` of the
window its model read (apply_changes.sql ranks them with `row_number()`). When the feed's
rows are on the driver already (a window `driver_changes` read, which Spark folds the
model's projections and filters into: a `LocalRelation`), that window function is a Spark
job of a shuffle and a sort for a few thousand rows, ~0.2-0.3 s of a build that is
otherwise decided on the driver (driver_merge). Here the same ranking runs where the rows
are, in the driver's JVM (the adapter's `ducklake.jvm.LastChanges`, one py4j call that
also finds the feed, checks it and registers the result), or, without the adapter's
classes, with pyarrow after collecting them (~80 ms more for 20,000 rows: they cross py4j
out and back); the result is again a `LocalRelation`, so the MERGE reads its source
without a job. Anything else (rows Spark computes, keys of other types, Spark 3.5 or
Connect) returns False and the macro's SQL ranks them."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc
from py4j.protocol import Py4JError
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from .compat import builds_from_arrow
from .driver_merge import DRIVER_SOURCE_BYTES
from .encrypted import has_engine_classes
from .gc_pause import collection_paused
from .held_rows import held_here
from .types import binary_text
from .write import collect_arrow

__all__ = ["ADDS", "RANK", "REMOVED", "rank_here"]

log = logging.getLogger("dbt.adapters.ducklake.spark")

ADDS = ("insert", "update_postimage")  # change types whose row is the key's new value
REMOVED = "ducklake_removed"  # the macro's names for the columns it adds
RANK = "ducklake_change_rank"
# key types whose equality is the same in pyarrow, Java and Spark (no NaN, -0.0; strings
# compared by their bytes, see `_keyable`)
_KEY_TYPES = (T.IntegralType, T.StringType, T.BooleanType)


@collection_paused()
def rank_here(spark: SparkSession, feed_view: str, view: str, keys: Sequence[str]) -> bool:
    """Register `view` as `feed_view`'s rows plus `ducklake_removed` and
    `ducklake_change_rank`, keeping only each key's last change (the latest snapshot;
    within it an add before a removal; then the highest `rowid`, when the feed has one),
    as apply_changes.sql's SQL ranks them; False, with nothing registered, when the rows
    are not on the driver or a key is of a type compared otherwise here."""
    if not builds_from_arrow(spark):
        return False
    ranked_in_jvm = _ranked_in_jvm(spark, feed_view, view, keys)
    if ranked_in_jvm is not None:
        if ranked_in_jvm:
            log.debug("%s: last change per key ranked in the driver's JVM", view)
        return ranked_in_jvm
    feed = spark.table("`" + feed_view.replace("`", "``") + "`")
    names = {f.name.lower(): f for f in feed.schema.fields}
    fields = [names.get(k.lower()) for k in keys]
    if not fields or any(f is None or not _keyable(f.dataType) for f in fields):
        return False
    if "snapshot_id" not in names or "change_type" not in names:
        return False
    if not held_here(feed, DRIVER_SOURCE_BYTES):
        return False
    data = collect_arrow(feed)
    if data is None:
        return False
    key_names = [f.name for f in fields if f is not None]
    ranked = _last_per_key(data, key_names, names.get("rowid"))
    schema = T.StructType(
        [
            *feed.schema.fields,
            T.StructField(REMOVED, T.BooleanType()),
            T.StructField(RANK, T.IntegerType(), False),
        ]
    )
    spark.createDataFrame(ranked, schema).createOrReplaceTempView(view)
    log.debug("%s: last change of %d key(s) ranked on the driver", view, ranked.num_rows)
    return True


def _keyable(kind: T.DataType) -> bool:
    """Whether a key of this type is grouped here as Spark's window partitions it."""
    if isinstance(kind, T.StringType):  # a collation (UTF8_LCASE, ...) groups otherwise
        return binary_text(kind)
    return isinstance(kind, _KEY_TYPES)


def _ranked_in_jvm(
    spark: SparkSession, feed_view: str, view: str, keys: Sequence[str]
) -> bool | None:
    """Whether `ducklake.jvm.LastChanges` ranked the feed into `view` (it checks the
    same as the pyarrow ranking, and that `snapshot_id` and `rowid` are BIGINTs and
    `change_type` text); None without the adapter's classes. One py4j call: the feed's
    lookup, its plan, the checks and the view's registration stay in the JVM."""
    if not has_engine_classes(spark) or any("\0" in k for k in keys):
        return None
    jvm = spark._jvm
    assert jvm is not None
    try:
        done = jvm.ducklake.jvm.LastChanges.rankHeld(
            spark._jsparkSession,
            feed_view,
            view,
            "\0".join(keys),
            DRIVER_SOURCE_BYTES,
            REMOVED,
            RANK,
        )
    except (Py4JError, TypeError):  # an older jar: no such method (pyarrow ranks them)
        return None
    return bool(done)


def _last_per_key(data: pa.Table, keys: list[str], rowid: T.StructField | None) -> pa.Table:
    """The first row of each key once sorted by the key, then `snapshot_id`, adds before
    removals and `rowid`, all descending; NULL keys are one key, as in a window's
    partition."""
    change = data.column("change_type")
    adds = pc.is_in(change, value_set=pa.array(ADDS))
    removed = pc.if_else(pc.is_null(change), pa.scalar(None, pa.bool_()), pc.invert(adds))
    data = data.append_column("__adds", adds)
    order = [(k, "ascending") for k in keys]
    order += [("snapshot_id", "descending"), ("__adds", "descending")]
    if rowid is not None:
        order.append((rowid.name, "descending"))
    at = pc.sort_indices(data, sort_keys=order)  # NULLs at the end
    data = data.take(at).append_column(REMOVED, removed.take(at)).drop_columns(["__adds"])
    first = _starts(data, keys)
    kept = data.filter(first)
    return kept.append_column(RANK, pa.array([1] * kept.num_rows, pa.int32()))


def _starts(data: pa.Table, keys: list[str]) -> pa.Array:
    """Per row of `data` (sorted by `keys`): whether it starts a new key."""
    n = data.num_rows
    if n == 0:
        return pa.array([], pa.bool_())
    new = pa.array([False] * (n - 1), pa.bool_())
    for k in keys:
        values = data.column(k).combine_chunks()
        before, after = values.slice(0, n - 1), values.slice(1)
        differ = pc.fill_null(pc.not_equal(after, before), False)
        nulls = pc.not_equal(pc.is_null(after), pc.is_null(before))
        new = pc.or_(new, pc.or_(differ, nulls))
    return pa.concat_arrays([pa.array([True]), new])
