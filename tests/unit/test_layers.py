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


def _lake_imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, names) of each import of the lake layer in `path`, at any depth (imports
    inside functions included)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.ImportFrom):
            continue
        module = node.module or ""
        inside = path.parent.name == "spark"  # spark/ reaches lake/ as ..lake
        relative_lake = node.level == (2 if inside else 1) and module.split(".")[0] == "lake"
        absolute_lake = node.level == 0 and module.startswith("dbt.adapters.ducklake.lake")
        if relative_lake or absolute_lake:
            found.append(
                (module.removeprefix("dbt.adapters.ducklake."), [a.name for a in node.names])
            )
    return found


def test_spark_and_the_adapter_import_only_the_lake_package_names() -> None:
    from dbt.adapters.ducklake import lake

    files = sorted(PACKAGE.glob("*.py")) + sorted((PACKAGE / "spark").glob("*.py"))
    imports = [(f.name, module, names) for f in files for module, names in _lake_imports(f)]
    assert len(imports) >= 20
    internal = [(f, m) for f, m, _ in imports if m != "lake"]
    assert not internal, f"import lake/'s names from the package, not its modules: {internal}"
    unexported = [(f, n) for f, _, names in imports for n in names if n not in lake.__all__]
    assert not unexported, unexported


def test_the_lake_package_check_sees_late_imports(tmp_path) -> None:
    spark = tmp_path / "spark"
    spark.mkdir()
    bad = spark / "bad.py"
    bad.write_text("def f():\n    from ..lake.reader import CatalogReader\n")
    assert _lake_imports(bad) == [("lake.reader", ["CatalogReader"])]
