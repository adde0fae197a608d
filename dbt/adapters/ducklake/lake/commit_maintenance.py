"""The catalog rows of maintenance commits: compactions and flushes of inlined data.

maintenance.py decides what to compact; this module only writes what the plan says,
with the rules of DuckDB's extension (as the tests check against it).
"""

from __future__ import annotations

from dataclasses import replace

from . import metadata_ddl as ddl
from .commit_data import DataWriter
from .plan import FlushInlined, MergeAdjacentFiles, RewriteDeletedFiles, TableRef


def merge_adjacent(ctx: DataWriter, t: TableRef, op: MergeAdjacentFiles) -> None:
    """The merged file stands in for its inputs at every snapshot, so their rows leave
    the catalog and their paths are scheduled for deletion."""
    ids = [f.data_file_id for f in op.replaced]
    for f in op.replaced:
        ctx.schedule_deletion(t, f.data_file_id, f.stored_path, f.path_is_relative)
    for target in (
        "ducklake_data_file",
        "ducklake_file_column_stats",
        "ducklake_file_partition_value",
    ):
        ctx.run_in(f"DELETE FROM {ctx.t(target)} WHERE data_file_id IN :ids", ids)
    ctx.add_files(t, op.files, change=None, count=False)
    ctx.change("merge_adjacent", ctx.tid(t))


def rewrite_deleted(ctx: DataWriter, t: TableRef, op: RewriteDeletedFiles) -> None:
    """The new file holds the inputs' live rows from this snapshot on; the inputs and
    their delete files end here and stay readable by time travel."""
    ctx.end_files(t, [f.data_file_id for f in op.replaced], change=None)
    stats = ctx.table_stats(ctx.tid(t))
    stats.record_count -= sum(f.record_count for f in op.replaced)
    stats.file_size_bytes -= sum(f.file_size_bytes for f in op.replaced)
    stats.dirty = True
    ctx.add_files(t, op.files, change=None)
    ctx.change("rewrite_delete", ctx.tid(t))


def flush_inlined(ctx: DataWriter, t: TableRef, op: FlushInlined) -> None:
    table_id = ctx.tid(t)
    ids = ctx.add_files(t, op.files, change=None, count=False)
    deletes = [replace(d, data_file_id=ids[i]) for i, d in op.new_file_deletes]
    if deletes or op.file_deletes:
        ctx.add_deletes(t, [*deletes, *op.file_deletes])
    if op.row_ids:
        names = ctx.run(
            f"SELECT table_name FROM {ctx.t('ducklake_inlined_data_tables')} WHERE table_id = :tid",
            {"tid": table_id},
        ).fetchall()
        for (name,) in names:
            ctx.run_in(f"DELETE FROM {ctx.t(name)} WHERE row_id IN :ids", op.row_ids)
    if op.deleted_positions:
        ctx.run(
            f"DELETE FROM {ctx.t(ddl.inlined_delete_table_name(table_id))} "
            "WHERE file_id = :f AND row_id = :r",
            [{"f": f, "r": r} for f, r in op.deleted_positions],
        )
    ctx.change("inline_flush", table_id)
