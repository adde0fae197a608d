"""DuckLake options (`ducklake_metadata` rows) and their scoping."""

from __future__ import annotations

import re
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
    "write_deletion_vectors",
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
        raise ValueError(f"size {text!r}: expected a byte count like 512MB or 1000000")
    return int(float(digits) * _SIZE_UNITS[unit])


# what each option's value must look like (DuckDB's documented values)
_BOOLEANS = (
    "auto_compact",
    "encrypted",
    "hive_file_pattern",
    "per_thread_output",
    "require_commit_message",
    "sort_on_insert",
)
_COUNTS = ("data_inlining_row_limit", "parquet_compression_level", "parquet_row_group_size")
_SIZES = ("target_file_size", "parquet_row_group_size_bytes")
_INTERVALS = ("delete_older_than", "expire_older_than")
_CHOICES = {
    "parquet_compression": ("uncompressed", "snappy", "gzip", "zstd", "brotli", "lz4", "lz4_raw"),
    "parquet_version": ("1", "2"),
}
INTERVAL_TEXT = re.compile(r"(?:\s*,?\s*\d+(?:\.\d+)?\s*[a-z]+)+\s*", re.IGNORECASE)


def check_option_value(key: str, text: str) -> None:
    """Refuse a value the option can never take, when it is set rather than when a
    later write reads it; ValueError names the option and the accepted values."""
    low = text.strip().lower()
    if key in _BOOLEANS and low not in ("true", "false"):
        raise ValueError(f"option {key} takes true or false, not {text!r}")
    if key in _COUNTS and not re.fullmatch(r"\d+", low):
        raise ValueError(f"option {key} takes a whole number, not {text!r}")
    if key in _SIZES:
        try:
            parse_size(text)
        except ValueError:
            raise ValueError(
                f"option {key} takes a byte count like 512MB or 1000000, not {text!r}"
            ) from None
    if key in _INTERVALS and INTERVAL_TEXT.fullmatch(low) is None:
        raise ValueError(f"option {key} takes a duration like '7 days' or '24 hours', not {text!r}")
    if key in _CHOICES and low not in _CHOICES[key]:
        raise ValueError(f"option {key} takes one of {', '.join(_CHOICES[key])}, not {text!r}")
    if key == "rewrite_delete_threshold":
        try:
            ok = 0.0 <= float(low) <= 1.0
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f"option {key} takes a number between 0 and 1, not {text!r}")
