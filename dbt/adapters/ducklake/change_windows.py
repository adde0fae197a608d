"""`ducklake_changes_since_last_build(relation)`: which part of an upstream table's
change feed a model build reads, and the record that makes it exactly once.

A build reads the upstream's changes after the snapshot its model last consumed, up to
the snapshot current when the model compiles. The consumed snapshot (and the
upstream's table id) is written into the commit extra info of the snapshot that
writes the model's data, so a build that fails commits no position and the next
build reads the same window again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dbt.adapters.base import available
from dbt.adapters.base.relation import BaseRelation
from dbt_common.exceptions import DbtRuntimeError

from .checks import node_field
from .lake import extra_info_fields, qualified_name

if TYPE_CHECKING:
    from .lake import Lake

# the commit extra info key: {model "schema.name": {upstream "schema.name": [table uuid, snapshot]}}
CONSUMED = "changes_consumed"


@dataclass(frozen=True)
class Position:
    table_uuid: str  # kept when an atomic build's ids are renumbered on publish
    snapshot_id: int


def last_consumed(lake: Lake, schema: str, name: str) -> dict[str, Position] | None:
    """What the newest build of `schema.name` consumed, per upstream; None when the
    table was (re)created since without a record (a rebuild that did not use the feed).
    When expiry took both the record and the table's creation, nobody can say."""
    model = _key(schema, name)
    created = f"created_table:{qualified_name(schema, name)}".lower()
    for snapshot in reversed(lake.table_history(schema, name)):
        extra = snapshot.extra_info
        record = extra.get(CONSUMED, {}).get(model) if isinstance(extra, dict) else None
        if isinstance(record, dict):
            return {up: Position(str(p[0]), int(p[1])) for up, p in record.items()}
        if any(f"{c.kind}:{c.value}".lower() == created for c in snapshot.changes):
            return None
    raise DbtRuntimeError(
        f"model {schema}.{name}: the snapshots that recorded which upstream changes it "
        "consumed were expired, so its next window is unknown. Rebuild the model with "
        "--full-refresh"
    )


def _key(schema: str, name: str) -> str:
    return f"{schema}.{name}".lower()


def _check_window(lake: Lake, upstream: str, model: str, since: int, end: int) -> None:
    """The consumed snapshot and every one after it up to `end` must still exist: the
    rows an expired snapshot saw, and the files the window's changes ended, may be gone."""
    kept = set(lake.kept_snapshot_ids(since, end))
    missing = [i for i in range(since, end + 1) if i not in kept]
    if missing:
        shown = ", ".join(map(str, missing[:5])) + (", …" if len(missing) > 5 else "")
        raise DbtRuntimeError(
            f"model {model}: the changes of {upstream} since snapshot {since}, which this "
            f"model last consumed, cannot be read: snapshot(s) {shown} were expired. "
            "Rebuild the model from the upstream's current rows with --full-refresh"
        )


def published_positions(stage: Lake, plans: Sequence[Any], published: int) -> dict[str, Any]:
    """The feed positions an atomic build's models consumed, in the real lake's ids,
    for the extra info of the snapshot publishing them (`published`). A model read an
    upstream at a snapshot of the staging copy: that is the published snapshot if the
    build changed the upstream up to then, else the snapshot the copy was made from."""
    merged: dict[str, dict[str, list[Any]]] = {}
    for plan in plans:
        record = extra_info_fields(plan.extra_info).get(CONSUMED, {})
        for model, read in record.items():
            merged.setdefault(model, {}).update(read)
    base = stage.staged_from
    if not merged or base is None:
        return {}
    later = stage.snapshots(since=base)
    ids_of: dict[str, set[str]] = {}
    for table in stage.catalog().tables():
        ids_of.setdefault(table.table_uuid, set()).add(str(table.table_id))
    for read in merged.values():
        for upstream, (uuid, at) in list(read.items()):
            ids = ids_of.get(uuid, set())
            when = {s.snapshot_id for s in later if any(c.value in ids for c in s.changes)}
            # changed again after the read: keep the copy's base (read again, never lost)
            whole = bool(when) and max(when) <= at
            read[upstream] = [uuid, published if whole else min(at, base)]
    return {CONSUMED: merged}


class ChangeFeedWindows:
    """Mixed into the adapter: the windows of `ducklake_changes_since_last_build`."""

    # dbt's adapter metaclass reads a base's `_available_`, not its decorated methods
    _available_ = frozenset({"changes_since_last_build", "consumed_changes", "last_changes_here"})

    if TYPE_CHECKING:

        def _handle(self) -> Any: ...  # environment.LakeHandle (which imports atomic.py)

        config: Any

    _pending_positions: dict[str, dict[str, list[Any]]]
    _records: dict[tuple[int, str, int], dict[str, Position] | None]

    @available
    def changes_since_last_build(
        self, model: Any, upstream: BaseRelation, incremental: bool
    ) -> dict[str, Any]:
        """The window of `upstream`'s feed this build of `model` reads: `mode` "changes"
        (start..end), "none" (nothing new) or "all" (every current row as an insert:
        first build, full refresh, or no record for this upstream)."""
        lake = self._handle().lake
        default_schema = self.config.credentials.schema
        up_schema = upstream.schema or default_schema
        up_name = upstream.identifier or ""
        target = (node_field(model, "schema") or default_schema, node_field(model, "alias") or "")
        model_name = f"{target[0]}.{target[1]}"
        cat = lake.catalog()
        found = cat.find_table(up_schema, up_name)
        if found is None:
            raise DbtRuntimeError(
                f"model {model_name}: ducklake_changes_since_last_build({up_schema}.{up_name}): "
                "no such lake table (views have no change feed)"
            )
        end = cat.snapshot_id
        up_key = _key(up_schema, up_name)
        pending = self.__dict__.setdefault("_pending_positions", {})
        pending.setdefault(node_field(model, "unique_id"), {})[up_key] = [found.table_uuid, end]
        record = self._last_consumed(lake, target, end) if incremental else None
        position = (record or {}).get(up_key)
        if position is None:
            return {"mode": "all", "end": end}
        if position.table_uuid != found.table_uuid:
            raise DbtRuntimeError(
                f"model {model_name}: {up_schema}.{up_name} was replaced (dropped and created "
                f"again, e.g. a table model's rebuild) after snapshot {position.snapshot_id}, "
                "which this model last consumed; its change feed cannot express that. "
                "Rebuild the model with --full-refresh"
            )
        if position.snapshot_id >= end:
            return {"mode": "none", "end": end}
        _check_window(lake, f"{up_schema}.{up_name}", model_name, position.snapshot_id, end)
        return {"mode": "changes", "start": position.snapshot_id + 1, "end": end}

    def _last_consumed(
        self, lake: Lake, target: tuple[str, str], end: int
    ) -> dict[str, Position] | None:
        """`last_consumed`, walked once per model and lake snapshot (a model reading
        several upstreams asks once for each)."""
        records = self.__dict__.setdefault("_records", {})
        key = (id(lake), f"{target[0]}.{target[1]}", end)
        if key not in records:
            records[key] = last_consumed(lake, *target)
        return records[key]

    @available
    def consumed_changes(self, model: Any) -> dict[str, Any]:
        """Commit extra info for the snapshot that writes `model`'s rows: the feed
        positions its SQL read."""
        read = getattr(self, "_pending_positions", {}).get(node_field(model, "unique_id"))
        if not read:
            return {}
        schema = node_field(model, "schema") or self.config.credentials.schema
        return {CONSUMED: {_key(schema, node_field(model, "alias") or ""): read}}

    @available
    def last_changes_here(self, feed_view: str, view: str, keys: list[str]) -> bool:
        """apply_changes' last change per key of the feed in temporary view `feed_view`,
        as temporary view `view`, ranked on the driver when its rows are there
        (spark/last_changes.py); False when the macro's SQL must rank them."""
        from .spark.last_changes import rank_here

        handle = self._handle()
        return rank_here(handle.spark, feed_view, view, keys)
