"""The prestart launches the driver JVM before pyspark is imported, and the session
connects to that JVM instead of starting another (driver_launch.py); a session asked
for other settings stops it and starts its own; neither touches the environment
another thread may be walking (dbt's main thread). Each case runs in a fresh process: a
process has one SparkContext."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent(
    """
    import json, os, sys, threading
    from dbt.adapters.ducklake.spark import driver_launch
    from dbt.adapters.ducklake.spark.session_config import SessionConfig

    conf = {"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"}
    early = SessionConfig(master="local[1]", conf=conf, console_log=sys.argv[1])
    asked = SessionConfig(
        master="local[1]", conf={**conf, **json.loads(sys.argv[2])}, console_log=sys.argv[1]
    )
    driver_launch.launch_early(early)
    launched = driver_launch._early
    out = {
        "pyspark_imported": "pyspark" in sys.modules,
        "early_pid": launched.process.pid if launched else None,
    }
    from dbt.adapters.ducklake.spark.session import get_session

    # the session starts on another thread (the prestart's) while this one walks the
    # environment as dbt does when it builds an error: nothing may vanish mid-walk
    started, walk_errors, gateway_keys = {}, [], set()
    thread = threading.Thread(target=lambda: started.update(spark=get_session(asked)))
    thread.start()
    while thread.is_alive():
        try:
            gateway_keys.update(k for k, _ in os.environ.items() if "GATEWAY" in k)
        except KeyError as exc:
            walk_errors.append(repr(exc))
    thread.join()
    spark = started["spark"]
    out["environment_walk_errors"] = walk_errors
    out["gateway_keys_seen"] = sorted(gateway_keys)
    out["session_pid"] = spark._jvm.java.lang.ProcessHandle.current().pid()
    out["early_alive"] = launched is not None and launched.process.poll() is None
    out["rows"] = [r[0] for r in spark.sql("SELECT id * 2 FROM range(3)").collect()]
    out["shuffle_partitions"] = spark.conf.get("spark.sql.shuffle.partitions")
    print("RESULT " + json.dumps(out))
    """
)


def _run(tmp_path: Path, extra_conf: dict[str, str]) -> dict[str, object]:
    log = tmp_path / "console.log"
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(log), json.dumps(extra_conf)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    return dict(json.loads(line.removeprefix("RESULT ")))


def test_the_session_connects_to_the_jvm_launched_before_pyspark(tmp_path: Path) -> None:
    result = _run(tmp_path, {})
    assert result["pyspark_imported"] is False
    assert result["early_pid"] is not None
    assert result["session_pid"] == result["early_pid"]
    assert result["early_alive"] is True
    assert result["rows"] == [0, 2, 4]
    assert result["shuffle_partitions"] == "2"
    # connected without putting the gateway's port and secret in the environment
    assert result["gateway_keys_seen"] == []
    assert result["environment_walk_errors"] == []


def test_a_session_of_other_settings_stops_it_and_starts_its_own(tmp_path: Path) -> None:
    result = _run(tmp_path, {"spark.sql.shuffle.partitions": "3"})
    assert result["early_pid"] is not None
    assert result["session_pid"] != result["early_pid"]
    assert result["early_alive"] is False
    assert result["rows"] == [0, 2, 4]
    assert result["shuffle_partitions"] == "3"
    assert result["environment_walk_errors"] == []
