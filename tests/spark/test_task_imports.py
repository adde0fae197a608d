"""What Spark tasks run must load where only pyspark[sql] is installed: no dbt, no
SQLAlchemy. The task bodies the engine hands to `mapInArrow` during real writes,
deletes, footer reads and file removal are recorded, pickled as Spark pickles them,
and loaded in a fresh interpreter that cannot import dbt (other than this adapter's
own modules) or SQLAlchemy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from pyspark import cloudpickle

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark import native_write
from dbt.adapters.ducklake.spark.dml import delete_where
from dbt.adapters.ducklake.spark.engine import create_table_as
from dbt.adapters.ducklake.spark.maintenance import remove_files
from tests.conftest import Catalog

EXECUTOR = """
import importlib.abc, pickle, sys

class NotOnExecutors(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        ours = name in ("dbt", "dbt.adapters") or name.startswith("dbt.adapters.ducklake")
        if name.split(".")[0] in ("sqlalchemy", "dbt_common") or (
            name.startswith("dbt") and not ours
        ):
            raise ImportError(f"{name} is not installed on executors")
        return None

sys.meta_path.insert(0, NotOnExecutors())
loaded = [type(pickle.loads(blob)).__name__ for blob in pickle.load(sys.stdin.buffer)]
print(" ".join(loaded))
"""


def test_task_bodies_load_without_dbt_or_sqlalchemy(
    spark, sqlite_catalog: Catalog, tmp_path: Path, monkeypatch
) -> None:
    shipped: list[Any] = []
    frame_type = type(spark.range(1))
    real_map = frame_type.mapInArrow

    def recording(self, func, schema, *args, **kwargs):
        shipped.append(func)
        return real_map(self, func, schema, *args, **kwargs)

    monkeypatch.setattr(frame_type, "mapInArrow", recording)
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    # a partitioned table goes through the Arrow writer's task
    lake_sql = "SELECT id, CAST(id % 3 AS INT) AS p FROM range(100)"
    create_table_as(lake, "main", "parts", spark.sql(lake_sql), partition_by=[("p", "identity")])
    # past 64 files, the footers of Spark's own files are read by tasks (here: past 0)
    monkeypatch.setattr(native_write, "_DRIVER_FOOTERS", 0)
    # (a plan bounding the rows to a few is written by the driver: this one is not)
    create_table_as(lake, "main", "flat", spark.range(20_000).where("id < 100"))
    # over the inlining limit: delete files written by tasks
    delete_where(spark, lake, "main", "parts", "id < 50")
    doomed = tmp_path / "doomed.parquet"
    doomed.write_bytes(b"x")
    assert remove_files(spark, lake.files, [str(doomed)]) == 1
    # an encrypted lake: files held in task memory, handed on, sealed, stored
    sealed = Lake.open(
        f"sqlite:///{tmp_path}/sealed.sqlite", data_path=str(tmp_path / "sealed"), encrypted=True
    )
    create_table_as(sealed, "main", "t", spark.sql(lake_sql), partition_by=[("p", "identity")])
    delete_where(spark, sealed, "main", "t", "id < 50")
    kinds = {getattr(f, "__name__", type(f).__name__) for f in shipped}
    expected = {"WriteTask", "FooterTask", "StageDeletesTask", "RemovePaths", "HandOn"}
    assert expected | {"StoreSealed"} <= kinds, kinds

    blobs = [cloudpickle.dumps(f) for f in shipped]
    done = subprocess.run(
        [sys.executable, "-c", EXECUTOR],
        input=cloudpickle.dumps(blobs),
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    assert len(done.stdout.split()) == len(shipped)
