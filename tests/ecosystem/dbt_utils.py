"""dbt-utils' own integration_tests project on the embedded default (SQLite metadata,
local[2] Spark), as a package user runs it: `dbt deps` from the checkout, then
`dbt build`. Prints PASS / WARN / ERROR / FAIL / SKIP and every node that did not pass,
then how each view the suite left reads in Spark and in DuckDB (`tests.ecosystem.views`).

    python -m tests.ecosystem.dbt_utils PATH_TO_DBT_UTILS_CHECKOUT

Run by `./dev ecosystem` (outside CI: it takes minutes)."""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

DBT = str(Path(sys.executable).with_name("dbt"))


def main(checkout: Path) -> int:
    project = checkout / "integration_tests"
    if not (project / "dbt_project.yml").exists():
        sys.exit(f"{checkout} is not a dbt-utils checkout (no integration_tests/dbt_project.yml)")
    work = Path(tempfile.mkdtemp(prefix="dbt-utils-"))
    profile = {
        "type": "ducklake",
        "metadata": f"sqlite:///{work}/metadata.sqlite",
        "data_path": str(work / "data"),
        "schema": "dbt_utils_integration_tests",
        "threads": 2,
        "spark_master": "local[2]",
        "spark_conf": {"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"},
    }
    profiles = {"integration_tests": {"target": "ducklake", "outputs": {"ducklake": profile}}}
    (work / "profiles.yml").write_text(yaml.safe_dump(profiles))
    env = {**os.environ, "DBT_PROFILES_DIR": str(work), "TZ": "UTC"}
    started = time.monotonic()
    for command in (["deps"], ["build", "--full-refresh"]):
        done = subprocess.run([DBT, *command], cwd=project, env=env, text=True)
        if command == ["deps"] and done.returncode != 0:
            return done.returncode
    results = json.loads((project / "target" / "run_results.json").read_text())["results"]
    counts = collections.Counter(r["status"] for r in results)
    print(f"\ndbt-utils integration_tests on dbt-ducklake ({time.monotonic() - started:.0f} s):")
    print(
        f"PASS={counts['success'] + counts['pass']} WARN={counts['warn']} "
        f"ERROR={counts['error']} FAIL={counts['fail']} SKIP={counts['skipped']}"
    )
    for r in results:
        if r["status"] not in ("success", "pass"):
            message = (r.get("message") or "").strip().splitlines()
            print(
                f"  {r['status'].upper():7} {r['unique_id']}: {message[0][:160] if message else ''}"
            )
    print(f"lake and logs: {work}")
    # the views the suite left, read by both engines (time-dependent ones may differ)
    views = [sys.executable, "-m", "tests.ecosystem.views", profile["metadata"]]
    # Spark's own logging of the failures it reports goes to stderr: left out
    done = subprocess.run(views, env=env, cwd=Path(__file__).parents[2], stderr=subprocess.DEVNULL)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]).resolve()))
