"""`CALL ducklake_…(…)` and `CHECKPOINT` in lake SQL, with DuckDB's spelling: the first
argument names the catalog (any name: a session has one lake), named arguments use
`name => value`, and the result rows come back as a small DataFrame.

    CALL ducklake_merge_adjacent_files('lake', 'events', schema => 'shop');
    CALL ducklake_expire_snapshots('lake', older_than => now() - INTERVAL '1 week');
    CALL lake.set_option('target_file_size', '64MB', table_name => 'events');
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from ..lake import SETTABLE_OPTIONS, Lake, iso_datetime, parse_interval
from . import maintenance as mt
from .engine import CommitInfo
from .errors import CallError
from .local_rows import local_frame
from .statements import without_leading_comments

_CALL = re.compile(
    r"^\s*CALL\s+((?:[A-Za-z_][\w]*\.)?[A-Za-z_][\w]*)\s*\((.*)\)\s*;?\s*$", re.I | re.S
)
Args = list[Any]
Kw = dict[str, Any]
_CHECKPOINT = re.compile(r"^\s*CHECKPOINT(\s+[A-Za-z_][\w]*)?\s*;?\s*$", re.I)
_NOW_MINUS = re.compile(r"^(?:now\(\)|current_timestamp)\s*-\s*INTERVAL\s+'((?:[^']|'')*)'$", re.I)
_TIMESTAMP = re.compile(r"^(?:TIMESTAMP(?:TZ)?\s+)?'((?:[^']|'')*)'(?:::TIMESTAMP(?:TZ)?)?$", re.I)


def is_call(text: str) -> bool:
    return bool(_CALL.match(text) or _CHECKPOINT.match(text))


def run_call(spark: SparkSession, lake: Lake, commit: CommitInfo, text: str) -> DataFrame | None:
    """Run one CALL / CHECKPOINT statement; a DataFrame of its result rows, if any."""
    if lake.staged_from is not None:
        # maintenance rewrites and deletes files of the real catalog's snapshots
        raise CallError(
            f"{text.split('(')[0].strip()}: lake maintenance does not run inside a "
            "`publish: atomic` build (it writes to a staging copy); run it in a "
            "separate invocation (dbt run-operation, or --vars '{ducklake_publish: per_node}')"
        )
    if _CHECKPOINT.match(text):
        mt.checkpoint(spark, lake, commit)
        return None
    match = _CALL.match(text)
    assert match is not None
    name = match.group(1).lower()
    positional, named = _arguments(match.group(2))
    if "." in name:  # lake.set_option(...), as DuckDB's catalog-qualified form
        if name.split(".", 1)[1] != "set_option":
            raise CallError(f"unknown function {match.group(1)}; try ducklake_{name}")
        name, positional = "ducklake_set_option", ["lake", *positional]
    handler = _HANDLERS.get(name)
    if handler is None:
        raise CallError(
            f"unknown function {match.group(1)}; lake SQL runs: {', '.join(sorted(_HANDLERS))} "
            "and CHECKPOINT"
        )
    if not positional or not isinstance(positional[0], str):
        raise CallError(f"{name}: the first argument names the catalog, e.g. {name}('lake')")
    return handler(spark, lake, commit, positional[1:], named)


# -- handlers -----------------------------------------------------------------------------


def _merge(spark: SparkSession, lake: Lake, commit: CommitInfo, pos: Args, kw: Kw) -> DataFrame:
    _allow(
        "ducklake_merge_adjacent_files",
        kw,
        "schema",
        "max_compacted_files",
        "min_file_size",
        "max_file_size",
    )
    rows = mt.merge_adjacent_files(
        spark,
        lake,
        commit,
        table=_one(pos, "ducklake_merge_adjacent_files"),
        schema=kw.get("schema"),
        max_compacted_files=kw.get("max_compacted_files"),
        min_file_size=kw.get("min_file_size"),
        max_file_size=kw.get("max_file_size"),
    )
    return _frame(spark, [asdict(r) for r in rows], _COMPACTION_SCHEMA)


def _rewrite(spark: SparkSession, lake: Lake, commit: CommitInfo, pos: Args, kw: Kw) -> DataFrame:
    _allow("ducklake_rewrite_data_files", kw, "schema", "delete_threshold")
    threshold = kw.get("delete_threshold")
    rows = mt.rewrite_data_files(
        spark,
        lake,
        commit,
        table=_one(pos, "ducklake_rewrite_data_files"),
        schema=kw.get("schema"),
        delete_threshold=float(threshold) if threshold is not None else None,
    )
    return _frame(spark, [asdict(r) for r in rows], _COMPACTION_SCHEMA)


def _flush(spark: SparkSession, lake: Lake, commit: CommitInfo, pos: Args, kw: Kw) -> DataFrame:
    _allow("ducklake_flush_inlined_data", kw, "schema_name", "table_name")
    rows = mt.flush_inlined_data(
        spark, lake, commit, table=kw.get("table_name"), schema=kw.get("schema_name")
    )
    return _frame(
        spark,
        [asdict(r) for r in rows],
        "schema_name string, table_name string, rows_flushed bigint",
    )


def _snapshot_ids(versions: Any) -> list[int]:
    """`versions => [3, 4]`: snapshot ids, each an integer (a digit string too)."""
    values = versions if isinstance(versions, list | tuple) else [versions]
    ids = []
    for v in values:
        if isinstance(v, bool) or not (isinstance(v, int) or str(v).strip().isdigit()):
            raise CallError(
                f"ducklake_expire_snapshots: versions takes snapshot ids (integers), got {v!r}"
            )
        ids.append(int(v))
    return ids


_EXPIRED_SCHEMA = (
    "snapshot_id bigint, snapshot_time timestamp, schema_version bigint, changes string, "
    "author string, commit_message string, commit_extra_info string"
)


def _expire(spark: SparkSession, lake: Lake, commit: CommitInfo, pos: Args, kw: Kw) -> DataFrame:
    return _frame(spark, _expired(lake, kw), _EXPIRED_SCHEMA)


def _expired(lake: Lake, kw: Kw) -> list[dict[str, Any]]:
    _allow("ducklake_expire_snapshots", kw, "versions", "older_than", "dry_run")
    versions = kw.get("versions")
    snaps = mt.expire_snapshots(
        lake,
        versions=_snapshot_ids(versions) if versions is not None else None,
        older_than=_time(kw.get("older_than")),
        dry_run=bool(kw.get("dry_run", False)),
    )
    return [
        {
            "snapshot_id": s.snapshot_id,
            "snapshot_time": s.snapshot_time,
            "schema_version": s.schema_version,
            "changes": ",".join(str(c) for c in s.changes),
            "author": s.author,
            "commit_message": s.commit_message,
            "commit_extra_info": s.commit_extra_info,
        }
        for s in snaps
    ]


@dataclass(frozen=True)
class CallRows:
    """A CALL's result answered from the catalog alone: (name, Spark type) per column."""

    columns: list[tuple[str, str]]
    rows: list[tuple[Any, ...]]


def catalog_only_call(lake: Lake, text: str) -> CallRows | None:
    """`CALL ducklake_expire_snapshots(…)`, which only reads and writes the catalog,
    answered without Spark: a run-operation that expires snapshots starts no JVM. None
    for every other statement (and inside a staging copy, where run_call says why
    maintenance cannot run)."""
    match = _CALL.match(without_leading_comments(text))
    if match is None or match.group(1).lower() != "ducklake_expire_snapshots":
        return None
    if lake.staged_from is not None:
        return None
    positional, named = _arguments(match.group(2))
    if not positional or not isinstance(positional[0], str) or len(positional) > 1:
        return None  # run_call names what is wrong
    columns = [tuple(part.strip().split(" ", 1)) for part in _EXPIRED_SCHEMA.split(",")]
    rows = _expired(lake, named)
    return CallRows([(n, t) for n, t in columns], [tuple(r[n] for n, _t in columns) for r in rows])


def _files(
    fn: Callable[..., list[str]], name: str
) -> Callable[[SparkSession, Lake, CommitInfo, Args, Kw], DataFrame]:
    def handler(
        spark: SparkSession, lake: Lake, commit: CommitInfo, pos: Args, kw: Kw
    ) -> DataFrame:
        _allow(name, kw, "older_than", "cleanup_all", "dry_run")
        paths = fn(
            spark,
            lake,
            older_than=_time(kw.get("older_than")),
            cleanup_all=bool(kw.get("cleanup_all", False)),
            dry_run=bool(kw.get("dry_run", False)),
        )
        return _frame(spark, [{"path": p} for p in paths], "path string")

    return handler


def _set_option(spark: SparkSession, lake: Lake, commit: CommitInfo, pos: Args, kw: Kw) -> None:
    _allow("ducklake_set_option", kw, "schema", "table_name")
    if len(pos) != 2:
        raise CallError("ducklake_set_option takes the catalog, the option and its value")
    option, value = str(pos[0]), pos[1]
    if option not in SETTABLE_OPTIONS:
        raise CallError(f"unknown option {option!r}; accepted: {', '.join(SETTABLE_OPTIONS)}")
    schema, table_name = kw.get("schema"), kw.get("table_name")
    with lake.transaction(author=commit.author) as tx:
        table = tx.table(schema or "main", table_name) if table_name else None
        tx.set_option(option, value, schema=schema, table=table)
    return None


_HANDLERS: dict[str, Callable[..., DataFrame | None]] = {
    "ducklake_merge_adjacent_files": _merge,
    "ducklake_rewrite_data_files": _rewrite,
    "ducklake_flush_inlined_data": _flush,
    "ducklake_expire_snapshots": _expire,
    "ducklake_cleanup_old_files": _files(mt.cleanup_old_files, "ducklake_cleanup_old_files"),
    "ducklake_delete_orphaned_files": _files(
        mt.delete_orphaned_files, "ducklake_delete_orphaned_files"
    ),
    "ducklake_set_option": _set_option,
}
_COMPACTION_SCHEMA = (
    "schema_name string, table_name string, files_processed bigint, files_created bigint"
)


# -- arguments ----------------------------------------------------------------------------


def _allow(name: str, kw: dict[str, Any], *accepted: str) -> None:
    unknown = sorted(set(kw) - set(accepted))
    if unknown:
        raise CallError(
            f"{name}: unknown argument {', '.join(unknown)}; accepted: {', '.join(accepted)}"
        )


def _one(pos: list[Any], name: str) -> str | None:
    if len(pos) > 1:
        raise CallError(f"{name} takes the catalog and at most one table name")
    return str(pos[0]) if pos else None


def _time(value: Any) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    raise CallError(
        f"expected a time (now(), now() - INTERVAL '7 days', or TIMESTAMP '…'), got {value!r}"
    )


def _frame(spark: SparkSession, rows: list[dict[str, Any]], schema: str) -> DataFrame:
    names = [part.strip().split(" ")[0] for part in schema.split(",")]
    return local_frame(spark, [tuple(r[n] for n in names) for r in rows], schema)


def _arguments(text: str) -> tuple[list[Any], dict[str, Any]]:
    positional: list[Any] = []
    named: dict[str, Any] = {}
    for item in _split(text):
        key, arrow, rest = item.partition("=>")
        if arrow:
            named[key.strip().lower()] = _value(rest.strip())
        elif named:
            raise CallError(f"positional argument {item!r} after named ones")
        else:
            positional.append(_value(item))
    return positional, named


def _split(text: str) -> list[str]:
    items, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(text[start:i].strip())
            start = i + 1
    if text[start:].strip():
        items.append(text[start:].strip())
    return items


def _value(text: str) -> Any:
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low == "null":
        return None
    if text.startswith("[") and text.endswith("]"):
        return [_value(v) for v in _split(text[1:-1])]
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if re.fullmatch(r"-?\d*\.\d+", text):
        return float(text)
    if low in ("now()", "current_timestamp"):
        return datetime.now(timezone.utc)
    if (m := _NOW_MINUS.match(text)) is not None:
        return datetime.now(timezone.utc) - parse_interval(m.group(1).replace("''", "'"))
    if low.startswith("timestamp") and (m := _TIMESTAMP.match(text)) is not None:
        value = _timestamp(m.group(1).replace("''", "'"))
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("''", "'")
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1]
    raise CallError(f"cannot read argument {text!r}")


def _timestamp(text: str) -> datetime:
    try:
        return iso_datetime(text)
    except ValueError:
        raise CallError(
            f"cannot read {text!r} as a timestamp; write it like '2026-01-31 12:00:00'"
        ) from None
