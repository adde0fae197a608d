"""`changes_made` strings: how a snapshot lists what it changed.

DuckDB's own conflict detection parses these strings, so they must be exact:
`created_table:"s"."t"` with `"` doubled inside names, ids as plain integers.
"""

from __future__ import annotations

from collections.abc import Iterable

from .models import Change

# Order in which DuckDB lists a snapshot's changes (ids ascending within a kind).
CHANGE_ORDER = (
    "dropped_schema",
    "dropped_table",
    "dropped_view",
    "created_schema",
    "created_table",
    "created_view",
    "created_scalar_macro",
    "created_table_macro",
    "dropped_scalar_macro",
    "dropped_table_macro",
    "inserted_into_table",
    "deleted_from_table",
    "altered_table",
    "altered_view",
    "inlined_insert",
    "inlined_delete",
    "inline_flush",
    "merge_adjacent",
    "rewrite_delete",
    "compacted_table",  # read for old lakes, never written
)
KNOWN_KINDS = frozenset(CHANGE_ORDER) | {"flushed_inlined"}
COMPACTION_KINDS = frozenset({"compacted_table", "merge_adjacent", "rewrite_delete"})
# kinds whose value is a table or view id: schema ids, names and macros excepted
ENTRY_ID_KINDS = frozenset(
    k
    for k in KNOWN_KINDS
    if k != "dropped_schema" and not k.startswith("created_") and "macro" not in k
)


def quote_name(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def qualified_name(schema: str, name: str) -> str:
    return f"{quote_name(schema)}.{quote_name(name)}"


def parse_qualified(value: str) -> tuple[str, ...]:
    """`"s"."t"` -> ("s", "t"); `"s"` -> ("s",)."""
    parts: list[str] = []
    i = 0
    while i < len(value):
        if value[i] != '"':
            i += 1
            continue
        j = i + 1
        buf = []
        while j < len(value):
            if value[j] == '"':
                if j + 1 < len(value) and value[j + 1] == '"':
                    buf.append('"')
                    j += 2
                    continue
                break
            buf.append(value[j])
            j += 1
        parts.append("".join(buf))
        i = j + 1
    return tuple(parts)


def format_changes(changes: Iterable[Change]) -> str:
    """Deduplicate and order changes as one `changes_made` string."""
    seen: dict[str, Change] = {}
    for c in changes:
        if c.kind not in KNOWN_KINDS:
            raise ValueError(f"unknown DuckLake change type {c.kind!r}")
        seen.setdefault(str(c), c)
    rank = {k: i for i, k in enumerate(CHANGE_ORDER)}

    def key(c: Change) -> tuple[int, int, str]:
        return (rank[c.kind], int(c.value) if c.value.isdigit() else 0, c.value)

    ordered = sorted(seen.values(), key=key)
    return ",".join(str(c) for c in ordered)


def split_changes(changes_made: str | None) -> tuple[Change, ...]:
    """Split `a:1,created_table:"s"."x,y"` on commas outside double quotes."""
    if not changes_made:
        return ()
    out: list[Change] = []
    buf: list[str] = []
    in_quotes = False
    for ch in changes_made:
        if ch == '"':
            in_quotes = not in_quotes
        if ch == "," and not in_quotes:
            out.append(_change("".join(buf)))
            buf = []
        else:
            buf.append(ch)
    if buf:
        out.append(_change("".join(buf)))
    return tuple(out)


def _change(entry: str) -> Change:
    kind, _, value = entry.partition(":")
    return Change(kind, value)
