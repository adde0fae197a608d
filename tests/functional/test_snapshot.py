"""dbt-tests-adapter's snapshot suites, subclassed unchanged (the simple_snapshot variants
whose fixtures use PostgreSQL-only SQL such as `::text` are not wired in yet)."""

from __future__ import annotations

from dbt.tests.adapter.basic.test_snapshot_check_cols import BaseSnapshotCheckCols
from dbt.tests.adapter.basic.test_snapshot_timestamp import BaseSnapshotTimestamp
from dbt.tests.adapter.simple_snapshot.test_snapshot import BaseSnapshotCheck


class TestSnapshotCheckCols(BaseSnapshotCheckCols):
    pass


class TestSnapshotTimestamp(BaseSnapshotTimestamp):
    pass


class TestSnapshotCheck(BaseSnapshotCheck):
    pass
