"""dbt projects that tests run in a subprocess: their profiles.yml (one target `t` on a
lake, local[2] with few partitions and no UI, no prestart, plus whatever fields a test
adds) and the `dbt` process itself."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.small_data import SMALL_DATA_CONF


def write_profile(
    root: Path,
    name: str,
    *,
    metadata: str,
    data_path: str,
    schema: str,
    threads: int = 1,
    spark_conf: dict[str, str] | None = None,
    **fields: Any,
) -> None:
    # the background start and warm-up (prestart.py) compete for the CI machine's two
    # cores with the other lane: on only where a test asks (test_prestart.py; CI with it
    # on everywhere passed too, 1,506 s against 1,431 s)
    fields.setdefault("spark_prestart", False)
    # each command its own JVM (what these tests kill, cancel and time); the kept JVM,
    # the default, is test_kept_jvm_default.py's
    fields.setdefault("spark_keep_alive", 0)
    target = {
        "type": "ducklake",
        "metadata": metadata,
        "data_path": data_path,
        "schema": schema,
        "threads": threads,
        **fields,
        "spark_master": "local[2]",
        "spark_conf": {**SMALL_DATA_CONF, **(spark_conf or {})},
    }
    profile = {name: {"target": "t", "outputs": {"t": target}}}
    (root / "profiles.yml").write_text(yaml.safe_dump(profile, sort_keys=False))


def start_dbt(
    project: Path, args: list[str], env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """`dbt <args>` on `project` (its own profiles.yml), output piped, in UTC."""
    dbt = str(Path(sys.executable).with_name("dbt"))
    return subprocess.Popen(
        [dbt, *args, "--project-dir", str(project), "--profiles-dir", str(project)],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "TZ": "UTC", **(env or {})},
    )
