"""Statement-level text handling for lake SQL: splitting a script into statements, and
the DuckLake layout ALTERs (`SET|RESET PARTITIONED BY`, `SET|RESET SORTED BY`) that Spark
grammars do not have.

Layout items use DuckLake's spelling, also accepted from dbt configs: partition keys
`col`, `year(col)`, `month(col)`, `day(col)`, `hour(col)`, `bucket(N, col)`; sort keys
`col [ASC|DESC] [NULLS FIRST|LAST]`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import sqlglot
from sqlglot.dialects.spark import Spark
from sqlglot.tokens import TokenType

from .errors import StatementError

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


_LEADING_COMMENTS = re.compile(r"^(?:\s*(?:/\*.*?\*/|--[^\n]*(?:\n|$)))*\s*", re.DOTALL)


def without_leading_comments(text: str) -> str:
    """The statement after the comments before it (dbt prefixes a /* query comment */)."""
    return _LEADING_COMMENTS.sub("", text)


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


def _depths(text: str, start: int = 0) -> Iterator[tuple[int, str, int]]:
    """(index, character, parenthesis depth after it) for characters outside quotes."""
    depth, quote = 0, ""
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            quote = "" if ch == quote else quote
            continue
        if ch in "'\"`":
            quote = ch
            continue
        depth += {"(": 1, ")": -1}.get(ch, 0)
        yield i, ch, depth


def split_top_level(text: str) -> list[str]:
    """Comma-separated items, ignoring commas inside parentheses and quotes."""
    cuts = [i for i, ch, depth in _depths(text) if ch == "," and depth == 0]
    items = [text[a + 1 : b].strip() for a, b in zip([-1, *cuts], [*cuts, len(text)], strict=True)]
    if items and not items[-1]:
        items.pop()  # a trailing comma
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
            if int(m[1]) < 1:
                raise StatementError(
                    f"partition key {item!r}: the bucket count N in bucket(N, col) must be "
                    "at least 1"
                )
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


def _is_expression(text: str) -> bool:
    """One SQL expression (a column or, as DuckLake allows, an expression of columns)."""
    try:
        trees = [t for t in sqlglot.parse(text, read="spark") if t is not None]
    except sqlglot.errors.ParseError:
        return False
    if len(trees) != 1:  # `id; drop view v`: more than one statement
        return False
    tree = trees[0]
    return isinstance(tree, sqlglot.exp.Expression) and not isinstance(
        tree, sqlglot.exp.Alias | sqlglot.exp.Query
    )


def sort_fields(items: list[str]) -> list[tuple[str, str, str]]:
    """`["a DESC NULLS LAST", "b"]` -> `[("a", "DESC", "NULLS_LAST"), ("b", "ASC", ...)]`.

    As in DuckDB, the null order defaults to NULLS LAST.
    """
    out = []
    for item in items:
        m = _SORT.match(item.strip())
        if m is None or not _is_expression(m["expr"]):
            raise StatementError(f"sort key {item!r} is not understood; accepted: {SORT_FORM}")
        direction = (m["dir"] or "ASC").upper()
        nulls = f"NULLS_{(m['nulls'] or 'LAST').upper()}"
        out.append((_unquote(m["expr"]), direction, nulls))
    if not out:
        raise StatementError("SORTED BY needs at least one key (or use RESET)")
    return out


_CREATE_TABLE = re.compile(
    r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?"
    r"(?:`[^`]*`|\"[^\"]*\"|[\w.])+\s*",
    re.IGNORECASE,
)
_LAYOUT_CLAUSE = re.compile(r"(PARTITIONED|SORTED)\s+BY\s*\(", re.IGNORECASE)


@dataclass
class CreateLayout:
    text: str  # the statement without its layout clauses
    partition: list[tuple[str, str]] | None
    sort: list[tuple[str, str, str]] | None


def extract_create_layout(text: str) -> CreateLayout | None:
    """`CREATE TABLE t [(cols)] PARTITIONED BY (…) SORTED BY (…) AS …`: the layout
    clauses taken out (a table gets its layout in the snapshot that creates it), or
    None when `text` has none."""
    m = _CREATE_TABLE.match(text)
    if m is None:
        return None
    pos = m.end()
    if text.startswith("(", pos):  # declared columns
        pos += _balanced_length(text, pos)
    start = pos
    found: dict[str, list[str]] = {}
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        clause = _LAYOUT_CLAUSE.match(text, pos)
        if clause is None:
            break
        what = clause[1].upper()
        if what in found:
            raise StatementError(f"CREATE TABLE: {what} BY given twice")
        open_at = clause.end() - 1
        length = _balanced_length(text, open_at)
        found[what] = split_top_level(text[open_at + 1 : open_at + length - 1])
        pos = open_at + length
    if not found:
        return None
    return CreateLayout(
        text=text[:start] + " " + text[pos:],
        partition=partition_fields(found["PARTITIONED"]) if "PARTITIONED" in found else None,
        sort=sort_fields(found["SORTED"]) if "SORTED" in found else None,
    )


def _balanced_length(text: str, open_at: int) -> int:
    """Length of the parenthesised group opening at `open_at` (quotes respected)."""
    for i, ch, depth in _depths(text, open_at):
        if ch == ")" and depth == 0:
            return i - open_at + 1
    raise StatementError("unbalanced parentheses in CREATE TABLE")
