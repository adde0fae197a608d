"""DuckLake column types: names, nesting, legal promotions, and their DuckDB spelling."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from .errors import InvalidChangeError

INTEGER_TYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
WIDE_INTEGER_TYPES = ("int128", "uint128")
FLOAT_TYPES = ("float32", "float64")
TEMPORAL_TYPES = (
    "date",
    "time",
    "timetz",
    "timestamp",
    "timestamptz",
    "timestamp_s",
    "timestamp_ms",
    "timestamp_ns",
    "interval",
)
OTHER_PRIMITIVES = ("boolean", "varchar", "blob", "json", "uuid", "variant", "geometry")
NESTED_TYPES = ("list", "struct", "map")
PRIMITIVE_TYPES = (
    INTEGER_TYPES + WIDE_INTEGER_TYPES + FLOAT_TYPES + TEMPORAL_TYPES + OTHER_PRIMITIVES
)

_DECIMAL = re.compile(r"^decimal\((\d+),\s*(\d+)\)$")

# The spec's lossless promotions (schema evolution page); nothing else is accepted.
PROMOTIONS: dict[str, tuple[str, ...]] = {
    "int8": ("int16", "int32", "int64"),
    "int16": ("int32", "int64"),
    "int32": ("int64",),
    "uint8": ("uint16", "uint32", "uint64"),
    "uint16": ("uint32", "uint64"),
    "uint32": ("uint64",),
    "float32": ("float64",),
}

_DUCKDB_NAMES = {
    "boolean": "BOOLEAN",
    "int8": "TINYINT",
    "int16": "SMALLINT",
    "int32": "INTEGER",
    "int64": "BIGINT",
    "uint8": "UTINYINT",
    "uint16": "USMALLINT",
    "uint32": "UINTEGER",
    "uint64": "UBIGINT",
    "int128": "HUGEINT",
    "uint128": "UHUGEINT",
    "float32": "FLOAT",
    "float64": "DOUBLE",
    "time": "TIME",
    "timetz": "TIME WITH TIME ZONE",
    "date": "DATE",
    "timestamp": "TIMESTAMP",
    "timestamptz": "TIMESTAMP WITH TIME ZONE",
    "timestamp_s": "TIMESTAMP_S",
    "timestamp_ms": "TIMESTAMP_MS",
    "timestamp_ns": "TIMESTAMP_NS",
    "interval": "INTERVAL",
    "varchar": "VARCHAR",
    "blob": "BLOB",
    "json": "JSON",
    "uuid": "UUID",
    "variant": "VARIANT",
    "geometry": "GEOMETRY",
}

# DuckDB SQL type spellings accepted by `parse_type` (aliases included).
_FROM_DUCKDB = {
    **{v: k for k, v in _DUCKDB_NAMES.items()},
    "BOOL": "boolean",
    "INT1": "int8",
    "INT2": "int16",
    "SHORT": "int16",
    "INT": "int32",
    "INT4": "int32",
    "SIGNED": "int32",
    "INT8": "int64",
    "LONG": "int64",
    "REAL": "float32",
    "FLOAT4": "float32",
    "FLOAT8": "float64",
    "DOUBLE PRECISION": "float64",
    "STRING": "varchar",
    "TEXT": "varchar",
    "CHAR": "varchar",
    "BPCHAR": "varchar",
    "BYTEA": "blob",
    "BINARY": "blob",
    "VARBINARY": "blob",
    "TIMESTAMPTZ": "timestamptz",
    "TIMESTAMP_US": "timestamp",
    "DATETIME": "timestamp",
    "TIMETZ": "timetz",
}


def is_decimal(type_name: str) -> bool:
    return bool(_DECIMAL.match(type_name))


def decimal_params(type_name: str) -> tuple[int, int]:
    m = _DECIMAL.match(type_name)
    if not m:
        raise ValueError(f"not a decimal type: {type_name}")
    return int(m.group(1)), int(m.group(2))


def is_known_type(type_name: str) -> bool:
    return type_name in PRIMITIVE_TYPES or type_name in NESTED_TYPES or is_decimal(type_name)


def check_promotion(column: str, old: str, new: str) -> None:
    """Raise unless `old -> new` is one of the spec's lossless promotions."""
    if old == new:
        return
    if new in PROMOTIONS.get(old, ()):
        return
    allowed = ", ".join(PROMOTIONS.get(old, ())) or "none"
    raise InvalidChangeError(
        f"cannot change column {column!r} from {old} to {new}: DuckLake only allows "
        f"lossless promotions (from {old}: {allowed})"
    )


@dataclass
class ColumnSpec:
    """A column definition to create: a type tree with names, nullability and default.

    Lists have one child named `element`; maps two, `key` and `value`.
    """

    name: str
    type: str
    children: list[ColumnSpec] = field(default_factory=list)
    nullable: bool = True
    default: str | None = None  # literal default, encoded like a stats value

    def __post_init__(self) -> None:
        if not is_known_type(self.type):
            raise InvalidChangeError(f"column {self.name!r}: unknown DuckLake type {self.type!r}")
        if self.type == "list" and len(self.children) != 1:
            raise InvalidChangeError(f"list column {self.name!r} needs exactly one child")
        if self.type == "map" and len(self.children) != 2:
            raise InvalidChangeError(f"map column {self.name!r} needs a key and a value child")
        if self.type == "struct" and not self.children:
            raise InvalidChangeError(f"struct column {self.name!r} needs at least one field")
        if self.type not in NESTED_TYPES and self.children:
            raise InvalidChangeError(f"column {self.name!r} of type {self.type} has children")

    def count(self) -> int:
        """Number of column ids this tree occupies (pre-order, itself included)."""
        return 1 + sum(child.count() for child in self.children)


def duckdb_type(type_name: str, children: list[tuple[str, str]] | None = None) -> str:
    """DuckDB's SQL spelling; `children` are (name, already-rendered type) pairs."""
    if type_name == "list":
        assert children
        return f"{children[0][1]}[]"
    if type_name == "map":
        assert children and len(children) == 2
        return f"MAP({children[0][1]}, {children[1][1]})"
    if type_name == "struct":
        assert children
        inner = ", ".join(f"{quote_ident_if_needed(n)} {t}" for n, t in children)
        return f"STRUCT({inner})"
    if is_decimal(type_name):
        p, s = decimal_params(type_name)
        return f"DECIMAL({p},{s})"
    return _DUCKDB_NAMES[type_name]


_PLAIN_IDENT = re.compile(r"^[a-z_][a-z0-9_]*$")


def quote_ident_if_needed(name: str) -> str:
    if _PLAIN_IDENT.match(name):
        return name
    return '"' + name.replace('"', '""') + '"'


def parse_type(sql_type: str, name: str = "col") -> ColumnSpec:
    """Parse a DuckDB SQL type (`INTEGER`, `VARCHAR[]`, `STRUCT(a INT, b MAP(INT, DATE))`)."""
    parser = _TypeParser(sql_type)
    spec = parser.parse(name)
    parser.expect_end()
    return spec


class _TypeParser:
    def __init__(self, text: str):
        self.text = text
        self.pos = 0

    def _skip_ws(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def _peek(self, s: str) -> bool:
        self._skip_ws()
        return self.text.startswith(s, self.pos)

    def _eat(self, s: str) -> None:
        if not self._peek(s):
            raise InvalidChangeError(f"cannot parse type {self.text!r} at position {self.pos}")
        self.pos += len(s)

    def expect_end(self) -> None:
        self._skip_ws()
        if self.pos != len(self.text):
            raise InvalidChangeError(f"cannot parse type {self.text!r}: trailing text")

    def _ident(self) -> str:
        self._skip_ws()
        if self._peek('"'):
            self.pos += 1
            out = []
            while True:
                if self.pos >= len(self.text):
                    raise InvalidChangeError(f"unterminated identifier in {self.text!r}")
                ch = self.text[self.pos]
                if ch == '"':
                    if self.text.startswith('""', self.pos):
                        out.append('"')
                        self.pos += 2
                        continue
                    self.pos += 1
                    return "".join(out)
                out.append(ch)
                self.pos += 1
        m = re.compile(r"[A-Za-z_][A-Za-z0-9_]*").match(self.text, self.pos)
        if not m:
            raise InvalidChangeError(f"cannot parse type {self.text!r} at position {self.pos}")
        self.pos = m.end()
        return m.group(0)

    def parse(self, name: str) -> ColumnSpec:
        spec = self._base(name)
        while self._peek("[]"):
            self._eat("[]")
            spec = ColumnSpec(name, "list", [_renamed(spec, "element")])
        return spec

    def _base(self, name: str) -> ColumnSpec:
        word = self._ident().upper()
        if word in ("STRUCT", "ROW"):
            self._eat("(")
            fields = []
            while True:
                fname = self._ident()
                fields.append(self.parse(fname))
                if self._peek(","):
                    self._eat(",")
                    continue
                break
            self._eat(")")
            return ColumnSpec(name, "struct", fields)
        if word == "MAP":
            self._eat("(")
            key = self.parse("key")
            self._eat(",")
            value = self.parse("value")
            self._eat(")")
            return ColumnSpec(name, "map", [key, value])
        if word in ("DECIMAL", "NUMERIC"):
            if self._peek("("):
                self._eat("(")
                p = int(self._number())
                s = 0
                if self._peek(","):
                    self._eat(",")
                    s = int(self._number())
                self._eat(")")
                return ColumnSpec(name, f"decimal({p},{s})")
            return ColumnSpec(name, "decimal(18,3)")
        # multi-word spellings
        for tail in (("WITH", "TIME", "ZONE"), ("PRECISION",)):
            if self._peek_words(tail):
                for _ in tail:
                    self._ident()
                word = f"{word} {' '.join(tail)}"
                break
        if word in ("VARCHAR", "CHAR") and self._peek("("):
            self._eat("(")
            self._number()
            self._eat(")")
        if word in _FROM_DUCKDB:
            return ColumnSpec(name, _FROM_DUCKDB[word])
        raise InvalidChangeError(f"unknown type {word!r} in {self.text!r}")

    def _peek_words(self, words: tuple[str, ...]) -> bool:
        saved = self.pos
        try:
            for w in words:
                self._skip_ws()
                m = re.compile(r"[A-Za-z_]+").match(self.text, self.pos)
                if not m or m.group(0).upper() != w:
                    return False
                self.pos = m.end()
            return True
        finally:
            self.pos = saved

    def _number(self) -> str:
        self._skip_ws()
        m = re.compile(r"\d+").match(self.text, self.pos)
        if not m:
            raise InvalidChangeError(f"expected a number in type {self.text!r}")
        self.pos = m.end()
        return m.group(0)


def _renamed(spec: ColumnSpec, name: str) -> ColumnSpec:
    return ColumnSpec(name, spec.type, spec.children, spec.nullable, spec.default)


# ---------------------------------------------------------------------------------------
# Ordering of encoded stats values, so table-level min/max merge like DuckDB's.


def stats_sort_key(type_name: str, value: str) -> tuple[int, object]:
    """Key ordering encoded stats values of one type (numbers numerically, else as text)."""
    if type_name in INTEGER_TYPES or type_name in WIDE_INTEGER_TYPES or is_decimal(type_name):
        try:
            return (0, Decimal(value))
        except InvalidOperation:
            return (1, value)
    if type_name in FLOAT_TYPES:
        lowered = value.lower()
        if lowered in ("inf", "infinity"):
            return (0, math.inf)
        if lowered in ("-inf", "-infinity"):
            return (0, -math.inf)
        try:
            return (0, float(value))
        except ValueError:
            return (1, value)
    if type_name in ("date", "timestamp", "timestamptz", "timestamp_s", "timestamp_ms"):
        if value == "-infinity":
            return (-1, "")
        if value == "infinity":
            return (2, "")
    return (0, value)


def merge_min(type_name: str, a: str | None, b: str | None) -> str | None:
    if a is None:
        return b
    if b is None:
        return a
    return a if stats_sort_key(type_name, a) <= stats_sort_key(type_name, b) else b


def merge_max(type_name: str, a: str | None, b: str | None) -> str | None:
    if a is None:
        return b
    if b is None:
        return a
    return a if stats_sort_key(type_name, a) >= stats_sort_key(type_name, b) else b
