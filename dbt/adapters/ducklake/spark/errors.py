"""Spark's errors, told in the user's terms.

A Spark analysis error carries the logical plan after its first line, line/position
numbers of the rewritten text (lake references replaced by temporary views), and
suggestions that may list the engine's own columns. Users wrote neither, so the text
keeps the first line, names relations as they wrote them, and drops internal columns.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ..lake import LakeError


class EngineError(LakeError):
    """An error of the Spark engine layer: what the user wrote cannot run as written.
    Messages name tables as `schema.table` and list the accepted values."""


class WriteError(EngineError):
    """Rows that do not fit the table they are written to (column count, names)."""


class SessionConfigError(EngineError):
    """Spark settings of the profile that cannot start a session."""


class ViewError(EngineError):
    """A lake view that cannot be read."""


class CallError(EngineError):
    """A CALL of a DuckLake function with bad arguments."""


class CatalogQueryError(EngineError):
    """A query on DuckLake's catalog functions that this layer does not answer."""


class CdcError(EngineError):
    """A change-data-capture call with bad arguments."""


class ChangeFeedError(EngineError):
    """A table_changes, table_insertions or table_deletions call that cannot run."""


class DDLError(EngineError):
    """A CREATE, ALTER or DROP this layer does not run as written."""


class LakeSQLError(EngineError):
    """SQL text that names the lake in a way this layer cannot resolve."""


class MergeError(EngineError):
    """A MERGE that cannot run: ambiguous keys, unsupported clauses, bad columns."""


class NotNullViolation(EngineError):
    """A NULL written into a NOT NULL column; nothing was committed."""


class ReservedColumnError(EngineError):
    """A column whose name Spark reserves for a reader's own values."""


class StatementError(EngineError):
    """A statement this layer does not run as written (unsupported form or option)."""


class UnsupportedTypeError(EngineError):
    """A column type that Spark and DuckLake cannot exchange."""


INTERNAL_PREFIX = "__ducklake_"

_POSITION = re.compile(r";\s*line \d+ pos \d+;?\s*$")
_SUGGESTIONS = re.compile(r"(Did you mean one of the following\? \[)([^\]]*)(\])")
_TEMP_VIEW = re.compile(r"`?(__ducklake_\d+)`?")
_JAVA_PACKAGE = re.compile(r"^(?:[a-z_$][\w$]*\.)+(?=[A-Z])")


def spark_error_text(exc: BaseException, relations: Mapping[str, str] | None = None) -> str:
    """One line: Spark's error class and message, temp views shown as `schema.table`."""
    text = _message(exc)
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    reason = _engine_cause(exc)
    if reason:
        first = f"{first.rstrip()} ({reason})"
    first = _POSITION.sub("", first).rstrip(" ;")
    first = _SUGGESTIONS.sub(_public_suggestions, first)
    names = relations or {}
    return _TEMP_VIEW.sub(lambda m: names.get(m.group(1), "a lake relation"), first)


def _message(exc: BaseException) -> str:
    java = getattr(exc, "java_exception", None)  # py4j: an error Spark did not classify
    if java is not None:
        try:
            return _JAVA_PACKAGE.sub("", str(java.toString()))
        except Exception:  # the JVM is gone
            pass
    get = getattr(exc, "getMessage", None)
    if callable(get):
        try:
            return str(get())
        except Exception:  # a Connect error without a JVM-side message
            pass
    return str(exc)


# a cause deep in the Java chain that Spark's one line leaves out, told as a feature
_KNOWN_CAUSES = {
    "org.apache.hadoop.io.compress.BrotliCodec": (
        "the file is compressed with Brotli (DuckDB's parquet_compression 'brotli'): Spark "
        "reads it with the adapter's JVM classes, which this session lacks (build them with "
        "Maven: ./dev setup; Spark Connect servers need the jar on their class path), or "
        "set parquet_compression to zstd or snappy and rewrite the table in DuckDB"
    ),
}


def _engine_cause(exc: BaseException) -> str | None:
    """The message of the adapter's own JVM classes deep in a Java cause chain (a
    wrong key of an encrypted file, say), or a known cause told as the feature it is
    (a Brotli-compressed file), which Spark's one-line error leaves out."""
    cause = getattr(exc, "java_exception", None)
    found = None
    try:
        for _ in range(12):
            if cause is None:
                break
            frames = cause.getStackTrace()
            if len(frames) and str(frames[0].getClassName()).startswith("ducklake.jvm."):
                found = str(cause.getMessage())
            told = str(cause.toString())
            for marker, meaning in _KNOWN_CAUSES.items():
                if marker in told:
                    found = meaning
            cause = cause.getCause()
    except Exception:  # the JVM is gone
        return found
    return found


def _public_suggestions(match: re.Match[str]) -> str:
    kept = [s for s in match.group(2).split(", ") if INTERNAL_PREFIX not in s]
    return match.group(1) + ", ".join(kept) + match.group(3)


def spark_syntax_error(spark: object, text: str) -> str | None:
    """Spark's parser's account of a statement our parser took only as an opaque
    command (`create table … as selec 1`): its first line and the caret under the
    place, or None when Spark parses it too (or the session has no local parser)."""
    jspark = getattr(spark, "_jsparkSession", None)
    if jspark is None:
        return None
    try:
        jspark.sessionState().sqlParser().parsePlan(text)
    except Exception as exc:  # pyspark's ParseException (the JVM's, converted)
        message = str(exc)
        if "PARSE_SYNTAX_ERROR" not in message:
            return None
        return "\n".join(line for line in message.strip().splitlines() if line.strip())
    return None
