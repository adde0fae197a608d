"""DELETE / UPDATE of a few rows of data files, found on the driver (`driver_files`),
leave exactly the rows, row ids and snapshots Spark's path leaves, on files we wrote
and files DuckDB wrote, with delete files, inlined deletes, stored row ids and updated
rows in the history; what the driver cannot be sure of goes to Spark."""

from __future__ import annotations

import pytest

from dbt.adapters.ducklake.spark import driver_files
from tests.spark.test_driver_dml import _same, _state, both  # noqa: F401 (a fixture)

ROW = (
    "id, CAST(id % 50 AS INT) AS small, concat('v', CAST(id % 13 AS STRING)) AS v, "
    "id % 3 = 0 AS b, CAST(id AS DOUBLE) / 8 AS d, "
    "CAST(IF(id % 5 = 0, NULL, id % 11) AS INT) AS n"
)
DUCK_ROW = (
    "i, i % 50, 'v' || (i % 13), i % 3 = 0, i / 8, CASE WHEN i % 5 = 0 THEN NULL ELSE i % 11 END"
)
# (statement with {t}, whether the driver decides the fast table's), run in turn
CHANGES = [
    ("DELETE FROM {t} WHERE id = 2", True),
    ("DELETE FROM {t} WHERE 3 > id", True),
    ("DELETE FROM {t} WHERE id IN (10, 11, NULL)", True),
    ("DELETE FROM {t} WHERE v = 'v5' AND id < 100", True),
    ("DELETE FROM {t} WHERE n IS NULL AND id < 260 AND id > 240", True),
    ("DELETE FROM {t} WHERE NOT (id <> 300) OR id = 5400", True),  # ours and DuckDB's
    ("DELETE FROM {t} WHERE id BETWEEN 600 AND 610", False),
    ("DELETE FROM {t} WHERE d > 1.0 AND id = 700", False),
    ("DELETE FROM {t} WHERE id < 1400", False),  # more than FEW_VICTIMS
    ("UPDATE {t} SET v = 'z', n = 7 WHERE id IN (1420, 1421, 402, 1510, 2950)", True),
    ("UPDATE {t} SET d = 0.25 WHERE id = 5200", True),  # a file DuckDB wrote
    ("UPDATE {t} SET n = NULL, b = FALSE WHERE id = 1420", True),  # an updated row again
    ("DELETE FROM {t} WHERE id = 1421 OR id = 5201", True),  # inlined and file rows
    ("DELETE FROM {t} WHERE id = 142", True),  # a stored row id
    ("UPDATE {t} SET b = NULL WHERE id = 242 OR id = 4942", True),
    ("UPDATE {t} SET small = small + 1 WHERE id = 1430", False),
    ("UPDATE {t} SET v = 'w' WHERE small = 7", False),  # more than the inlining limit
    ("DELETE FROM {t} WHERE id >= 5000 AND id < 5900", True),  # pruned to DuckDB's file
]


def _history(sql, con, table: str) -> None:
    """Two files of ours, a delete file, DuckDB's inlined deletes and updated rows (some
    in a file whose rows store their ids), a file DuckDB wrote, and DuckDB's flush."""
    sql.execute(f"CREATE OR REPLACE TABLE {table} AS SELECT {ROW} FROM range(3000)")
    sql.execute(f"INSERT INTO {table} SELECT {ROW} FROM range(3000, 5000)")
    sql.execute(f"DELETE FROM {table} WHERE id % 10 = 1")
    con.execute(f"DELETE FROM lake.main.{table} WHERE id BETWEEN 100 AND 104")
    con.execute(f"UPDATE lake.main.{table} SET v = 'duck' WHERE id BETWEEN 400 AND 402")
    # past the inlining limit: a file whose rows store their (scattered) row ids
    con.execute(f"UPDATE lake.main.{table} SET small = -1 WHERE id % 100 = 42")
    con.execute(f"INSERT INTO lake.main.{table} SELECT {DUCK_ROW} FROM range(5000, 6500) t(i)")


def test_few_rows_of_files_changed_on_the_driver_equal_sparks(both) -> None:  # noqa: F811
    lake, sql, con, spark_runs = both
    # several row groups a file: an UPDATE copies its rows from the groups holding them
    sql.execute("CALL ducklake_set_option('lake', 'parquet_row_group_size', 700)")
    for table in ("fast", "slow"):
        _history(sql, con, table)
    con.execute("CALL ducklake_flush_inlined_data('lake')")
    assert _state(con, "fast") == _state(con, "slow")
    for statement, on_driver in CHANGES:
        pair = (statement.format(t="fast"), statement.format(t="slow AS s"))
        _same(lake, sql, con, pair, spark_runs, on_driver)
    rows = con.execute("SELECT count(*), count(DISTINCT rowid) FROM lake.main.fast").fetchone()
    assert rows[0] == rows[1] > 1000
    # what the driver staged reads back alike here
    ours = sql.execute("SELECT * FROM fast EXCEPT ALL SELECT * FROM slow").collect()
    assert ours == []


def test_columns_missing_from_a_file_and_big_reads_go_to_spark(both, monkeypatch) -> None:  # noqa: F811
    lake, sql, con, spark_runs = both
    for table in ("fast", "slow"):
        sql.execute(f"CREATE TABLE {table} AS SELECT {ROW} FROM range(3000)")
        sql.execute(f"ALTER TABLE {table} ADD COLUMN extra INT")
    # the file has no `extra`: a DELETE not reading it stays here, an UPDATE copies it
    pairs = [
        ("DELETE FROM {t} WHERE id = 1", True),
        ("DELETE FROM {t} WHERE extra IS NULL AND id = 2", False),
        ("UPDATE {t} SET v = 'q' WHERE id = 3", False),
    ]
    for statement, on_driver in pairs:
        pair = (statement.format(t="fast"), statement.format(t="slow AS s"))
        _same(lake, sql, con, pair, spark_runs, on_driver)
    monkeypatch.setattr(driver_files, "DRIVER_ROWS", 100)
    pair = ("DELETE FROM fast WHERE id = 4", "DELETE FROM slow AS s WHERE id = 4")
    _same(lake, sql, con, pair, spark_runs, False)
    assert con.execute("SELECT count(*) FROM lake.main.fast").fetchone() == (2997,)


@pytest.mark.parametrize("vectors", [False, True], ids=["delete-files", "deletion-vectors"])
def test_past_the_inlining_limit_a_delete_file_is_written(both, vectors: bool) -> None:  # noqa: F811
    lake, sql, con, spark_runs = both
    if vectors:
        sql.execute("CALL ducklake_set_option('lake', 'write_deletion_vectors', true)")
    for table in ("fast", "slow"):
        sql.execute(f"CREATE TABLE {table} AS SELECT {ROW} FROM range(3000)")
        sql.execute(f"DELETE FROM {table} WHERE id % 10 = 1")  # an old delete file
    pair = ("DELETE FROM fast WHERE small = 7", "DELETE FROM slow AS s WHERE small = 7")
    _same(lake, sql, con, pair, spark_runs, True)
    kinds = con.execute(
        "SELECT format, delete_count FROM __ducklake_metadata_lake.ducklake_delete_file "
        "WHERE end_snapshot IS NULL ORDER BY data_file_id"
    ).fetchall()
    # one file a table (3,000 rows from `range` are written by the driver), each with
    # 300 old and 60 new deletes: the fast table's by the driver, the slow one's by Spark
    assert kinds == [("puffin" if vectors else "parquet", 300 + 60)] * 2
