"""dbt runs on a standalone cluster and on Spark Connect whose executors have only
pyspark[sql]: the engine ships itself, and the lakes read in DuckDB exactly as the
same steps on local[2] leave them."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from dbt.adapters.ducklake.spark.shipping import engine_zip
from tests import duck
from tests.cluster.conftest import (
    ROOT,
    Project,
    cluster_target,
    connect_target,
    local_target,
    make_project,
)
from tests.cluster.lakes import assert_same_lakes
from tests.cluster.servers import Standalone, free_port
from tests.sizes import size

SAMPLE = ROOT / "sample_project"
STEPS = Path(__file__).resolve().parent / "steps_project"
# rows of the steps project's `big` model: enough for several tasks per stage in CI,
# 1M under `./dev test --full`
ROWS = size("DUCKLAKE_CLUSTER_ROWS", 200_000, 1_000_000)


def run_steps(project: Project) -> None:
    """Phase 1 builds; phase 2 merges 1%, deletes 1%, merges into the partitioned and
    sorted model and compacts it, and records changed dimensions in the snapshot."""
    project.build("--vars", f"{{phase: 1, rows: {ROWS}}}")
    project.build("--vars", f"{{phase: 2, rows: {ROWS}}}")


@pytest.fixture(scope="module")
def local_sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[Project, int]:
    folder = tmp_path_factory.mktemp("local") / "sample"
    project = make_project(SAMPLE, folder, "shop", local_target("shop"))
    return project, len(project.build().results)


@pytest.fixture(scope="module")
def local_steps(tmp_path_factory: pytest.TempPathFactory) -> Project:
    folder = tmp_path_factory.mktemp("local") / "steps"
    project = make_project(STEPS, folder, "steps", local_target("steps"))
    run_steps(project)
    return project


# on Spark Connect under --full only: tests/spark/test_connect.py covers Connect in CI
@pytest.fixture(params=["cluster", pytest.param("connect", marks=pytest.mark.full)])
def where(request: pytest.FixtureRequest) -> tuple[str, Any]:
    """How a profile reaches the cluster (standalone master or Connect server)."""
    if request.param == "cluster":
        cluster = request.getfixturevalue("standalone")
        python = request.getfixturevalue("executor_python")
        return "cluster", lambda schema: cluster_target(schema, cluster, python)
    server = request.getfixturevalue("connect_server")
    return "connect", lambda schema: connect_target(schema, server)


@pytest.mark.full  # the steps below cover the cluster path in CI
def test_sample_project_builds_and_matches_local(
    where, local_sample: tuple[Project, int], tmp_path: Path
) -> None:
    _, target = where
    local, nodes = local_sample
    project = make_project(SAMPLE, tmp_path / "sample", "shop", target("shop"))
    run = project.build()
    assert len(run.results) == nodes == 22  # seeds, models, snapshots and tests all passed
    compared = assert_same_lakes(local.duckdb_attach, project.duckdb_attach)
    assert len(compared) == 10, compared


@pytest.mark.full  # CI's budget: the engine zip on the executors' Python is checked below
def test_steps_on_executors_without_the_adapter_match_local(
    where, local_steps: Project, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    name, target = where
    project = make_project(STEPS, tmp_path / "steps", "steps", target("steps"))
    run_steps(project)
    compared = assert_same_lakes(local_steps.duckdb_attach, project.duckdb_attach)
    assert len(compared) == 5, compared
    con = duck.connect()
    duck.attach(con, project.duckdb_attach, alias="lake")
    big_merge = con.execute(
        "SELECT count(*), count(*) FILTER (WHERE name LIKE 'new%'), "
        "count(*) FILTER (WHERE id % 100 = 3) FROM lake.steps.big_merge"
    ).fetchone()
    # ROWS rows, 5,000 inserted by the MERGE, 1% deleted (the 50 new ids ending in 03 too)
    assert big_merge == (ROWS + 5_000 - ROWS // 100 - 50, 5_000 - 50, 0)
    changes = con.execute("SELECT changes FROM ducklake_snapshots('lake')").fetchall()
    assert any("merge_adjacent" in row[0] for row in changes), "parts was compacted"
    # tasks wrote Parquet files (not inlined rows) through the shipped engine
    files = con.execute(
        "SELECT count(*) FROM ducklake_list_files('lake', 'parts', schema => 'steps')"
    ).fetchone()
    assert files is not None and files[0] >= 4  # one per bucket at least
    if name == "cluster":
        cluster: Standalone = request.getfixturevalue("standalone")
        shipped = list(Path(cluster.workdir, "work").glob("app-*/*/dbt_ducklake_engine_*.zip"))
        assert shipped, "executors received the engine's zip"


def _executor_pids(app_dir: Path) -> list[int]:
    """The executor JVMs of one application, found by its id on their command line."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"org.apache.spark.executor.CoarseGrainedExecutorBackend" in argv and (
            app_dir.name.encode() in argv
        ):
            pids.append(int(proc.name))
    return pids


def _unfinished_tasks(executor_log: str) -> set[str]:
    """Task ids the executor's log shows running and not yet finished."""
    running = set(re.findall(r"Running task .*?\(TID (\d+)\)", executor_log))
    finished = set(re.findall(r"Finished task .*?\(TID (\d+)\)", executor_log))
    return running - finished


def _kill_inside_a_task(apps: Path, known: set[Path], running: subprocess.Popen[str]) -> int | None:
    """SIGKILL an executor of the new application while one task has been running on it
    across two looks 0.3 s apart (a write task of 4M rows: a short metadata job's task
    often finishes between the look and the kill, and then the kill hits an idle JVM)."""
    seen: set[str] = set()
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and running.poll() is None:
        for app in set(apps.glob("app-*")) - known:
            logs = [p.read_text(errors="replace") for p in app.glob("*/stderr")]
            unfinished = set().union(*(_unfinished_tasks(log) for log in logs))
            pids = _executor_pids(app)
            if unfinished & seen and pids:
                os.kill(pids[0], signal.SIGKILL)
                return pids[0]
            seen = unfinished
        time.sleep(0.3)
    return None


def _snapshot_and_rows(project: Project) -> tuple[Any, Any]:
    con = duck.connect()
    duck.attach(con, project.duckdb_attach, alias="lake")
    snapshot = con.execute("SELECT max(snapshot_id) FROM ducklake_snapshots('lake')").fetchone()
    query = "SELECT count(*), count(DISTINCT id), sum(id) FROM lake.steps.big"
    rows = con.execute(query).fetchone()
    con.close()
    return snapshot, rows


@pytest.mark.full  # test_crash_safety kills writers in CI; this kills an executor
def test_killing_an_executor_mid_write_commits_nothing_partial(
    standalone: Standalone, executor_python: str, tmp_path: Path
) -> None:
    target = cluster_target("steps", standalone, executor_python)
    target["spark_conf"]["spark.ui.port"] = str(free_port())
    project = make_project(STEPS, tmp_path / "steps", "steps", target)
    project.build("--select", "big", "--vars", f"rows: {ROWS}")
    spark_log = project.path / "logs" / "spark.log"
    apps = Path(standalone.workdir, "work")
    big = 2_000_000
    # the kill can still land between two tasks (then Spark only replaces the executor):
    # that run is checked like any other and the kill is tried again
    for attempt in range(3):
        before, before_rows = _snapshot_and_rows(project)
        log_size = spark_log.stat().st_size if spark_log.exists() else 0
        known = set(apps.glob("app-*"))
        running = subprocess.Popen(
            project.argv("run", "--select", "big", "--vars", f"rows: {big}"),
            cwd=project.path,
            env=project.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        killed = _kill_inside_a_task(apps, known, running)
        output, _ = running.communicate(timeout=600)
        assert killed is not None, f"no executor was seen running a task:\n{output[-4000:]}"
        print(f"attempt {attempt}: killed executor {killed}; dbt exited {running.returncode}")
        after, rows = _snapshot_and_rows(project)
        if running.returncode == 0:
            # Spark retried the lost tasks on a new executor: the whole new version, once
            assert rows == (big, big, big * (big - 1) // 2), output[-4000:]
            assert after is not None and before is not None and after[0] == before[0] + 1
        else:
            # the model failed: the lake is the previous version, no snapshot was written
            assert rows == before_rows, output[-4000:]
            assert after == before
        with spark_log.open("rb") as log:
            log.seek(log_size)
            if b"ExecutorLostFailure" in log.read():
                return
    pytest.fail("three kills in a row landed between tasks, never inside one")


def test_task_modules_load_from_the_shipped_zip_on_the_executors_python(
    executor_python: str, tmp_path: Path
) -> None:
    path = engine_zip()
    probe = (
        f"import sys; sys.path.insert(1, {path!r})\n"  # where pyspark's worker adds it
        "import dbt.adapters.ducklake.spark.write_task as w\n"
        "import dbt.adapters.ducklake.spark.delete_task, dbt.adapters.ducklake.spark.remove_task\n"
        "print(w.__file__)\n"
        "print(sorted(m.split('.')[0] for m in sys.modules if m.startswith(('dbt', 'sqlalchemy'))"
        " and not m.startswith(('dbt.adapters.ducklake',)) and m not in ('dbt', 'dbt.adapters')))"
    )
    done = subprocess.run(
        [executor_python, "-c", probe], capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    where_from, others = done.stdout.splitlines()
    assert where_from.startswith(path) and others == "[]"


@pytest.mark.parametrize("field", ["spark_master", "spark_remote"])
def test_an_unreachable_cluster_fails_the_run_within_30_s(field: str, tmp_path: Path) -> None:
    scheme = "spark" if field == "spark_master" else "sc"
    url = f"{scheme}://127.0.0.1:{free_port()}"  # nothing listens there
    project = make_project(STEPS, tmp_path / "steps", "steps", {"schema": "steps", field: url})
    run = project.dbt("run", "--select", "dims", timeout=120)
    assert run.returncode != 0
    assert run.seconds < 30, f"took {run.seconds:.0f} s"
    assert f"{url} is not reachable" in run.output, run.output[-3000:]


def test_a_lake_storing_a_relative_data_path_is_refused_off_this_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dbt_common.exceptions import DbtConfigError

    from dbt.adapters.ducklake.credentials import DucklakeCredentials
    from dbt.adapters.ducklake.environment import LakeHandle

    monkeypatch.chdir(tmp_path)
    con = duck.connect()  # DuckDB keeps the data path as given
    con.execute("ATTACH 'ducklake:sqlite:meta.sqlite' AS lake (DATA_PATH 'rel/data/')")
    con.execute("CREATE TABLE lake.t AS SELECT 1 AS a")
    con.close()
    profile = {"metadata": f"sqlite:///{tmp_path / 'meta.sqlite'}", "schema": "main"}
    credentials = DucklakeCredentials.from_dict({**profile, "spark_master": "spark://h:7077"})
    with pytest.raises(DbtConfigError, match="the lake's stored data_path 'rel/data/'"):
        LakeHandle(credentials)  # before any Spark session is asked for
