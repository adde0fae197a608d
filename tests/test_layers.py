"""The layering of docs/architecture.md: lake/ imports neither dbt nor pyspark, spark/
never dbt, no import cycle or upward import, and small modules and functions."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "dbt" / "adapters" / "ducklake"


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


# -- the module graph: no cycle, no upward import -----------------------------------------

ROOT = "dbt.adapters.ducklake"
# the layers of lake/, bottom first: a module may import its own layer or a lower one
LAKE_LAYERS = (
    ("errors", "names", "options", "types", "secrets", "files", "deletion_vectors"),
    ("models", "connect", "changes_made", "codec", "metadata_ddl", "rows", "inlined_tables"),
    ("store",),
    ("plan", "drafts", "reader"),
    ("table_edits", "data_edits", "conflicts", "maintenance"),
    ("commit_data", "commit_maintenance", "commit"),
    ("transaction",),
    ("lake", "__init__", "staging_copy", "stage_sweep", "publish"),
)
# the packages, bottom first (docs/architecture.md): lake < spark < the adapter
PACKAGE_LAYERS = ("lake", "spark", "adapter")


def _module_name(path: Path, package: Path = PACKAGE, root: str = ROOT) -> str:
    parts = list(path.relative_to(package).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([root, *parts])


def _module_graph(package: Path = PACKAGE, root: str = ROOT) -> dict[str, set[str]]:
    """Module -> package modules it imports, at any depth (late and TYPE_CHECKING
    imports included): `from . import x` counts as importing module x."""
    files = {_module_name(p, package, root): p for p in sorted(package.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        here = name.split(".") if is_package else name.split(".")[:-1]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                bases = [alias.name for alias in node.names]
                names: list[str] = []
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    anchor = here[: len(here) - node.level + 1]
                    bases = [".".join([*anchor, *([node.module] if node.module else [])])]
                else:
                    bases = [node.module or ""]
                names = [alias.name for alias in node.names]
            else:
                continue
            for base in bases:
                for candidate in [f"{base}.{n}" for n in names] + [base]:
                    if candidate in files and candidate != name:
                        targets.add(candidate)
                        break
        graph[name] = targets
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _package_of(module: str) -> str:
    rest = module.removeprefix(ROOT).lstrip(".").split(".")
    return rest[0] if rest[0] in ("lake", "spark") else "adapter"


def _upward_imports(graph: dict[str, set[str]]) -> list[str]:
    lake_rank = {m: i for i, layer in enumerate(LAKE_LAYERS) for m in layer}
    found = []
    for source, targets in graph.items():
        for target in targets:
            src_pkg, dst_pkg = _package_of(source), _package_of(target)
            if PACKAGE_LAYERS.index(dst_pkg) > PACKAGE_LAYERS.index(src_pkg):
                found.append(f"{source} -> {target} ({src_pkg} imports {dst_pkg})")
            elif src_pkg == dst_pkg == "lake":
                src, dst = (m.rsplit(".", 1)[-1] for m in (source, target))
                src = "__init__" if source.endswith(".lake") else src
                dst = "__init__" if target.endswith(".lake") else dst
                if lake_rank[dst] > lake_rank[src]:
                    found.append(
                        f"{source} -> {target} (lake layer {lake_rank[src]} imports "
                        f"layer {lake_rank[dst]})"
                    )
    return sorted(found)


def test_every_lake_module_has_a_layer() -> None:
    modules = {p.stem for p in (PACKAGE / "lake").glob("*.py")}
    placed = {m for layer in LAKE_LAYERS for m in layer}
    assert modules == placed, f"unplaced: {modules - placed}; gone: {placed - modules}"


def test_the_package_has_no_import_cycle() -> None:
    graph = _module_graph()
    assert len(graph) > 60 and sum(len(t) for t in graph.values()) > 200
    assert _cycles(graph) == []


def test_no_module_imports_upward() -> None:
    assert _upward_imports(_module_graph()) == []


def test_the_graph_checks_would_catch_a_cycle_and_an_upward_import(tmp_path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "lake").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "lake" / "__init__.py").write_text("")
    (pkg / "lake" / "store.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .reader import R\n"
    )
    (pkg / "lake" / "reader.py").write_text("def f():\n    from . import store\n")
    graph = _module_graph(pkg, "x")
    assert graph["x.lake.store"] == {"x.lake.reader"}
    assert graph["x.lake.reader"] == {"x.lake.store"}
    assert _cycles(graph) == [["x.lake.reader", "x.lake.store"]]
    upward = _upward_imports(
        {f"{ROOT}.lake.store": {f"{ROOT}.lake.reader"}, f"{ROOT}.lake.errors": {f"{ROOT}.spark"}}
    )
    assert len(upward) == 2, upward


def _sizes(folder: Path) -> tuple[dict[str, int], dict[str, int]]:
    modules, functions = {}, {}
    for path in sorted(folder.glob("*.py")):
        text = path.read_text()
        modules[path.name] = len(text.splitlines())
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                functions[f"{path.name}:{node.name}"] = node.end_lineno - node.lineno + 1
    return modules, functions


def test_modules_and_functions_stay_small() -> None:
    """One job per module, in every layer: no module of lake/, spark/ or the adapter
    over 600 lines, no function over 60; impl.py (dbt's adapter class) stays thin."""
    for folder in (PACKAGE / "lake", PACKAGE / "spark", PACKAGE):
        modules, functions = _sizes(folder)
        assert len(modules) >= 10 and len(functions) >= 100, folder
        assert {m: n for m, n in modules.items() if n > 600} == {}, folder
        assert {f: n for f, n in functions.items() if n > 60} == {}, folder
    assert _sizes(PACKAGE)[0]["impl.py"] <= 510
