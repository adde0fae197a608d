"""dbt snapshots with `strategy='changes'`: stage one run's versions from the source's
change feed as Spark temporary views the snapshot materialization merges in one
DuckLake snapshot; the source snapshot consumed is kept in that snapshot's
commit_extra_info (`cdc_source_snapshot`), where the next run starts."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dbt.adapters.events.logging import AdapterLogger
from dbt_common.exceptions import DbtRuntimeError

from .environment import LakeHandle
from .lake import extra_info_fields
from .spark.errors import CdcError

logger = AdapterLogger("DuckLake")
CONSUMED = "cdc_source_snapshot"


def consumed_snapshot(target_history: Iterable[Any]) -> int | None:
    """The source snapshot the newest run of this snapshot consumed."""
    for s in sorted(target_history, key=lambda s: s.snapshot_id, reverse=True):
        extra = extra_info_fields(s.commit_extra_info)
        if CONSUMED in extra:
            return int(extra[CONSUMED])
    return None


def plan_changes_snapshot(
    handle: LakeHandle,
    node_name: str,
    identifier: str,
    compiled_sql: str,
    unique_key: Any,
    column_names: dict[str, str] | None,
    since: int | None,
    default_schema: str,
) -> dict[str, Any] | None:
    from .spark.cdc import SnapshotColumns, changes_batch, source_of  # the Spark layer

    keys = [unique_key] if isinstance(unique_key, str) else list(unique_key or [])
    renamed = {k.removeprefix("dbt_"): v for k, v in (column_names or {}).items()}
    names = SnapshotColumns(
        **{
            k: v
            for k, v in renamed.items()
            if k in ("scd_id", "updated_at", "valid_from", "valid_to")
        }
    )
    try:
        source = source_of(compiled_sql)
        batch = changes_batch(handle.spark, handle.lake, source, default_schema, keys, since, names)
    except CdcError as exc:
        raise DbtRuntimeError(f"snapshot {node_name}: {exc}") from exc
    if batch is None:
        logger.info(f"snapshot {node_name}: no change to the source since snapshot {since}")
        return None
    stem = f"{identifier}__dbt_cdc"
    batch.new_versions.createOrReplaceTempView(f"{stem}_new")
    if batch.closes is not None:
        batch.closes.createOrReplaceTempView(f"{stem}_close")
    m = batch.metrics
    logger.info(
        f"snapshot {node_name}: source snapshots {since if since is not None else 'start'}.."
        f"{batch.source_snapshot}, reading {m.files_read} file(s) and {m.inlined_rows} "
        f"inlined row(s), {m.rows_read} row(s) in all"
    )
    return {
        "source_snapshot": batch.source_snapshot,
        "new_view": f"{stem}_new",
        "close_view": f"{stem}_close" if batch.closes is not None else None,
        "columns": list(batch.new_versions.columns),
        "valid_to": names.valid_to,
        "keys": keys,
        "rows_read": m.rows_read,
    }
