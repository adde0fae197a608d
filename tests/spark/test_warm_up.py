"""The warm-up (spark/warm.py) leaves a new JVM with its Python workers started, so the
first DELETE, UPDATE or MERGE of many rows does not wait for them. Run in a fresh
process, on a JVM of its own: the test session's has run Python tasks long before."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dbt.adapters.ducklake.spark import warm

pytestmark = pytest.mark.slow  # it starts a driver JVM of its own
ROOT = Path(__file__).resolve().parents[2]

# prints: Python daemons of its JVM before the warm-up, the steps it ran, daemons after
SCRIPT = """
import subprocess
from dbt.adapters.ducklake.spark.session import SessionConfig, get_session
from dbt.adapters.ducklake.spark.warm import warm_up

spark = get_session(SessionConfig(master="local[2]", conf={"spark.ui.enabled": "false"}))
jvm = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getPid()


def daemons():
    children = ["ps", "--ppid", str(jvm), "-o", "args="]
    listed = subprocess.run(children, capture_output=True, text=True).stdout
    return sum("pyspark.daemon" in line for line in listed.splitlines())


print(daemons(), warm_up(spark), daemons())
"""


def test_the_warm_up_starts_the_python_workers() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    before, steps, after = (int(n) for n in done.stdout.split()[-3:])
    assert (before, steps, after) == (0, len(warm._STATEMENTS), 1), done.stdout
