"""Value encodings DuckDB uses inside the catalog database.

- snapshot times: TIMESTAMPTZ on PostgreSQL, text like `2026-11-22 08:29:01.956084+00` on
  SQLite;
- inlined rows: the spec's per-backend inlining encodings, with nested values as DuckDB's
  VARCHAR cast text (`[a, 'b, c']`, `{'x': 1}`, `{k=1}`);
- stats strings: the spec's "type encoding for statistics".
"""

from __future__ import annotations

import math
import re
import struct
import uuid
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from .models import Column
from .types import FLOAT_TYPES, INTEGER_TYPES, WIDE_INTEGER_TYPES, is_decimal

if TYPE_CHECKING:
    from .connect import Backend  # SQLAlchemy: not on executors, which import this module

# ---------------------------------------------------------------------------------------
# Catalog timestamps


def encode_catalog_time(backend: Backend, value: datetime) -> Any:
    value = value.astimezone(timezone.utc)
    if backend == "postgres":
        return value
    text = value.strftime("%Y-%m-%d %H:%M:%S")
    if value.microsecond:
        text += f".{value.microsecond:06d}".rstrip("0")
    return text + "+00"


def decode_catalog_time(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    return parse_timestamptz(str(value))


# what datetime.fromisoformat accepts from Python 3.11 on and 3.10 refuses: any number
# of fraction digits, "Z", and offsets as +HH or +HHMM (DuckDB writes "+00")
_ISO_STAMP = re.compile(
    r"^(?P<head>\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?|\d{2}:\d{2}(?::\d{2})?)"
    r"(?:\.(?P<fraction>\d+))?\s*(?P<zone>Z|[+-]\d{2}(?::?\d{2})?)?$"
)


def _iso_for_310(text: str) -> str:
    found = _ISO_STAMP.match(text.strip())
    if found is None:
        return text  # fromisoformat says what is wrong with it
    out = found["head"]
    if found["fraction"]:
        out += "." + found["fraction"][:6].ljust(6, "0")
    zone = found["zone"]
    if zone == "Z":
        out += "+00:00"
    elif zone:
        digits = zone[1:].replace(":", "")
        out += f"{zone[0]}{digits[:2]}:{digits[2:4] or '00'}"
    return out


def iso_datetime(text: str) -> datetime:
    """`datetime.fromisoformat` as Python 3.11 reads text, on 3.10 too."""
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return datetime.fromisoformat(_iso_for_310(text))


def iso_time(text: str) -> time:
    """`time.fromisoformat` as Python 3.11 reads text, on 3.10 too."""
    try:
        return time.fromisoformat(text)
    except ValueError:
        return time.fromisoformat(_iso_for_310(text))


def parse_timestamptz(text: str) -> datetime:
    # DuckDB writes offsets as +00 / +05:30, which iso_datetime reads on every Python
    parsed = iso_datetime(text.strip())
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.astimezone(timezone.utc)


def as_bool(value: Any) -> bool | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value.lower() in ("1", "true", "t")
    return bool(value)


# ---------------------------------------------------------------------------------------
# Stats strings

_TIME_POINT_TYPES = (
    "date",
    "timestamp",
    "timestamptz",
    "timestamp_s",
    "timestamp_ms",
    "timestamp_ns",
)


@dataclass(frozen=True)
class Infinite:
    """DuckDB's `infinity` / `-infinity` DATE or TIMESTAMP, which Python's date and
    datetime cannot hold; stored in Parquet as the type's largest / smallest value."""

    negative: bool

    def __str__(self) -> str:
        return "-infinity" if self.negative else "infinity"


def infinite(text: str) -> Infinite | None:
    if text == "infinity":
        return Infinite(False)
    if text == "-infinity":
        return Infinite(True)
    return None


def format_timestamp(value: datetime, with_tz: bool) -> str:
    if with_tz:
        value = value.astimezone(timezone.utc) if value.tzinfo else value
    text = value.strftime("%Y-%m-%d %H:%M:%S")
    if value.microsecond:  # as DuckDB prints it: no trailing zeros
        text += f".{value.microsecond:06d}".rstrip("0")
    return text + ("+00" if with_tz else "")


def stats_string(type_name: str, value: Any) -> str:
    """Encode one non-null primitive value the way stats (and inlined text) store it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Infinite):
        return str(value)
    if type_name in FLOAT_TYPES:
        f = float(value)
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        return repr(f)
    if type_name == "timestamptz" and isinstance(value, datetime):
        return format_timestamp(value, True)
    if isinstance(value, datetime):
        return format_timestamp(value, False)
    if isinstance(value, date | time):
        return value.isoformat()
    if isinstance(value, bytes | bytearray):
        return "".join(f"\\x{b:02X}" if b < 32 or b > 126 else chr(b) for b in value)
    return str(value)


# ---------------------------------------------------------------------------------------
# Inlined data


def encode_inlined(backend: Backend, column: Column, value: Any) -> Any:
    """Python value -> what the inlined-data column stores on this backend."""
    if value is None:
        return None
    t = column.type
    if t in ("list", "struct", "map"):
        return nested_to_text(column, value)
    if backend == "sqlite":
        if t == "boolean":
            return 1 if value else 0
        if t in INTEGER_TYPES and t != "uint64":
            return int(value)
        if t == "blob":
            return bytes(value)
        return stats_string(t, value) if t != "varchar" and t != "json" else str(value)
    # postgres
    if t in ("varchar", "json"):
        return str(value).encode()
    if t == "blob":
        return bytes(value)
    if t in ("uint64", *WIDE_INTEGER_TYPES):
        return str(int(value))
    if t in ("date", "timestamp", "timestamptz", "timestamp_s", "timestamp_ms", "timestamp_ns"):
        return stats_string(t, value)
    if t == "uuid":
        return str(value)
    return value


def decode_inlined(column: Column, value: Any) -> Any:
    """What an inlined-data column stores (either backend) -> Python value."""
    if value is None:
        return None
    t = column.type
    if t in ("list", "struct", "map"):
        text = bytes(value).decode() if isinstance(value, bytes | memoryview) else str(value)
        return _typed(column, parse_nested_text(text))
    return decode_scalar(t, value)


_CAST = re.compile(r"^CAST\((.*) AS [A-Z_ ]+\)$")


def decode_scalar(t: str, value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, memoryview):
        value = bytes(value)
    if isinstance(value, str) and t not in ("varchar", "json", "blob"):
        # inside a struct DuckDB spells some values CAST('…' AS UUID)
        value = _CAST.sub(r"\1", value.strip())
    if t == "boolean":
        return as_bool(value)
    if t in INTEGER_TYPES or t in WIDE_INTEGER_TYPES:
        return int(value)
    if t == "float32":  # stored wider (SQLite REAL, text): the FLOAT DuckDB wrote
        return _as_float32(float(value))
    if t in FLOAT_TYPES:
        return float(value)
    if is_decimal(t):
        return Decimal(str(value))
    if t in ("varchar", "json"):
        return value.decode() if isinstance(value, bytes) else str(value)
    if t == "blob":
        return bytes(value) if isinstance(value, bytes | bytearray) else _unescape_blob(value)
    if t == "uuid":
        return uuid.UUID(str(value))
    if t in _TIME_POINT_TYPES and isinstance(value, str):
        endless = infinite(value)
        if endless is not None:
            return endless
    if t == "date":
        return value if isinstance(value, date) else date.fromisoformat(str(value))
    if t in ("timestamp", "timestamp_s", "timestamp_ms", "timestamp_ns"):
        if isinstance(value, datetime):
            return value
        return iso_datetime(str(value)[:26])
    if t == "timestamptz":
        if isinstance(value, datetime):
            return value.astimezone(timezone.utc)
        return parse_timestamptz(str(value))
    if t in ("time", "timetz"):
        return value if isinstance(value, time) else iso_time(str(value))
    if t == "interval":
        return value if isinstance(value, timedelta) else str(value)
    return value


def _as_float32(value: float) -> float:
    """`value` rounded to the nearest FLOAT, as DuckDB reads it, so that it widens to
    DOUBLE (a promoted column) exactly as DuckDB widens it."""
    try:
        return float(struct.unpack("<f", struct.pack("<f", value))[0])
    except OverflowError:  # beyond FLOAT's range: DuckDB would have refused it
        return value


def _unescape_blob(text: str) -> bytes:
    out = bytearray()
    i = 0
    while i < len(text):
        if text.startswith("\\x", i) and i + 4 <= len(text):
            out.append(int(text[i + 2 : i + 4], 16))
            i += 4
        else:
            out += text[i].encode()
            i += 1
    return bytes(out)


def _typed(column: Column, raw: Any) -> Any:
    """Convert parsed nested text (strings and None) into typed Python values."""
    if raw is None:
        return None
    if column.type == "list":
        (child,) = column.children
        return [_typed(child, item) for item in raw]
    if column.type == "struct":
        by_name = dict(raw)
        return {c.name: _typed(c, by_name.get(c.name)) for c in column.children}
    if column.type == "map":
        key_col, value_col = column.children
        return {_typed(key_col, k): _typed(value_col, v) for k, v in raw}
    return decode_scalar(column.type, raw)


def nested_to_text(column: Column, value: Any) -> str:
    """Python nested value -> DuckDB VARCHAR-cast text that casts back to the type."""
    if value is None:
        return "NULL"
    if column.type == "list":
        (child,) = column.children
        return "[" + ", ".join(nested_to_text(child, v) for v in value) + "]"
    if column.type == "struct":
        parts = [
            f"{_quote(c.name)}: {nested_to_text(c, value.get(c.name))}" for c in column.children
        ]
        return "{" + ", ".join(parts) + "}"
    if column.type == "map":
        key_col, value_col = column.children
        items = value.items() if isinstance(value, dict) else value
        return (
            "{"
            + ", ".join(
                f"{nested_to_text(key_col, k)}={nested_to_text(value_col, v)}" for k, v in items
            )
            + "}"
        )
    return _quote(stats_string(column.type, value))


def _quote(text: str) -> str:
    # DuckDB's VARCHAR -> nested cast un-escapes backslashes inside quotes ('' is not an
    # escape there), so this is the spelling that reads back as written.
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


class _NestedParser:
    """Parser for DuckDB's nested VARCHAR form; leaves stay strings (None for NULL)."""

    def __init__(self, text: str):
        self.text = text
        self.pos = 0

    def ws(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] == " ":
            self.pos += 1

    def value(self, stops: str) -> Any:
        self.ws()
        ch = self.text[self.pos] if self.pos < len(self.text) else ""
        if ch == "[":
            return self.list_()
        if ch == "{":
            return self.brace()
        return self.scalar(stops)

    def scalar(self, stops: str) -> str | None:
        """A leaf the way DuckDB's cast reads it: quoted runs (backslash escapes inside)
        and bare runs concatenate; an unquoted NULL is NULL; bare ends are trimmed."""
        parts: list[str] = []
        quoted_any = False
        bare_tail = 0  # length of the trailing unquoted run, which DuckDB trims
        while self.pos < len(self.text) and self.text[self.pos] not in stops:
            ch = self.text[self.pos]
            if ch in ("'", '"'):
                quoted_any = True
                parts.append(self.quoted())
                bare_tail = 0
                continue
            parts.append(ch)
            bare_tail += 1
            self.pos += 1
        token = "".join(parts)
        if not quoted_any:
            token = token.strip()
            return None if token == "NULL" else token
        if bare_tail:
            token = token[:-bare_tail] + token[-bare_tail:].rstrip()
        return token

    def quoted(self) -> str:
        q = self.text[self.pos]
        self.pos += 1
        out = []
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            if ch == "\\" and self.pos + 1 < len(self.text):
                out.append(self.text[self.pos + 1])
                self.pos += 2
                continue
            if ch == q:
                self.pos += 1
                return "".join(out)
            out.append(ch)
            self.pos += 1
        raise ValueError(f"unterminated quote in {self.text!r}")

    def list_(self) -> list[Any]:
        self.pos += 1
        items: list[Any] = []
        self.ws()
        if self.text.startswith("]", self.pos):
            self.pos += 1
            return items
        while True:
            items.append(self.value(",]"))
            self.ws()
            ch = self.text[self.pos]
            self.pos += 1
            if ch == "]":
                return items
            if ch != ",":
                raise ValueError(f"bad list literal {self.text!r}")

    def brace(self) -> list[tuple[Any, Any]]:
        """`{'a': 1}` (struct) or `{k=1}` (map): both as (key, value) pairs."""
        self.pos += 1
        pairs: list[tuple[Any, Any]] = []
        self.ws()
        if self.text.startswith("}", self.pos):
            self.pos += 1
            return pairs
        while True:
            key = self.value(":=,}")
            self.ws()
            sep = self.text[self.pos]
            if sep not in ":=":
                raise ValueError(f"bad struct/map literal {self.text!r}")
            self.pos += 1
            pairs.append((key, self.value(",}")))
            self.ws()
            ch = self.text[self.pos]
            self.pos += 1
            if ch == "}":
                return pairs
            if ch != ",":
                raise ValueError(f"bad struct/map literal {self.text!r}")


def parse_nested_text(text: str) -> Any:
    return _NestedParser(text).value(",")
