"""A node whose post-hooks run inside its transaction builds into a copy of the catalog.

dbt runs a node's post-hooks inside the node's transaction: a failing one undoes the
node. The hooks are ordinary statements that may read and change what the node just
wrote (a DELETE on `this` after a MERGE), which a BEGIN … COMMIT block, reading the lake
as of BEGIN, cannot serve. So the node's statements and its hooks commit one by one into
a staging copy of the catalog (lake/staging_copy.py, the machinery of `publish: atomic`), where
each sees the ones before, and dbt's commit publishes them as one snapshot of the real
catalog (lake/publish.py). A failure before that publishes nothing and removes the
files the node wrote. Maintenance calls (compaction, flushing) cannot be staged; in a
post-hook they run right after the publish, each its own snapshot as always.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from pyspark.sql import DataFrame

from .lake import Lake, Snapshot, drop_stage, open_stage, publish, remove_staged_files, staged_plans
from .spark.sql import LakeSQL


class StagedNode:
    """The staging copy of one node's build and the statements to run once published."""

    def __init__(self, home: LakeSQL):
        self.home = home
        self.stage: Lake = open_stage(home.lake, f"node{uuid.uuid4().hex[:12]}")
        self.sql = LakeSQL(
            home.spark,
            self.stage,
            default_schema=home.default_schema,
            catalog_name=home.catalog_name,
            commit=home.commit,
        )
        self.after_publish: list[tuple[str, str]] = []  # (function, CALL statement)

    def publish(self, log: Callable[[str], None]) -> Snapshot | None:
        """The node's staged commits as one snapshot of the real catalog (its commit
        info is the node's), then the deferred maintenance calls; the copy is dropped
        either way, and on failure the files the node wrote are removed."""
        plans = staged_plans(self.stage)
        commit = self.sql.commit
        try:
            snapshot = publish(
                self.home.lake,
                self.stage,
                plans,
                author=commit.author,
                message=commit.message,
                extra_info=commit.extra_info,
            )
        except Exception:
            self.discard()
            raise
        drop_stage(self.stage)
        self.home.commit = commit
        for function, statement in self.after_publish:
            result = self.home.execute(statement)
            rows = result.collect() if isinstance(result, DataFrame) else []
            log(f"{function}: {len(rows)} row(s)")
            for row in rows:
                log("  " + "  ".join(str(v) for v in row))
        return snapshot

    def discard(self) -> list[str]:
        """Nothing of the node is published: its files are removed and the copy dropped;
        returns the files the storage refused to remove (orphans for later cleanup)."""
        try:
            _removed, left = remove_staged_files(self.stage)
        finally:
            drop_stage(self.stage)
        return left
