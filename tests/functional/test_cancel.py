"""Ctrl-C on `dbt run`: dbt cancels the open connections, the running model's Spark job
is cancelled (not left running, not killed with the JVM), and nothing commits.

dbt runs in its own process group, as in a terminal, and the whole group gets SIGINT.
pyspark starts the JVM ignoring SIGINT, so only the adapter's cancel can stop the job;
Spark's event log shows how the job ended.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from dbt.adapters.ducklake.lake import Lake

# about 50 s per partition unless cancelled: each row sleeps 50 ms inside the job
SLOW = (
    "{{ config(materialized='table') }}\n"
    "select cast(id as int) as id, "
    "concat('slow', reflect('java.lang.Thread', 'sleep', cast(50 as bigint))) as name "
    "from range(0, 2000, 1, 2)"
)

# a dbt process interrupted at a measured moment, then timed
pytestmark = [pytest.mark.slow, pytest.mark.serial]


def test_ctrl_c_cancels_the_running_job_and_commits_nothing(tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / "models").mkdir(parents=True)
    (root / "events").mkdir()
    (root / "dbt_project.yml").write_text('name: cancel\nversion: "1.0"\nprofile: cancel\n')
    (root / "models" / "slow.sql").write_text(SLOW)
    (root / "profiles.yml").write_text(
        f"""
cancel:
  target: t
  outputs:
    t:
      type: ducklake
      metadata: sqlite:///{root}/lake.sqlite
      data_path: {root}/data
      schema: s
      threads: 1
      spark_master: local[2]
      spark_keep_alive: 0
      spark_conf:
        spark.ui.enabled: "false"
        spark.eventLog.enabled: "true"
        spark.eventLog.dir: {root / "events"}
        spark.eventLog.compress: "false"
"""
    )
    dbt = str(Path(sys.executable).with_name("dbt"))
    proc = subprocess.Popen(
        [dbt, "run", "--project-dir", str(root), "--profiles-dir", str(root)],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, like a terminal's job
    )
    lines: list[str] = []
    started = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if "START sql table model s.slow" in line:
                started.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert started.wait(120), "".join(lines)
        # planning or the first job: either way no job of the model may finish
        time.sleep(2)
        os.killpg(proc.pid, signal.SIGINT)
        interrupted = time.monotonic()
        proc.wait(timeout=60)
        stopped_in = time.monotonic() - interrupted
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    reader.join(timeout=10)
    output = "".join(lines)
    assert proc.returncode != 0, output
    assert "CANCEL query model.cancel.slow" in output, output
    # the job had ~45 s left: stopping well before proves it was cancelled
    assert stopped_in < 20, (stopped_in, output)

    # Spark's own record: the job ended as cancelled with its job group
    events = [
        json.loads(line)
        for path in (root / "events").rglob("*")
        if path.is_file()
        for line in path.read_text().splitlines()
        if line.startswith("{")
    ]
    ends = [e for e in events if e.get("Event") == "SparkListenerJobEnd"]
    failed = [e["Job Result"] for e in ends if e["Job Result"].get("Result") == "JobFailed"]
    assert any("cancel" in json.dumps(r).lower() for r in failed), ends

    lake = Lake.open(f"sqlite:///{root}/lake.sqlite")
    assert lake.catalog().find_table("s", "slow") is None
    for snapshot in lake.snapshots():
        assert "slow" not in str(snapshot.changes) + str(snapshot.commit_message), snapshot
