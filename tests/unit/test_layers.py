"""The layering of design.md: lake/ imports neither dbt nor pyspark."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "dbt" / "adapters" / "ducklake"


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def test_lake_layer_imports_neither_dbt_nor_pyspark() -> None:
    files = sorted((PACKAGE / "lake").glob("*.py"))
    assert len(files) >= 10
    offenders = {
        f"{f.name}: {name}"
        for f in files
        for name in _imports(f)
        if name.split(".")[0] in ("pyspark", "dbt") or name.startswith("dbt.")
    }
    assert not offenders, offenders


def test_layer_check_would_catch_an_offender(tmp_path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import pyspark.sql\nfrom dbt.adapters.base import BaseAdapter\n")
    assert _imports(bad) == {"pyspark.sql", "dbt.adapters.base"}


def test_spark_layer_never_imports_dbt() -> None:
    files = sorted((PACKAGE / "spark").glob("*.py"))
    assert len(files) >= 6
    offenders = {
        f"{f.name}: {name}"
        for f in files
        for name in _imports(f)
        if name == "dbt"
        or (name.startswith("dbt.") and not name.startswith("dbt.adapters.ducklake"))
    }
    assert not offenders, offenders
