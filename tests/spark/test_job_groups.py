"""dbt's cancel (Ctrl-C) stops exactly the Spark jobs of one connection: each thread's
jobs are labelled with its connection's name."""

from __future__ import annotations

import os
import threading
import time

from dbt.adapters.ducklake.spark.session import cancel_jobs, label_jobs

# about 6 s per partition: each row sleeps 30 ms inside the job
SLOW = (
    "SELECT count(*) AS n FROM (SELECT reflect('java.lang.Thread', 'sleep', CAST(30 AS BIGINT)) "
    "AS s FROM range(0, 400, 1, 2)) WHERE length(coalesce(s, 'x')) > 0"
)


def test_cancel_stops_one_connections_jobs_only(spark) -> None:
    outcome: dict[str, object] = {}

    def run(group: str) -> None:
        label_jobs(spark, group, f"dbt {group}")
        try:
            outcome[group] = spark.sql(SLOW).first()
        except Exception as exc:  # the cancelled one
            outcome[group] = exc

    threads = {g: threading.Thread(target=run, args=(g,)) for g in ("model.a", "model.b")}
    for t in threads.values():
        t.start()
    tracker = spark.sparkContext.statusTracker()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(tracker.getActiveJobsIds()) < 2:
        time.sleep(0.05)
    group = f"dbt-{os.getpid()}-model.a"  # processes sharing a kept JVM tell theirs apart
    assert tracker.getJobIdsForGroup(group), "model.a's job carries its label"
    cancel_jobs(spark, "model.a")
    for t in threads.values():
        t.join(timeout=120)
    assert isinstance(outcome["model.a"], Exception) and "cancel" in str(outcome["model.a"]).lower()
    assert outcome["model.b"] is not None and not isinstance(outcome["model.b"], Exception)
    assert outcome["model.b"][0] == 400
