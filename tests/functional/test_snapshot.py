"""dbt-tests-adapter's snapshot suites, subclassed unchanged. Not wired in:
BaseSnapshotDbtValidToCurrent, which reads rows by position from a query without ORDER BY
(PostgreSQL heap order) and so cannot hold for a merge-on-read table;
`TestSnapshotDbtValidToCurrentByKey` runs its project and history and checks the same
facts by key."""

from __future__ import annotations

import datetime
from datetime import timezone

import pytest
from dbt.tests.adapter.basic.test_snapshot_check_cols import BaseSnapshotCheckCols
from dbt.tests.adapter.basic.test_snapshot_timestamp import BaseSnapshotTimestamp
from dbt.tests.adapter.simple_snapshot.fixtures import (
    create_seed_sql,
    create_snapshot_expected_sql,
    invalidate_sql,
    populate_snapshot_expected_valid_to_current_sql,
    seed_insert_sql,
    update_with_current_sql,
)
from dbt.tests.adapter.simple_snapshot.new_record_check_mode import (
    BaseSnapshotNewRecordCheckMode,
)
from dbt.tests.adapter.simple_snapshot.new_record_dbt_valid_to_current import (
    BaseSnapshotNewRecordDbtValidToCurrent,
)
from dbt.tests.adapter.simple_snapshot.new_record_timestamp_mode import (
    BaseSnapshotNewRecordTimestampMode,
)
from dbt.tests.adapter.simple_snapshot.test_snapshot import BaseSimpleSnapshot, BaseSnapshotCheck
from dbt.tests.adapter.simple_snapshot.test_various_configs import (
    BaseSnapshotColumnNames,
    BaseSnapshotColumnNamesFromDbtProject,
    BaseSnapshotDbtValidToCurrent,
    BaseSnapshotInvalidColumnNames,
    BaseSnapshotMultiUniqueKey,
)
from dbt.tests.util import check_relations_equal, run_dbt

pytestmark = pytest.mark.usefixtures("without_json_artifacts")  # reads no dbt JSON artifact


@pytest.mark.slow  # about 30 s of snapshot runs: left out of --fast
class TestSnapshotCheckCols(BaseSnapshotCheckCols):
    pass


class TestSnapshotTimestamp(BaseSnapshotTimestamp):
    pass


class TestSimpleSnapshot(BaseSimpleSnapshot):
    pass


class TestSnapshotCheck(BaseSnapshotCheck):
    pass


class TestSnapshotColumnNames(BaseSnapshotColumnNames):
    pass


class TestSnapshotColumnNamesFromDbtProject(BaseSnapshotColumnNamesFromDbtProject):
    pass


class TestSnapshotInvalidColumnNames(BaseSnapshotInvalidColumnNames):
    pass


class TestSnapshotMultiUniqueKey(BaseSnapshotMultiUniqueKey):
    pass


@pytest.mark.slow  # about 30 s of snapshot runs: left out of --fast
class TestSnapshotNewRecordTimestampMode(BaseSnapshotNewRecordTimestampMode):
    pass


@pytest.mark.slow  # about 30 s of snapshot runs: left out of --fast
class TestSnapshotNewRecordCheckMode(BaseSnapshotNewRecordCheckMode):
    pass


class TestSnapshotNewRecordDbtValidToCurrent(BaseSnapshotNewRecordDbtValidToCurrent):
    pass


class TestSnapshotDbtValidToCurrentByKey(BaseSnapshotDbtValidToCurrent):
    """BaseSnapshotDbtValidToCurrent's fixtures and history; its row checks by key."""

    def test_valid_to_current(self, project) -> None:
        project.run_sql(create_seed_sql)
        project.run_sql(create_snapshot_expected_sql)
        project.run_sql(seed_insert_sql)
        project.run_sql(populate_snapshot_expected_valid_to_current_sql)
        assert len(run_dbt(["snapshot"])) == 1
        table = f"{project.test_schema}.snapshot_actual"
        utc = timezone.utc
        # TIMESTAMP columns are instants: fetched as aware UTC datetimes
        current = datetime.datetime(2099, 12, 31, 0, 0, tzinfo=utc)

        def valid_to() -> dict[tuple[int, str], datetime.datetime]:
            rows = project.run_sql(
                f"select id, test_scd_id, test_valid_to from {table}", fetch="all"
            )
            return {(r[0], r[1]): r[2] for r in rows}

        first = valid_to()
        assert first and set(first.values()) == {current}
        project.run_sql(invalidate_sql)
        project.run_sql(update_with_current_sql)
        assert len(run_dbt(["snapshot"])) == 1
        second = valid_to()
        changed = {k: v for k, v in second.items() if k in first and v != current}
        # ids 10-20 were updated: their old versions closed, new versions current
        assert sorted(i for i, _ in changed) == list(range(10, 21))
        assert len(second) == len(first) + 11
        assert all(v == current for k, v in second.items() if k not in first)
        # the version closed at 2016-08-20 16:44:49 in the suite's positional check
        assert datetime.datetime(2016, 8, 20, 16, 44, 49, tzinfo=utc) in changed.values()
        check_relations_equal(project.adapter, ["snapshot_actual", "snapshot_expected"])
