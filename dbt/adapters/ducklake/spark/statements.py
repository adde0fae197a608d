"""Statement-level text handling for lake SQL: splitting a script into statements, and
the DuckLake layout ALTERs (`SET|RESET PARTITIONED BY`, `SET|RESET SORTED BY`) that Spark
grammars do not have.

Layout items use DuckLake's spelling, also accepted from dbt configs: partition keys
`col`, `year(col)`, `month(col)`, `day(col)`, `hour(col)`, `bucket(N, col)`; sort keys
`col [ASC|DESC] [NULLS FIRST|LAST]`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import sqlglot
from sqlglot.dialects.spark import Spark
from sqlglot.tokens import TokenType

PARTITION_FORMS = ("col", "year(col)", "month(col)", "day(col)", "hour(col)", "bucket(N, col)")
SORT_FORM = "col [ASC|DESC] [NULLS FIRST|NULLS LAST]"

_LAYOUT = re.compile(
    r"^\s*ALTER\s+TABLE\s+(?P<table>.+?)\s+(?P<verb>SET|RESET)\s+(?P<what>PARTITIONED|SORTED)"
    r"\s+BY\b\s*(?P<items>.*?)\s*$",
    re.IGNORECASE | re.DOTALL,
)
_TIME_PART = re.compile(r"^(year|month|day|hour)\s*\(\s*(.+?)\s*\)$", re.IGNORECASE | re.DOTALL)
_BUCKET = re.compile(r"^bucket\s*\(\s*(\d+)\s*,\s*(.+?)\s*\)$", re.IGNORECASE | re.DOTALL)
_SORT = re.compile(
    r"^(?P<expr>.+?)(?:\s+(?P<dir>ASC|DESC))?(?:\s+NULLS\s+(?P<nulls>FIRST|LAST))?$",
    re.IGNORECASE | re.DOTALL,
)


class StatementError(ValueError):
    pass


def split_statements(text: str) -> list[str]:
    """The statements of a script, split on semicolons outside strings and comments."""
    cuts = [
        t.start for t in Spark().tokenizer().tokenize(text) if t.token_type == TokenType.SEMICOLON
    ]
    pieces, begin = [], 0
    for cut in [*cuts, len(text)]:
        piece = text[begin:cut]
        begin = cut + 1
        if _has_code(piece):
            pieces.append(piece.strip())
    return pieces


def _has_code(piece: str) -> bool:
    return bool(piece.strip()) and bool(Spark().tokenizer().tokenize(piece))


@dataclass(frozen=True)
class LayoutAlter:
    schema: str | None
    table: str
    reset: bool
    partition: list[tuple[str, str]] | None  # (column, transform) for PARTITIONED BY
    sort: list[tuple[str, str, str]] | None  # (expression, ASC|DESC, NULLS_FIRST|LAST)


def parse_layout_alter(text: str) -> LayoutAlter | None:
    """A DuckLake layout ALTER, or None when `text` is not one."""
    m = _LAYOUT.match(text)
    if m is None:
        return None
    try:
        table = sqlglot.parse_one(m["table"], read="spark", into=sqlglot.exp.Table)
    except sqlglot.errors.ParseError as exc:
        raise StatementError(f"ALTER TABLE: cannot read table name {m['table']!r}") from exc
    reset = m["verb"].upper() == "RESET"
    partitioned = m["what"].upper() == "PARTITIONED"
    items_text = m["items"].strip()
    if reset:
        if items_text:
            raise StatementError(f"RESET {m['what'].upper()} BY takes no list, got {items_text!r}")
        items: list[str] = []
    else:
        if not (items_text.startswith("(") and items_text.endswith(")")):
            raise StatementError(
                f"SET {m['what'].upper()} BY needs a parenthesised list, got {items_text!r}"
            )
        items = split_top_level(items_text[1:-1])
    return LayoutAlter(
        schema=table.db or None,
        table=table.name,
        reset=reset,
        partition=(partition_fields(items) if items else []) if partitioned else None,
        sort=None if partitioned else (sort_fields(items) if items else []),
    )


def split_top_level(text: str) -> list[str]:
    """Comma-separated items, ignoring commas inside parentheses and quotes."""
    items: list[str] = []
    current: list[str] = []
    depth, quote = 0, ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"`":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append("".join(current).strip())
            current = []
            continue
        current.append(ch)
    last = "".join(current).strip()
    if last:
        items.append(last)
    return items


def _unquote(name: str) -> str:
    name = name.strip()
    if len(name) >= 2 and name[0] == name[-1] and name[0] in '`"':
        return name[1:-1].replace(name[0] * 2, name[0])
    return name


def partition_fields(items: list[str]) -> list[tuple[str, str]]:
    """`["region", "year(ts)", "bucket(8, id)"]` -> `[("region", "identity"), ...]`."""
    out = []
    for item in items:
        if (m := _TIME_PART.match(item)) is not None:
            out.append((_unquote(m[2]), m[1].lower()))
        elif (m := _BUCKET.match(item)) is not None:
            out.append((_unquote(m[2]), f"bucket({int(m[1])})"))
        elif re.fullmatch(r"\w+|`[^`]+`|\"[^\"]+\"", item.strip()):
            out.append((_unquote(item), "identity"))
        else:
            raise StatementError(
                f"partition key {item!r} is not understood; accepted: {', '.join(PARTITION_FORMS)}"
            )
    if not out:
        raise StatementError("PARTITIONED BY needs at least one key (or use RESET)")
    return out


def sort_fields(items: list[str]) -> list[tuple[str, str, str]]:
    """`["a DESC NULLS LAST", "b"]` -> `[("a", "DESC", "NULLS_LAST"), ("b", "ASC", ...)]`.

    As in DuckDB, the null order defaults to NULLS LAST.
    """
    out = []
    for item in items:
        m = _SORT.match(item.strip())
        if m is None or not m["expr"].strip():
            raise StatementError(f"sort key {item!r} is not understood; accepted: {SORT_FORM}")
        direction = (m["dir"] or "ASC").upper()
        nulls = f"NULLS_{(m['nulls'] or 'LAST').upper()}"
        out.append((_unquote(m["expr"]), direction, nulls))
    if not out:
        raise StatementError("SORTED BY needs at least one key (or use RESET)")
    return out
