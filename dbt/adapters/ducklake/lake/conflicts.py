"""The spec's logical-conflict rules between a commit and the snapshots it raced."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from .changes_made import (
    COMPACTION_KINDS,
    ENTRY_ID_KINDS,
    parse_qualified,
    qualified_name,
    quote_name,
)
from .errors import CommitConflictError
from .models import Change, Snapshot
from .plan import (
    AddDataFiles,
    AddDeleteFiles,
    AlterTable,
    CommentOnSchema,
    CommentOnView,
    CommitPlan,
    CreateSchema,
    CreateTable,
    CreateView,
    DataOp,
    DropSchema,
    DropTable,
    DropView,
    EndDataFiles,
    FlushInlined,
    InsertInlined,
    MergeAdjacentFiles,
    RewriteDeletedFiles,
    SchemaRef,
)


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

    @property
    def inserted_any(self) -> set[int]:
        """Tables inserted into, by files or inlined rows."""
        return self.inserted | self.inlined_inserted

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


def intent_of(plan: CommitPlan) -> Intent:
    """The plan's changes as the conflict rules see them."""
    cs = ChangeSet()
    intent = Intent(cs)

    def creates_in(schema: SchemaRef) -> None:
        if schema.schema_id is not None:
            intent.target_schema_ids[schema.name.casefold()] = schema.schema_id

    for op in plan.catalog_ops:
        match op:
            case CreateSchema():
                cs.created_schemas.add(op.schema.name.casefold())
            case DropSchema():
                cs.dropped_schemas.add(op.schema_id)
                intent.dropped_schema_names[op.schema_id] = op.name
            case CreateTable():
                cs.add(Change("created_table", qualified_name(op.table.schema.name, op.table.name)))
                creates_in(op.table.schema)
            case DropTable():
                cs.dropped_tables.add(op.table_id)
            case AlterTable():
                table_id = op.table.table_id
                assert table_id is not None
                if op.renamed:
                    cs.add(
                        Change("created_table", qualified_name(op.table.schema.name, op.table.name))
                    )
                if op.altered:
                    cs.altered_tables.add(table_id)
            case CreateView():
                cs.add(Change("created_view", qualified_name(op.schema.name, op.name)))
                creates_in(op.schema)
            case DropView():
                cs.dropped_views.add(op.view_id)
            case CommentOnView():
                cs.altered_views.add(op.view_id)
            case CommentOnSchema():
                pass  # the spec records no change for a schema's comment
    for data_op in plan.data_ops:
        table_id = plan.table(data_op.table_uuid).table_id
        if table_id is not None:
            _data_intent(intent, table_id, data_op)
    return intent


def _data_intent(intent: Intent, table_id: int, op: DataOp) -> None:
    cs = intent.changes
    match op:
        case AddDataFiles():
            cs.inserted.add(table_id)
        case InsertInlined():
            cs.inlined_inserted.add(table_id)
        case MergeAdjacentFiles() | RewriteDeletedFiles():
            cs.compacted.add(table_id)
        case FlushInlined():
            cs.flushed.add(table_id)
        case AddDeleteFiles() | EndDataFiles():
            cs.deleted.add(table_id)
            ids = (
                {f.data_file_id for f in op.files}
                if isinstance(op, AddDeleteFiles)
                else set(op.data_file_ids)
            )
            intent.deleted_files.setdefault(table_id, set()).update(ids)
        case _:
            cs.inlined_deleted.add(table_id)


# DuckDB's rules for tables and views: (our change set, their change kinds that clash
# with it, what we tried to do). `_THEIR_SETS` names the ChangeSet field of each kind.
_THEIR_SETS = {
    "dropped_table": "dropped_tables",
    "dropped_view": "dropped_views",
    "altered_table": "altered_tables",
    "altered_view": "altered_views",
    "inserted_into_table": "inserted",
    "inlined_insert": "inlined_inserted",
    "deleted_from_table": "deleted",
    "inlined_delete": "inlined_deleted",
    "inline_flush": "flushed",
    "merge_adjacent": "compacted",
}
_ENTRY_RULES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("dropped_tables", ("dropped_table",), "drop table"),
    ("dropped_views", ("dropped_view",), "drop view"),
    ("altered_tables", ("dropped_table", "altered_table"), "alter table"),
    ("altered_views", ("altered_view",), "alter view"),
    (
        "inserted_any",
        ("dropped_table", "altered_table", "deleted_from_table", "inlined_delete"),
        "insert into table",
    ),
    (
        "deleted",
        (
            "dropped_table",
            "altered_table",
            "merge_adjacent",
            "inserted_into_table",
            "inlined_insert",
        ),
        "delete from table",
    ),
)
# checked after deletes that touch the same data file
_LATE_RULES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    (
        "inlined_deleted",
        (
            "dropped_table",
            "altered_table",
            "inlined_delete",
            "inline_flush",
            "inserted_into_table",
            "inlined_insert",
        ),
        "delete from table",
    ),
    (
        "flushed",
        ("dropped_table", "inlined_delete", "inline_flush"),
        "flush inlined data of table",
    ),
    (
        "compacted",
        ("dropped_table", "deleted_from_table", "merge_adjacent"),
        "compact table",
    ),
)


class _Clash:
    """Builds the CommitConflictError for one concurrent snapshot."""

    def __init__(self, snap: Snapshot, name_of: Callable[[int], str]):
        self.snap = snap
        self.name_of = name_of

    def __call__(self, what: str, change: str) -> CommitConflictError:
        kind, _, value = change.partition(":")
        # errors name tables as schema.table, never by id
        entry = kind in ENTRY_ID_KINDS and value.isdigit()
        shown = f"{kind} on {self.name_of(int(value))}" if entry else change
        return CommitConflictError(
            f"commit conflict: {what} (snapshot {self.snap.snapshot_id} committed "
            f"{shown} after this transaction's base snapshot); nothing was committed",
            snapshot_id=self.snap.snapshot_id,
            change=change,
        )


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
    for snap in others:
        theirs = ChangeSet.of(snap.changes)
        clash = _Clash(snap, name_of)
        _check_schemas(intent, theirs, clash)
        _check_entries(intent.changes, theirs, clash, _ENTRY_RULES)
        _check_same_files(intent, theirs, files_deleted_since, clash)
        _check_entries(intent.changes, theirs, clash, _LATE_RULES)


def _check_schemas(intent: Intent, theirs: ChangeSet, clash: _Clash) -> None:
    ours = intent.changes
    for name in sorted(ours.created_schemas & theirs.created_schemas):
        raise clash(
            f"schema {name!r} was created concurrently", f"created_schema:{quote_name(name)}"
        )
    for schema_id in sorted(ours.dropped_schemas & theirs.dropped_schemas):
        raise clash(
            f"cannot drop schema {schema_id}: another snapshot changed it",
            f"dropped_schema:{schema_id}",
        )
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


def _check_entries(
    ours: ChangeSet,
    theirs: ChangeSet,
    clash: _Clash,
    rules: tuple[tuple[str, tuple[str, ...], str], ...],
) -> None:
    for mine_field, their_kinds, verb in rules:
        mine: set[int] = getattr(ours, mine_field)
        for kind in their_kinds:
            for entry_id in sorted(mine & getattr(theirs, _THEIR_SETS[kind])):
                raise clash(
                    f"cannot {verb} {clash.name_of(entry_id)}: another snapshot changed it",
                    f"{kind}:{entry_id}",
                )


def _check_same_files(
    intent: Intent, theirs: ChangeSet, files_deleted_since: Callable[[], set[int]], clash: _Clash
) -> None:
    ours = intent.changes
    both = ours.deleted & theirs.deleted
    if not both:
        return
    ours_files = set().union(*(intent.deleted_files.get(t, set()) for t in ours.deleted))
    for file_id in sorted(ours_files & files_deleted_since()):
        tables = ", ".join(clash.name_of(t) for t in sorted(both))
        raise clash(
            f"cannot delete from {tables} (data file {file_id}): another snapshot "
            "deleted from the same file",
            f"deleted_from_table:{min(both)}",
        )
