"""`changes_made` strings and the spec's logical-conflict rules between snapshots.

DuckDB's own conflict detection parses these strings, so they must be exact:
`created_table:"s"."t"` with `"` doubled inside names, ids as plain integers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from .errors import CommitConflictError
from .models import Change, Snapshot

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


@dataclass
class ChangeSet:
    """The changes of one snapshot, grouped for conflict checks (names case-folded)."""

    created_schemas: set[str] = field(default_factory=set)
    dropped_schemas: set[int] = field(default_factory=set)
    created_entries: set[tuple[str, str]] = field(default_factory=set)  # tables and views
    dropped_tables: set[int] = field(default_factory=set)
    dropped_views: set[int] = field(default_factory=set)
    altered_tables: set[int] = field(default_factory=set)
    altered_views: set[int] = field(default_factory=set)
    inserted: set[int] = field(default_factory=set)  # inserted_into_table
    inlined_inserted: set[int] = field(default_factory=set)
    deleted: set[int] = field(default_factory=set)  # deleted_from_table
    inlined_deleted: set[int] = field(default_factory=set)
    flushed: set[int] = field(default_factory=set)  # inline_flush
    compacted: set[int] = field(default_factory=set)  # merge_adjacent / rewrite_delete

    @classmethod
    def of(cls, changes: Iterable[Change]) -> ChangeSet:
        cs = cls()
        for c in changes:
            cs.add(c)
        return cs

    def add(self, c: Change) -> None:
        k = c.kind
        if k == "created_schema":
            (name,) = parse_qualified(c.value) or (c.value,)
            self.created_schemas.add(name.casefold())
        elif k in ("created_table", "created_view"):
            parts = parse_qualified(c.value)
            if len(parts) == 2:
                self.created_entries.add((parts[0].casefold(), parts[1].casefold()))
        elif k == "dropped_schema":
            self.dropped_schemas.add(int(c.value))
        elif k == "dropped_table":
            self.dropped_tables.add(int(c.value))
        elif k == "dropped_view":
            self.dropped_views.add(int(c.value))
        elif k == "altered_table":
            self.altered_tables.add(int(c.value))
        elif k == "altered_view":
            self.altered_views.add(int(c.value))
        elif k == "inserted_into_table":
            self.inserted.add(int(c.value))
        elif k == "inlined_insert":
            self.inlined_inserted.add(int(c.value))
        elif k == "deleted_from_table":
            self.deleted.add(int(c.value))
        elif k == "inlined_delete":
            self.inlined_deleted.add(int(c.value))
        elif k in ("inline_flush", "flushed_inlined"):
            self.flushed.add(int(c.value))
        elif k in COMPACTION_KINDS:
            self.compacted.add(int(c.value))


@dataclass
class Intent:
    """What a transaction is about to do, before ids of new objects are known."""

    changes: ChangeSet
    # schema name (case-folded) -> id, for every existing schema we create entries in
    target_schema_ids: dict[str, int] = field(default_factory=dict)
    # ids and names of schemas we drop
    dropped_schema_names: dict[int, str] = field(default_factory=dict)
    # data files we add delete files to or end, per table (file-level delete conflicts)
    deleted_files: dict[int, set[int]] = field(default_factory=dict)


def check_conflicts(
    intent: Intent,
    others: Iterable[Snapshot],
    files_deleted_since: Callable[[], set[int]],
    name_of: Callable[[int], str] = str,
) -> None:
    """Raise CommitConflictError naming the first snapshot whose changes clash with ours.

    The rules are DuckDB's: inserts never conflict with inserts, deletes conflict with
    other deletes only when they touch the same data file (`files_deleted_since` lists
    data files that got deletes or were ended after our base snapshot). `name_of` turns
    a table or view id into the `schema.name` the error shows.
    """
    ours = intent.changes
    for snap in others:
        theirs = ChangeSet.of(snap.changes)

        def clash(what: str, change: str, snap: Snapshot = snap) -> CommitConflictError:
            kind, _, value = change.partition(":")
            # errors name tables as schema.table, never by id
            entry = kind in ENTRY_ID_KINDS and value.isdigit()
            shown = f"{kind} on {name_of(int(value))}" if entry else change
            return CommitConflictError(
                f"commit conflict: {what} (snapshot {snap.snapshot_id} committed "
                f"{shown} after this transaction's base snapshot); nothing was committed",
                snapshot_id=snap.snapshot_id,
                change=change,
            )

        def overlap(mine: set[int], their_sets: dict[str, set[int]], verb: str) -> None:
            for kind, their in their_sets.items():
                for tid in sorted(mine & their):
                    what = tid if verb == "drop schema" else name_of(tid)
                    raise clash(
                        f"cannot {verb} {what}: another snapshot changed it", f"{kind}:{tid}"
                    )

        for name in sorted(ours.created_schemas & theirs.created_schemas):
            raise clash(
                f"schema {name!r} was created concurrently", f"created_schema:{quote_name(name)}"
            )
        overlap(ours.dropped_schemas, {"dropped_schema": theirs.dropped_schemas}, "drop schema")
        for sname in intent.dropped_schema_names.values():
            for schema, entry in sorted(theirs.created_entries):
                if schema == sname.casefold():
                    raise clash(
                        f"cannot drop schema {sname!r}: an entry was created in it",
                        f"created_table:{qualified_name(schema, entry)}",
                    )
        for sname, target_id in sorted(intent.target_schema_ids.items()):
            if target_id in theirs.dropped_schemas:
                raise clash(
                    f"schema {sname!r} was dropped while creating an entry in it",
                    f"dropped_schema:{target_id}",
                )
        for schema, entry in sorted(ours.created_entries & theirs.created_entries):
            raise clash(
                f"{schema}.{entry} was created concurrently",
                f"created_table:{qualified_name(schema, entry)}",
            )
        overlap(ours.dropped_tables, {"dropped_table": theirs.dropped_tables}, "drop table")
        overlap(ours.dropped_views, {"dropped_view": theirs.dropped_views}, "drop view")
        overlap(
            ours.altered_tables,
            {"dropped_table": theirs.dropped_tables, "altered_table": theirs.altered_tables},
            "alter table",
        )
        overlap(ours.altered_views, {"altered_view": theirs.altered_views}, "alter view")
        overlap(
            ours.inserted | ours.inlined_inserted,
            {
                "dropped_table": theirs.dropped_tables,
                "altered_table": theirs.altered_tables,
                "deleted_from_table": theirs.deleted,
                "inlined_delete": theirs.inlined_deleted,
            },
            "insert into table",
        )
        overlap(
            ours.deleted,
            {
                "dropped_table": theirs.dropped_tables,
                "altered_table": theirs.altered_tables,
                "merge_adjacent": theirs.compacted,
                "inserted_into_table": theirs.inserted,
                "inlined_insert": theirs.inlined_inserted,
            },
            "delete from table",
        )
        if ours.deleted & theirs.deleted:
            ours_files = set().union(*(intent.deleted_files.get(t, set()) for t in ours.deleted))
            for file_id in sorted(ours_files & files_deleted_since()):
                tables = ", ".join(name_of(t) for t in sorted(ours.deleted & theirs.deleted))
                raise clash(
                    f"cannot delete from {tables} (data file {file_id}): another snapshot "
                    "deleted from the same file",
                    f"deleted_from_table:{min(ours.deleted & theirs.deleted)}",
                )
        overlap(
            ours.inlined_deleted,
            {
                "dropped_table": theirs.dropped_tables,
                "altered_table": theirs.altered_tables,
                "inlined_delete": theirs.inlined_deleted,
                "inline_flush": theirs.flushed,
                "inserted_into_table": theirs.inserted,
                "inlined_insert": theirs.inlined_inserted,
            },
            "delete from table",
        )
        overlap(
            ours.flushed,
            {
                "dropped_table": theirs.dropped_tables,
                "inlined_delete": theirs.inlined_deleted,
                "inline_flush": theirs.flushed,
            },
            "flush inlined data of table",
        )
        overlap(
            ours.compacted,
            {
                "dropped_table": theirs.dropped_tables,
                "deleted_from_table": theirs.deleted,
                "merge_adjacent": theirs.compacted,
            },
            "compact table",
        )
