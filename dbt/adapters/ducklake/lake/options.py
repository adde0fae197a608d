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


_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "tb": 1000**4,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
}


def parse_size(text: str) -> int:
    """`512MB`, `1000000`, `64 MiB` -> bytes (DuckDB's spellings)."""
    raw = str(text).strip().lower().replace(" ", "")
    digits = raw.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = raw[len(digits) :]
    if not digits or unit not in _SIZE_UNITS:
        raise ValueError(f"target_file_size {text!r}: expected a byte count like 512MB or 1000000")
    return int(float(digits) * _SIZE_UNITS[unit])
