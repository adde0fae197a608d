"""dbt adapter `type: ducklake`: Spark runs the models, DuckLake 1.0 keeps the tables.

dbt asks this package for `Plugin`; it is built on first use, so that Spark tasks,
which import modules of `spark/` and `lake/` on executors without dbt, never import dbt.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dbt.adapters.base import AdapterPlugin

    from .impl import DucklakeAdapter

    Plugin: AdapterPlugin


def _plugin() -> AdapterPlugin:
    from dbt.adapters.base import AdapterPlugin

    from dbt.include import ducklake

    from .credentials import DucklakeCredentials
    from .impl import DucklakeAdapter

    return AdapterPlugin(
        adapter=DucklakeAdapter,  # type: ignore[arg-type]
        credentials=DucklakeCredentials,
        include_path=ducklake.PACKAGE_PATH,
        dependencies=["spark"],  # dbt-spark's Spark SQL macros are the fallback
    )


def __getattr__(name: str) -> Any:
    if name == "Plugin":
        value: Any = _plugin()
    elif name == "DucklakeAdapter":
        from .impl import DucklakeAdapter as value
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


__all__ = ["DucklakeAdapter", "Plugin"]
