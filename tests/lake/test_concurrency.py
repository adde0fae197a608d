"""Several processes commit to one lake: non-conflicting commits all land with dense
snapshot ids; of two conflicting commits exactly one wins and the other commits nothing."""

from __future__ import annotations

import multiprocessing as mp
import time
import traceback

import pytest

from dbt.adapters.ducklake.lake import ColumnSpec, CommitConflictError, Lake
from tests.conftest import Catalog

COMMITS_PER_PROCESS = 50


def _writer(metadata: str, worker: int, barrier, results) -> None:
    try:
        lake = Lake.open(metadata)
        barrier.wait()
        for i in range(COMMITS_PER_PROCESS):
            with lake.transaction(author=f"w{worker}", commit_message=f"{worker}:{i}") as tx:
                if i % 10 == 0:
                    tx.create_table("main", f"w{worker}_{i}", [ColumnSpec("a", "int32")])
                else:
                    tx.insert_inlined(tx.table("main", "shared"), [(worker * 1000 + i,)])
        results.put(("ok", worker))
    except Exception:  # reported to the parent, which fails the test
        results.put(("error", traceback.format_exc()))


def _run(target, args_list):
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(len(args_list))
    results = ctx.Queue()
    procs = [ctx.Process(target=target, args=(*args, barrier, results)) for args in args_list]
    for p in procs:
        p.start()
    out = [results.get(timeout=240) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    return out


@pytest.mark.slow  # two writer processes
def test_two_processes_fifty_commits_each(catalog: Catalog) -> None:
    lake = Lake.open(catalog.metadata, data_path=catalog.data_path)
    with lake.transaction() as tx:
        tx.create_table("main", "shared", [ColumnSpec("v", "int64")])
    start = lake.latest_snapshot().snapshot_id
    results = _run(_writer, [(catalog.metadata, 1), (catalog.metadata, 2)])
    assert sorted(results) == [("ok", 1), ("ok", 2)], results
    snaps = lake.snapshots(since=start)
    assert [s.snapshot_id for s in snaps] == list(range(start + 1, start + 1 + 100))
    assert sorted(s.commit_message for s in snaps) == sorted(
        f"{w}:{i}" for w in (1, 2) for i in range(COMMITS_PER_PROCESS)
    )
    cat = lake.catalog()
    rows = cat.inlined_rows(cat.table("main", "shared").table_id)
    assert len(rows) == 2 * (COMMITS_PER_PROCESS - COMMITS_PER_PROCESS // 10)
    assert len({r.row_id for r in rows}) == len(rows)  # row ids never reused
    assert len(cat.tables("main")) == 1 + 2 * (COMMITS_PER_PROCESS // 10)


def _stage(lake: Lake, kind: str):
    tx = lake.transaction(commit_message=kind)
    if kind == "drop_twice":
        tx.drop_table("main", "t")
    elif kind == "insert_vs_drop":
        tx.insert_inlined(tx.table("main", "t"), [(1,)])
    elif kind == "drop_vs_insert":
        tx.drop_table("main", "t")
    elif kind == "create_twice":
        tx.create_table("main", "fresh", [ColumnSpec("a", "int32")])
    return tx


PAIRS = {
    "drop_twice": ("drop_twice", "drop_twice"),
    "insert_into_dropped": ("drop_vs_insert", "insert_vs_drop"),
    "create_twice": ("create_twice", "create_twice"),
}


def _racer(metadata: str, kind: str, ordered, barrier, results) -> None:
    try:
        lake = Lake.open(metadata)
        tx = _stage(lake, kind)
        barrier.wait()  # both staged on the same base snapshot
        if ordered and kind == "insert_vs_drop":
            # DuckDB's rules are asymmetric: inserting into a table dropped meanwhile
            # conflicts, dropping a table someone inserted into does not. Let the drop go first.
            while lake.latest_snapshot().commit_message != "drop_vs_insert":
                time.sleep(0.01)
        try:
            snap = tx.commit()
            results.put(("won", kind, snap.snapshot_id if snap else None))
        except CommitConflictError as exc:
            results.put(("conflict", kind, str(exc)))
    except Exception:
        results.put(("error", kind, traceback.format_exc()))


def _setup(catalog: Catalog) -> Lake:
    lake = Lake.open(catalog.metadata, data_path=catalog.data_path)
    with lake.transaction() as tx:
        tx.create_table("main", "t", [ColumnSpec("a", "int32")])
    return lake


@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_conflicting_pair_in_one_process(catalog: Catalog, pair: str) -> None:
    lake = _setup(catalog)
    first, second = (_stage(lake, k) for k in PAIRS[pair])
    winner = first.commit()
    assert winner is not None
    before = lake.latest_snapshot()
    with pytest.raises(CommitConflictError) as err:
        second.commit()
    assert err.value.snapshot_id == winner.snapshot_id
    assert "nothing was committed" in str(err.value)
    assert lake.latest_snapshot() == before


@pytest.mark.slow  # a writer process per side
@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_conflicting_pair_across_processes(catalog: Catalog, pair: str) -> None:
    lake = _setup(catalog)
    start = lake.latest_snapshot().snapshot_id
    ordered = pair == "insert_into_dropped"
    results = _run(_racer, [(catalog.metadata, k, ordered) for k in PAIRS[pair]])
    outcomes = sorted(r[0] for r in results)
    assert outcomes == ["conflict", "won"], results
    assert lake.latest_snapshot().snapshot_id == start + 1  # the loser wrote nothing


def test_primary_key_collision_is_retried_with_fresh_ids(pg_catalog: Catalog) -> None:
    """A foreign writer (like DuckDB, without our lock) takes the next snapshot id first."""
    import threading

    import psycopg

    lake = _setup(pg_catalog)
    base = lake.latest_snapshot()
    dbname = pg_catalog.duckdb_attach.split("dbname=")[1].split()[0]
    foreign = psycopg.connect(f"host=127.0.0.1 dbname={dbname}")
    foreign.execute(
        "INSERT INTO ducklake_snapshot VALUES (%s, now(), %s, %s, %s)",
        (base.snapshot_id + 1, base.schema_version, base.next_catalog_id, base.next_file_id),
    )
    foreign.execute(
        "INSERT INTO ducklake_snapshot_changes "
        "VALUES (%s, 'inlined_insert:999', 'other', NULL, NULL)",
        (base.snapshot_id + 1,),
    )
    tx = lake.transaction(commit_message="ours")
    tx.create_table("main", "late", [ColumnSpec("a", "int32")])
    outcome: dict[str, object] = {}
    worker = threading.Thread(target=lambda: outcome.setdefault("snap", tx.commit()))
    worker.start()
    time.sleep(0.5)  # our INSERT of the same snapshot id is now blocked on the foreign row
    foreign.commit()
    foreign.close()
    worker.join(timeout=30)
    snap = outcome["snap"]
    assert snap is not None and snap.snapshot_id == base.snapshot_id + 2
    ids = [s.snapshot_id for s in lake.snapshots()]
    assert ids == list(range(len(ids)))
    assert lake.catalog().find_table("main", "late") is not None
