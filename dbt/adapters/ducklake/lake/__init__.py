"""Pure-Python DuckLake 1.0 metadata layer: open, read at a snapshot, commit.

Imports neither dbt nor pyspark; every engine-facing module builds on this one, and
imports only the names listed here (`tests/test_layers.py` checks it).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .changes_made import qualified_name
    from .codec import Infinite, decode_scalar, iso_datetime, stats_string
    from .connect import MetadataLocation, parse_metadata, sqlite_location
    from .deletion_vectors import (
        CorruptDeletionVectorError,
        encode_blob,
        first_deletions,
        first_per_position,
        is_deletion_vector,
        read_vectors,
    )
    from .drafts import ColumnDraft, StagedTable
    from .errors import (
        CatalogExistsError,
        CatalogNotFoundError,
        CommitConflictError,
        CommitMessageRequiredError,
        FormatVersionError,
        InvalidChangeError,
        LakeError,
        MetadataConfigError,
        UnsupportedFeatureError,
    )
    from .files import FileEntry, FileIO, S3Settings, is_url, normalize_path
    from .lake import Lake
    from .maintenance import (
        STAGING_PREFIX,
        FileGroup,
        cleanup_candidates,
        expire_snapshots,
        find_orphans,
        forget_scheduled,
        merge_groups,
        parse_interval,
        remove_folders,
        rewrite_groups,
        tables_in_scope,
    )
    from .models import (
        Column,
        ColumnStats,
        DataFile,
        DeleteFile,
        InlinedDelete,
        InlinedRow,
        NameMap,
        PartitionSpec,
        Snapshot,
        TableInfo,
        TableState,
        TableStats,
        ViewInfo,
        extra_info_fields,
    )
    from .names import ACCEPTED_NAMES, name_problem
    from .options import SETTABLE_OPTIONS, parse_size, resolve_option
    from .plan import (
        AddDataFiles,
        DataFileSpec,
        DeleteFileSpec,
        FileColumnStats,
        Flush,
        InsertInlined,
    )
    from .publish import publish, remove_staged_files, staged_files, staged_plans
    from .reader import CatalogReader
    from .rows import decode_default
    from .secrets import Secrets
    from .stage_sweep import sweep_stages
    from .staging_copy import drop_stage, open_stage
    from .transaction import Transaction
    from .types import (
        FLOAT_TYPES,
        INTEGER_TYPES,
        NESTED_TYPES,
        ColumnSpec,
        decimal_params,
        duckdb_type,
        is_decimal,
        merge_max,
        merge_min,
        parse_type,
    )

# Each name is imported when first used: Spark tasks import leaf modules of this
# package (models, types, codec) on executors that have no SQLAlchemy, which `Lake`
# and `Transaction` need.
_HOME = {
    "FileEntry": "files",
    "FileIO": "files",
    "S3Settings": "files",
    "is_url": "files",
    "normalize_path": "files",
    "AddDataFiles": "plan",
    "InsertInlined": "plan",
    "ACCEPTED_NAMES": "names",
    "CatalogExistsError": "errors",
    "CatalogNotFoundError": "errors",
    "CatalogReader": "reader",
    "Column": "models",
    "iso_datetime": "codec",
    "extra_info_fields": "models",
    "ColumnSpec": "types",
    "ColumnStats": "models",
    "CommitConflictError": "errors",
    "CommitMessageRequiredError": "errors",
    "UnsupportedFeatureError": "errors",
    "CorruptDeletionVectorError": "deletion_vectors",
    "encode_blob": "deletion_vectors",
    "first_deletions": "deletion_vectors",
    "first_per_position": "deletion_vectors",
    "is_deletion_vector": "deletion_vectors",
    "read_vectors": "deletion_vectors",
    "DataFile": "models",
    "DataFileSpec": "plan",
    "DeleteFile": "models",
    "DeleteFileSpec": "plan",
    "FLOAT_TYPES": "types",
    "FileColumnStats": "plan",
    "FileGroup": "maintenance",
    "Flush": "plan",
    "FormatVersionError": "errors",
    "INTEGER_TYPES": "types",
    "InlinedDelete": "models",
    "InlinedRow": "models",
    "InvalidChangeError": "errors",
    "Lake": "lake",
    "publish": "publish",
    "staged_files": "publish",
    "staged_plans": "publish",
    "remove_staged_files": "publish",
    "open_stage": "staging_copy",
    "drop_stage": "staging_copy",
    "sweep_stages": "stage_sweep",
    "LakeError": "errors",
    "MetadataConfigError": "errors",
    "NESTED_TYPES": "types",
    "NameMap": "models",
    "PartitionSpec": "models",
    "SETTABLE_OPTIONS": "options",
    "STAGING_PREFIX": "maintenance",
    "Secrets": "secrets",
    "Snapshot": "models",
    "TableStats": "models",
    "StagedTable": "drafts",
    "ColumnDraft": "drafts",
    "TableInfo": "models",
    "TableState": "models",
    "Transaction": "transaction",
    "ViewInfo": "models",
    "cleanup_candidates": "maintenance",
    "decimal_params": "types",
    "decode_default": "rows",
    "decode_scalar": "codec",
    "Infinite": "codec",
    "duckdb_type": "types",
    "expire_snapshots": "maintenance",
    "find_orphans": "maintenance",
    "forget_scheduled": "maintenance",
    "is_decimal": "types",
    "merge_groups": "maintenance",
    "merge_max": "types",
    "merge_min": "types",
    "name_problem": "names",
    "parse_interval": "maintenance",
    "parse_metadata": "connect",
    "MetadataLocation": "connect",
    "sqlite_location": "connect",
    "parse_size": "options",
    "parse_type": "types",
    "qualified_name": "changes_made",
    "remove_folders": "maintenance",
    "resolve_option": "options",
    "rewrite_groups": "maintenance",
    "stats_string": "codec",
    "tables_in_scope": "maintenance",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "ACCEPTED_NAMES",
    "FLOAT_TYPES",
    "INTEGER_TYPES",
    "NESTED_TYPES",
    "SETTABLE_OPTIONS",
    "STAGING_PREFIX",
    "AddDataFiles",
    "CatalogExistsError",
    "CatalogNotFoundError",
    "CatalogReader",
    "Column",
    "ColumnDraft",
    "ColumnSpec",
    "ColumnStats",
    "CommitConflictError",
    "CommitMessageRequiredError",
    "CorruptDeletionVectorError",
    "DataFile",
    "DataFileSpec",
    "DeleteFile",
    "DeleteFileSpec",
    "FileColumnStats",
    "FileEntry",
    "FileGroup",
    "FileIO",
    "Flush",
    "FormatVersionError",
    "Infinite",
    "InlinedDelete",
    "InlinedRow",
    "InsertInlined",
    "InvalidChangeError",
    "Lake",
    "LakeError",
    "MetadataConfigError",
    "MetadataLocation",
    "NameMap",
    "PartitionSpec",
    "S3Settings",
    "Secrets",
    "Snapshot",
    "StagedTable",
    "TableInfo",
    "TableState",
    "TableStats",
    "Transaction",
    "UnsupportedFeatureError",
    "ViewInfo",
    "cleanup_candidates",
    "decimal_params",
    "decode_default",
    "decode_scalar",
    "drop_stage",
    "duckdb_type",
    "encode_blob",
    "expire_snapshots",
    "extra_info_fields",
    "find_orphans",
    "first_deletions",
    "first_per_position",
    "forget_scheduled",
    "is_decimal",
    "is_deletion_vector",
    "is_url",
    "iso_datetime",
    "merge_groups",
    "merge_max",
    "merge_min",
    "name_problem",
    "normalize_path",
    "open_stage",
    "parse_interval",
    "parse_metadata",
    "parse_size",
    "parse_type",
    "publish",
    "qualified_name",
    "read_vectors",
    "remove_folders",
    "remove_staged_files",
    "resolve_option",
    "rewrite_groups",
    "sqlite_location",
    "staged_files",
    "staged_plans",
    "stats_string",
    "sweep_stages",
    "tables_in_scope",
]
