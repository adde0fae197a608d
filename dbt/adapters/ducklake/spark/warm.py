"""A new process's first statements cost seconds more than the next ones: the JVM loads
and compiles the classes of each code path (planning, Parquet, joins, the commit) on first
use. `warm_up` runs the statements dbt's materializations run, on a throwaway lake in a
temporary folder, so that the user's first model finds those paths warm. dbt starts it
in the background while it parses the project (`prestart.py`); it gives way as soon as a
real statement needs Spark (`give_way`), so it only fills time nobody waits on."""

from __future__ import annotations

import atexit
import contextlib
import logging
import shutil
import tempfile
import threading
import time
import uuid

from pyspark.sql import DataFrame, SparkSession

from ..lake import Lake
from .session import label_jobs
from .sql import LakeSQL
from .versions import client_is_spark_4

log = logging.getLogger(__name__)

# what dbt's table and incremental (append, merge) materializations run, in order;
# {view} is a temporary view of a unique name
_STATEMENTS = (
    "CREATE TABLE warm AS SELECT id, concat('v', id) AS s, id * 0.5 AS d FROM range(8)",
    # rows Spark computes (range: ids 2 and 9), so the MERGE takes Spark's path, as a
    # dbt model's MERGE does; rows the driver holds (VALUES) are decided on the driver,
    # which the second MERGE warms
    "CREATE OR REPLACE TEMPORARY VIEW {view} AS SELECT id, concat('w', id) AS s, "
    "id * 1.5 AS d FROM range(2, 10, 7)",
    "INSERT INTO warm SELECT id + 100, s, d FROM {view}",
    "MERGE INTO warm AS t USING {view} AS s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
    "MERGE INTO warm AS t USING (SELECT id, concat('x', id) AS s, id * 1.5 AS d "
    "FROM (VALUES (3), (11)) AS v(id)) AS s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
    "SELECT count(*), sum(d) FROM warm",
    # a DELETE of more than 1,000 rows (dml.FEW_VICTIMS) stages them in a Python task:
    # Spark starts its Python workers, which it keeps, and they import the task's module.
    # A new JVM's first such DELETE took 1.8-1.9 s after the statements above, 0.4-0.5 s
    # (as the next ones) after these too
    "CREATE TABLE wide AS SELECT id, concat('v', id) AS s FROM range(4000)",
    "DELETE FROM wide WHERE id % 2 = 0",
)
_give_way = threading.Event()


def give_way() -> None:
    """A real statement needs Spark: a running warm-up stops after its statement."""
    _give_way.set()


def import_what_lit_imports() -> None:
    """pyspark 4's `lit` imports its testing helpers, and with them pandas, on first
    use: 0.3-0.45 s that the first MERGE would otherwise pay. 3.5's imports nothing
    (and its testing helpers fail to import beside numpy 2): left alone there."""
    if not client_is_spark_4():
        return
    with contextlib.suppress(Exception):  # only a head start: `lit` reports its own
        import pyspark.testing.utils  # noqa: F401


def touch_session(spark: SparkSession) -> None:
    """What a new process's first statement pays even on a JVM that ran them all
    before (a kept one), without a Spark job: its SparkSession's own state (analyzer,
    catalog), pyspark's DataFrame classes and Arrow's conversion of a local relation,
    as a MERGE of a few rows builds one. Analyzed, never run."""
    from .local_rows import local_frame

    local_frame(spark, [(1, "a")], "id bigint, s string").where("id > 0").select("s")


def warm_up(spark: SparkSession) -> int:
    """Run dbt's usual statements once on a throwaway local lake, until a real statement
    needs Spark; how many ran.

    Local sessions only: a cluster's executors cannot reach the driver's temporary
    folder. Nothing is left behind: the folder (also when the process exits first) and
    the temporary view are removed."""
    start = time.perf_counter()
    if not _give_way.is_set():
        import_what_lit_imports()
        touch_session(spark)
    folder = tempfile.mkdtemp(prefix="ducklake-warm-up-")

    def remove() -> None:
        shutil.rmtree(folder, ignore_errors=True)

    atexit.register(remove)
    view = f"ducklake_warm_up_{uuid.uuid4().hex}"
    lake = Lake.open(f"sqlite:///{folder}/warm.sqlite", data_path=f"{folder}/data")
    label_jobs(spark, "ducklake-warm-up", "the JVM's code paths warmed before the first model")
    done = 0
    try:
        sql = LakeSQL(spark, lake)
        for statement in _STATEMENTS:
            if _give_way.is_set():
                break
            result = sql.execute(statement.format(view=view))
            if isinstance(result, DataFrame):
                result.collect()
            done += 1
    finally:
        spark.catalog.dropTempView(view)
        lake.close()
        remove()
        atexit.unregister(remove)
    log.debug("warm-up: %d statements in %.2f s", done, time.perf_counter() - start)
    return done
