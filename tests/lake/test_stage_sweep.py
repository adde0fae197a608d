"""Staging copies dead builds left behind are swept once older than the orphan age
(lake/stage_sweep.py); a live build's copy, and every file some catalog knows, stay.

On both backends: a dead build's copy (with a Parquet file it registered), a copy whose
build was killed right after its publish committed, and a live build's copy. The next
`open_stage` (the lake's `delete_older_than`) and `sweep_stages` with `older_than`
drop exactly the stale ones, remove the files only they knew, and hand the live copy's
files to `find_orphans` to keep.
"""

from __future__ import annotations

import os
import time
from datetime import datetime, timezone

from dbt.adapters.ducklake.lake import (
    ColumnSpec,
    Lake,
    drop_stage,
    find_orphans,
    open_stage,
    publish,
    staged_files,
    sweep_stages,
)
from dbt.adapters.ducklake.lake.maintenance import known_files
from dbt.adapters.ducklake.lake.stage_sweep import list_stages
from tests import duck
from tests.conftest import Catalog
from tests.lake.test_publish import _real_lake
from tests.lakefiles import write_data_file


def _build_into(stage: Lake, table: str) -> str:
    """One staged commit with one Parquet file; the file's path."""
    with stage.transaction() as tx:
        t = tx.create_table("main", table, [ColumnSpec("id", "int64")])
        tx.add_data_files(t, [write_data_file(t, [(i,) for i in range(15)])])
    (path,) = staged_files(stage)
    return path


def _real_files(lake: Lake) -> set[str]:
    with lake.connect() as conn:
        return known_files(lake, conn)


def test_stale_copies_go_live_ones_and_known_files_stay(catalog: Catalog) -> None:
    real = _real_lake(catalog)
    dead = open_stage(real, "dead")
    dead_file = _build_into(dead, "dead_t")
    dead.close()  # killed: never dropped, never published
    published = open_stage(real, "published")
    published_file = _build_into(published, "pub_t")
    plans = [p for _, p in sorted(published.commit_log or [], key=lambda e: e[0])]
    assert publish(real, published, plans, author="t", message="m", extra_info=None)
    published.close()  # killed after the publish committed, before drop_stage
    time.sleep(1.2)
    cutoff = datetime.now(timezone.utc)
    live = open_stage(real, "live")
    live_file = _build_into(live, "live_t")
    assert len(list_stages(real)) == 3

    # delete_orphaned_files' view: the live copy's file is kept, the dead one's is not
    swept = sweep_stages(real, older_than=cutoff, dry_run=True)
    assert len(swept.dropped) == 2 and len(list_stages(real)) == 3
    assert os.path.normpath(live_file) in swept.live_files
    orphans = find_orphans(
        real, older_than=datetime.now(timezone.utc), cleanup_all=False, keep=swept.live_files
    )
    assert orphans.files == [os.path.normpath(dead_file)]

    # the next build's view (the lake's delete_older_than): stale copies and the files
    # only they knew go; the published file and the live copy stay
    with real.transaction() as tx:
        tx.set_option("delete_older_than", "1 second")
    time.sleep(1.2)
    live.commit_log = []  # the live build commits again: it is active
    _build_into_again(live)
    next_build = open_stage(real, "next")
    names = {os.path.basename(c.name) for c in list_stages(real)}
    assert len(names) == 2 and all("live" in n or "next" in n for n in names), names
    assert not os.path.exists(dead_file)
    assert os.path.exists(published_file) and os.path.exists(live_file)
    assert len(_real_files(real)) == 2 and all(os.path.exists(p) for p in _real_files(real))
    drop_stage(next_build)
    drop_stage(live)

    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach)
    assert con.execute("SELECT count(*) FROM lake.main.pub_t").fetchall() == [(15,)]
    assert con.execute("SELECT count(*) FROM lake.main.base").fetchall() == [(20,)]
    con.close()
    real.close()


def _build_into_again(stage: Lake) -> None:
    with stage.transaction() as tx:
        t = tx.table("main", "live_t")
        tx.add_data_files(t, [write_data_file(t, [(99,)])])
