"""Pure-Python DuckLake 1.0 metadata layer: open, read at a snapshot, commit.

Imports neither dbt nor pyspark; every engine-facing module builds on this one.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .errors import (
        CatalogExistsError,
        CatalogNotFoundError,
        CommitConflictError,
        CommitMessageRequiredError,
        FormatVersionError,
        InvalidChangeError,
        LakeError,
        MetadataConfigError,
    )
    from .lake import Lake
    from .models import Column, DataFile, DeleteFile, Snapshot, TableInfo, TableState, ViewInfo
    from .staged import DataFileSpec, DeleteFileSpec, FileColumnStats, StagedTable
    from .transaction import Transaction
    from .types import ColumnSpec, parse_type

# Each name is imported when first used: Spark tasks import leaf modules of this
# package (models, types, codec) on executors that have no SQLAlchemy, which `Lake`
# and `Transaction` need.
_HOME = {
    "CatalogExistsError": "errors",
    "CatalogNotFoundError": "errors",
    "Column": "models",
    "ColumnSpec": "types",
    "CommitConflictError": "errors",
    "CommitMessageRequiredError": "errors",
    "DataFile": "models",
    "DataFileSpec": "staged",
    "DeleteFile": "models",
    "DeleteFileSpec": "staged",
    "FileColumnStats": "staged",
    "FormatVersionError": "errors",
    "InvalidChangeError": "errors",
    "Lake": "lake",
    "LakeError": "errors",
    "MetadataConfigError": "errors",
    "Snapshot": "models",
    "StagedTable": "staged",
    "TableInfo": "models",
    "TableState": "models",
    "Transaction": "transaction",
    "ViewInfo": "models",
    "parse_type": "types",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "CatalogExistsError",
    "CatalogNotFoundError",
    "Column",
    "ColumnSpec",
    "CommitConflictError",
    "CommitMessageRequiredError",
    "DataFile",
    "DataFileSpec",
    "DeleteFile",
    "DeleteFileSpec",
    "FileColumnStats",
    "FormatVersionError",
    "InvalidChangeError",
    "Lake",
    "LakeError",
    "MetadataConfigError",
    "Snapshot",
    "StagedTable",
    "TableInfo",
    "TableState",
    "Transaction",
    "ViewInfo",
    "parse_type",
]
