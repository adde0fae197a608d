"""dbt-tests-adapter hooks suites, subclassed: model, seed and snapshot pre/post hooks
(in the project, in config, as kwargs, with refs, counted), on-run-start/end, duplicate
hook configs. Overrides only where the suites hard-code PostgreSQL: the hook table read
with double-quoted identifiers (Spark reads `"x"` as a string literal) and checked
against the PostgreSQL test profile (type postgres, dbname dbt, user root, 4 threads);
`vacuum` as the `transaction: false` hook (DuckLake's counterpart runs instead); the
suites' SQL files, looked for next to this module (read from the suite's package)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dbt.tests.adapter.hooks import fixtures as hook_fixtures
from dbt.tests.adapter.hooks.test_model_hooks import (
    MODEL_POST_HOOK,
    MODEL_PRE_HOOK,
    BaseDuplicateHooksInConfigs,
    BaseHookRefs,
    BaseHooksRefsOnSeeds,
    BasePrePostModelHooks,
    BasePrePostModelHooksInConfig,
    BasePrePostModelHooksInConfigKwargs,
    BasePrePostModelHooksInConfigWithCount,
    BasePrePostModelHooksOnSeeds,
    BasePrePostModelHooksOnSeedsPlusPrefixed,
    BasePrePostModelHooksOnSeedsPlusPrefixedWhitespace,
    BasePrePostModelHooksOnSnapshots,
    BasePrePostSnapshotHooksInConfigKwargs,
)
from dbt.tests.adapter.hooks.test_run_hooks import BaseAfterRunHooks, BasePrePostRunHooks

pytestmark = pytest.mark.usefixtures("without_json_artifacts")  # reads no dbt JSON artifact

FIELDS = [
    "test_state",
    "target_dbname",
    "target_host",
    "target_name",
    "target_schema",
    "target_threads",
    "target_type",
    "target_user",
    "target_pass",
    "run_started_at",
    "invocation_id",
    "thread_id",
]


def _rows(project: Any, table: str, state: str) -> list[dict[str, Any]]:
    field_list = ", ".join(f"`{f}`" for f in FIELDS)
    query = f"select {field_list} from {project.test_schema}.{table} where test_state = '{state}'"
    return [dict(zip(FIELDS, row, strict=True)) for row in project.run_sql(query, fetch="all")]


def _check_ctx(ctx: dict[str, Any], state: str, project: Any, target: dict[str, Any]) -> None:
    """The suites' assertions, each against this profile's value instead of PostgreSQL's."""
    assert ctx["test_state"] == state
    assert ctx["target_dbname"] == ""  # the suites' profile has dbname; this one has none
    assert ctx["target_host"] == target.get("host", "")
    assert ctx["target_name"] == "default"
    assert ctx["target_schema"] == project.test_schema
    assert ctx["target_threads"] == target["threads"]
    assert ctx["target_type"] == "ducklake"
    assert ctx["target_user"] == ""
    assert ctx["target_pass"] == ""
    assert ctx["run_started_at"], "run_started_at was not set"
    assert ctx["invocation_id"], "invocation_id was not set"


@pytest.fixture(scope="module")
def test_data_dir() -> Path:
    """The suites' own SQL files (seed_model.sql, seed_run.sql), which dbt's default
    fixture looks for next to this file."""
    return Path(hook_fixtures.__file__).parent / "data"


class ModelHookProfileValues:
    # the suites read with double-quoted identifiers and expect the PostgreSQL profile
    def get_ctx_vars(self, state, count, project):
        vals = _rows(project, "on_model_hook", state)
        assert len(vals) != 0, "nothing inserted into hooks table"
        assert len(vals) >= count, "too few rows in hooks table"
        assert len(vals) <= count, "too many rows in hooks table"
        return vals

    def check_hooks(self, state, project, host, count=1):
        for ctx in self.get_ctx_vars(state, count=count, project=project):
            _check_ctx(ctx, state, project, project.adapter.config.to_target_dict())
            assert ctx["thread_id"].startswith("Thread-")


# the suites' `transaction: false` hooks run PostgreSQL's VACUUM; this is DuckLake's
VACUUM = {"sql": "{{ ducklake_merge_adjacent_files(this.schema ~ '.on_model_hook') }}"}
HOOKS_WITH_VACUUM = {
    "pre-hook": [MODEL_PRE_HOOK, {**VACUUM, "transaction": False}],
    "post-hook": [{**VACUUM, "transaction": False}, MODEL_POST_HOOK],
}


class TestPrePostModelHooks(ModelHookProfileValues, BasePrePostModelHooks):
    # the suite's project config with VACUUM in DuckLake's words (see VACUUM)
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": {"test": HOOKS_WITH_VACUUM}}


class TestPrePostModelHooksInConfig(ModelHookProfileValues, BasePrePostModelHooksInConfig):
    pass


class TestPrePostModelHooksInConfigKwargs(
    ModelHookProfileValues, BasePrePostModelHooksInConfigKwargs
):
    pass


class TestPrePostModelHooksInConfigWithCount(
    ModelHookProfileValues, BasePrePostModelHooksInConfigWithCount
):
    # the suite's project config with VACUUM in DuckLake's words (see VACUUM)
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": {"test": HOOKS_WITH_VACUUM}}


class TestHookRefs(ModelHookProfileValues, BaseHookRefs):
    pass


class TestPrePostModelHooksOnSeeds(BasePrePostModelHooksOnSeeds):
    pass


class TestPrePostModelHooksOnSeedsPlusPrefixed(BasePrePostModelHooksOnSeedsPlusPrefixed):
    pass


class TestPrePostModelHooksOnSeedsPlusPrefixedWhitespace(
    BasePrePostModelHooksOnSeedsPlusPrefixedWhitespace
):
    pass


class TestPrePostModelHooksOnSnapshots(BasePrePostModelHooksOnSnapshots):
    pass


class TestPrePostSnapshotHooksInConfigKwargs(BasePrePostSnapshotHooksInConfigKwargs):
    pass


class TestHooksRefsOnSeeds(BaseHooksRefsOnSeeds):
    pass


class TestDuplicateHooksInConfigs(BaseDuplicateHooksInConfigs):
    pass


class TestPrePostRunHooks(BasePrePostRunHooks):
    # the suite reads with double-quoted identifiers and expects the PostgreSQL profile
    def get_ctx_vars(self, state, project):
        vals = _rows(project, "on_run_hook", state)
        assert len(vals) != 0, "nothing inserted into on_run_hook table"
        assert len(vals) == 1, "too many rows in hooks table"
        return vals[0]

    def check_hooks(self, state, project, host):
        ctx = self.get_ctx_vars(state, project)
        _check_ctx(ctx, state, project, project.adapter.config.to_target_dict())
        assert ctx["thread_id"].startswith("Thread-") or ctx["thread_id"] == "MainThread"


class TestAfterRunHooks(BaseAfterRunHooks):
    pass
