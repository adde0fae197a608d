"""Pure-Python DuckLake 1.0 metadata layer: open, read at a snapshot, commit.

Imports neither dbt nor pyspark; every engine-facing module builds on this one.
"""

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
