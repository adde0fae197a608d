"""The installed distribution carries both dbt packages: adapter code and include files."""

from __future__ import annotations

import os
from importlib import metadata

from packaging.requirements import Requirement

import dbt.include.ducklake


def test_include_package_is_installed_with_its_project_file() -> None:
    path = dbt.include.ducklake.PACKAGE_PATH
    assert os.path.isfile(os.path.join(path, "dbt_project.yml"))
    assert os.path.isdir(os.path.join(path, "macros"))


def test_distribution_declares_the_runtime_and_test_stack() -> None:
    requires = metadata.requires("dbt-ducklake") or []
    names = {Requirement(r).name.lower() for r in requires}
    assert {
        "dbt-core",
        "dbt-adapters",
        "dbt-spark",
        "pyspark",
        "sqlalchemy",
        "psycopg",
        "pyarrow",
        "agate",
        "sqlglot",
        "duckdb",
        "dbt-tests-adapter",
        "hypothesis",
    } <= names
    from dbt.adapters.ducklake.__version__ import version

    assert metadata.version("dbt-ducklake") == version


def test_dbt_version_lists_the_plugin() -> None:
    import subprocess
    import sys
    from pathlib import Path

    from dbt.adapters.ducklake.__version__ import version

    dbt = str(Path(sys.executable).with_name("dbt"))
    done = subprocess.run([dbt, "--version"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"ducklake: {version}" in done.stdout, done.stdout
