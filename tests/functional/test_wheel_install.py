"""The adapter as a user installs it: the wheel built from this checkout, installed into
a fresh venv of another Python minor, run from a folder outside the checkout. `dbt
--version` lists ducklake; `dbt debug` and a build with `data_path: s3://…` on moto's
S3 server pass, S3A coming from Maven as the README says (no jar cache); DuckDB reads
what was built."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from dbt.adapters.ducklake.storage import hadoop_aws_package
from tests import duck, venvs
from tests.conftest import S3Server

REPO = Path(__file__).resolve().parents[2]
# more rows than DuckLake inlines by default (10): S3 holds every table's rows as files
PEOPLE = ("ada", "grace", "edsger", "alan", "barbara", "donald", "john", "ken", "dennis")
PEOPLE += ("niklaus", "tony", "frances")
pytestmark = [pytest.mark.slow, pytest.mark.s3]


def _other_python() -> str:
    """An interpreter of a Python minor other than this one (pyenv's, else PATH's)."""
    root = subprocess.run(["pyenv", "root"], capture_output=True, text=True).stdout.strip()
    for minor in ("3.12", "3.10", "3.13", "3.11"):
        if minor == f"{sys.version_info[0]}.{sys.version_info[1]}":
            continue
        found = sorted(glob.glob(f"{root}/versions/{minor}.*/bin/python{minor}"))
        found = found or [p for p in [shutil.which(f"python{minor}")] if p]
        if found:
            return found[-1]
    raise AssertionError("no other Python minor on this machine (pyenv root or PATH)")


def _wheel(out: Path) -> Path:
    """Build the wheel from a copy of the package's sources (the checkout stays clean)."""
    src = out / "src"
    shutil.copytree(
        REPO / "dbt", src / "dbt", ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(src)],
        check=True,
    )
    (wheel,) = out.glob("dbt_ducklake-*.whl")
    return wheel


def _project(root: Path, s3: S3Server, data_path: str) -> Path:
    project = root / "proj"
    (project / "models").mkdir(parents=True)
    (project / "seeds").mkdir()
    (project / "dbt_project.yml").write_text(
        yaml.safe_dump(
            {"name": "wheel_check", "version": "1.0", "profile": "wheel_check", "config-version": 2}
        )
    )
    rows = "".join(f"{i},{name}\n" for i, name in enumerate(PEOPLE, start=1))
    (project / "seeds" / "people.csv").write_text("id,name\n" + rows)
    (project / "models" / "names.sql").write_text(
        "{{ config(materialized='table') }}\n"
        "select id, upper(name) as name from {{ ref('people') }}"
    )
    (project / "models" / "recent.sql").write_text(
        "{{ config(materialized='incremental', unique_key='id') }}\n"
        "select id, name from {{ ref('names') }} where id > 1"
    )
    output = {
        "type": "ducklake",
        "metadata": "sqlite:///lake/metadata.sqlite",
        "data_path": data_path,
        "schema": "main",
        "threads": 1,
        "spark_master": "local[2]",
        "spark_conf": {"spark.sql.shuffle.partitions": "2"},
        **s3.profile_fields(),
    }
    (project / "profiles.yml").write_text(
        yaml.safe_dump({"wheel_check": {"target": "dev", "outputs": {"dev": output}}})
    )
    return project


def test_the_wheel_installs_elsewhere_and_builds_on_s3(tmp_path, s3_server: S3Server) -> None:
    wheel = _wheel(tmp_path / "dist")
    with zipfile.ZipFile(wheel) as zipped:
        names = zipped.namelist()
    assert "dbt/adapters/ducklake/jars/ducklake-jvm.jar" in names
    assert any(n.startswith("dbt/include/ducklake/macros/") for n in names)

    venv = tmp_path / "venv"
    venvs.install(venvs.create(venv, _other_python()), str(wheel))

    data_path = f"s3://{s3_server.new_bucket()}/wheel/"
    project = _project(tmp_path, s3_server, data_path)
    # nothing of the checkout on any path; no jar cache either
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTHON", "PYSPARK_", "DUCKLAKE_", "SPARK_"))
    }
    env["DUCKLAKE_JARS"] = str(tmp_path / "no-jar-cache")
    # JIT flags only, as the test lanes give every JVM (SHORT_JVM_OPTS in ./dev): these
    # few-second dbt processes spend less CPU with C1 alone; nothing of the checkout
    env["JDK_JAVA_OPTIONS"] = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
    env["DO_NOT_TRACK"] = "1"

    def dbt(*args: str) -> subprocess.CompletedProcess[str]:
        profiles = [] if args == ("--version",) else ["--profiles-dir", str(project)]
        return subprocess.run(
            [str(venv / "bin" / "dbt"), *args, *profiles],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )

    version = dbt("--version")
    assert version.returncode == 0 and "ducklake" in version.stdout, version.stdout
    imported = subprocess.run(
        [venv / "bin" / "python", "-c", "import dbt.adapters.ducklake as m; print(m.__file__)"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert str(venv) in imported and str(REPO) not in imported
    debug = dbt("debug")
    assert debug.returncode == 0, debug.stdout[-3000:]
    build = dbt("build")
    assert build.returncode == 0, build.stdout[-5000:]
    # with no jar cache, S3A came as hadoop-aws of the venv's Hadoop, fetched by Spark
    (jars,) = venv.glob("lib/python3.*/site-packages/pyspark/jars")
    package = hadoop_aws_package(str(jars))
    assert package is not None
    hadoop = package.rsplit(":", 1)[1]
    assert list(Path.home().glob(f".ivy2*/jars/org.apache.hadoop_hadoop-aws-{hadoop}.jar"))

    con = duck.connect_s3(s3_server.duckdb_secret())
    duck.attach(con, f"sqlite:{project}/lake/metadata.sqlite", alias="lake")
    upper = [(i, name.upper()) for i, name in enumerate(PEOPLE, start=1)]
    assert con.execute("SELECT id, name FROM lake.main.names ORDER BY id").fetchall() == upper
    assert con.execute("SELECT id, name FROM lake.main.recent ORDER BY id").fetchall() == upper[1:]
    meta = "__ducklake_metadata_lake"
    # the models' rows are Parquet files in the bucket, which DuckDB just read over S3
    assert con.execute(
        f"SELECT value FROM {meta}.ducklake_metadata WHERE key = 'data_path'"
    ).fetchone() == (data_path,)
    assert con.execute(f"SELECT count(*) FROM {meta}.ducklake_data_file").fetchone()[0] >= 3
    # every row of the seed and both models is in them (none inlined in the catalog)
    in_files = f"SELECT sum(record_count) FROM {meta}.ducklake_data_file WHERE end_snapshot IS NULL"
    assert con.execute(in_files).fetchone() == (2 * len(PEOPLE) + len(PEOPLE) - 1,)
    con.close()
