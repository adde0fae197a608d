"""DuckLake options (`ducklake_metadata` rows) and their scoping."""

from __future__ import annotations

from collections.abc import Iterable

OptionRow = tuple[str, str, str | None, int | None]  # key, value, scope, scope_id

# the options a user may set (DuckDB's extension documents these); `version`,
# `created_by` and `data_path` belong to the lake itself
SETTABLE_OPTIONS = (
    "auto_compact",
    "data_inlining_row_limit",
    "delete_older_than",
    "encrypted",
    "expire_older_than",
    "hive_file_pattern",
    "parquet_compression",
    "parquet_compression_level",
    "parquet_row_group_size",
    "parquet_row_group_size_bytes",
    "parquet_version",
    "per_thread_output",
    "require_commit_message",
    "rewrite_delete_threshold",
    "sort_on_insert",
    "target_file_size",
)


def resolve_option(
    rows: Iterable[OptionRow],
    key: str,
    *,
    schema_id: int | None = None,
    table_id: int | None = None,
    default: str | None = None,
) -> str | None:
    """DuckLake's precedence: table scope, then schema, then global, then the default."""
    found: dict[str | None, str] = {}
    for k, value, scope, scope_id in rows:
        if k == key and (
            scope is None
            or (scope == "schema" and scope_id == schema_id)
            or (scope == "table" and scope_id == table_id)
        ):
            found[scope] = value
    for scope in ("table", "schema", None):
        if scope in found:
            return found[scope]
    return default
