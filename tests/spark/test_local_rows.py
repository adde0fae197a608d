"""Rows the driver holds become a LocalRelation with the values `createDataFrame(list)`
gives, and small changes to an inlined table run without a Spark job."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from decimal import Decimal

from pyspark.sql import types as T

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark.compat import CLIENT_IS_SPARK_4 as SPARK_4
from dbt.adapters.ducklake.spark.local_rows import local_frame
from dbt.adapters.ducklake.spark.sql import LakeSQL
from tests import duck
from tests.canon import canon_rows
from tests.conftest import Catalog

FLAT = T.StructType(
    [
        T.StructField("b", T.BooleanType()),
        T.StructField("i8", T.ByteType()),
        T.StructField("i32", T.IntegerType()),
        T.StructField("i64", T.LongType()),
        T.StructField("f", T.FloatType()),
        T.StructField("d", T.DoubleType()),
        T.StructField("s", T.StringType()),
        T.StructField("bin", T.BinaryType()),
        T.StructField("dec", T.DecimalType(38, 10)),
        T.StructField("day", T.DateType()),
        T.StructField("ts", T.TimestampType()),
        T.StructField("ntz", T.TimestampNTZType()),
    ]
)
FLAT_ROWS = [
    (
        True,
        -128,
        -(2**31),
        2**63 - 1,
        1.5,
        -0.1,
        "é'x",
        b"\x00\xff",
        Decimal("-1234567890123456789012345678.0123456789"),
        date(1, 1, 1),
        datetime(2024, 3, 31, 1, 30, tzinfo=timezone(timedelta(hours=2))),
        datetime(9999, 12, 31, 23, 59, 59, 999999),
    ),
    (None,) * 12,
    (
        False,
        0,
        0,
        0,
        float("nan"),
        float("inf"),
        "",
        b"",
        Decimal(0),
        date(2000, 2, 29),
        datetime(1970, 1, 1),
        datetime(1900, 1, 1),
    ),
]


def _leaf(df) -> str:
    return str(df._jdf.queryExecution().optimizedPlan().getClass().getSimpleName())


def test_flat_rows_are_a_local_relation_with_the_same_values(spark) -> None:
    local = local_frame(spark, FLAT_ROWS, FLAT)
    # Spark 3.5 builds no DataFrame from Arrow: the list path's RDD, same values
    assert _leaf(local) == ("LocalRelation" if SPARK_4 else "LogicalRDD")
    assert local.schema == FLAT
    # repr: NaN equals itself there
    expected = spark.createDataFrame(FLAT_ROWS, FLAT).collect()
    assert [repr(r) for r in local.collect()] == [repr(r) for r in expected]
    empty = local_frame(spark, [], "a bigint, b string")
    assert _leaf(empty) == ("LocalRelation" if SPARK_4 else "LogicalRDD")
    assert empty.collect() == []
    assert empty.schema.simpleString() == "struct<a:bigint,b:string>"


def test_nested_or_unconvertible_rows_take_the_list_path(spark) -> None:
    nested = T.StructType(
        [
            T.StructField("l", T.ArrayType(T.LongType())),
            T.StructField("m", T.MapType(T.StringType(), T.LongType())),
        ]
    )
    rows = [([1, None, 3], {"a": 1}), (None, None)]
    frame = local_frame(spark, rows, nested)
    assert frame.collect() == spark.createDataFrame(rows, nested).collect()
    # a value Arrow refuses for its type still reaches Spark, which decides
    precise = [(Decimal("1.123"),)]
    odd = local_frame(spark, precise, "x decimal(4, 1)")
    assert odd.collect() == spark.createDataFrame(precise, "x decimal(4, 1)").collect()


def _jobs(spark) -> int:
    return int(spark._jsc.sc().dagScheduler().nextJobId())


def test_small_changes_to_an_inlined_table_run_no_spark_job(spark, sqlite_catalog: Catalog) -> None:
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    sql = LakeSQL(spark, lake)
    sql.execute("CREATE TABLE t AS SELECT id, concat('v', id) AS v FROM range(5)")
    statements = [
        "INSERT INTO t VALUES (7, 'x')",
        "UPDATE t SET v = upper(v) WHERE id % 2 = 0",
        "DELETE FROM t WHERE id = 3",
    ]
    for statement in statements:
        before = _jobs(spark)
        sql.execute(statement)
        # (Spark 3.5 runs jobs over the RDD of the driver's rows)
        assert _jobs(spark) == before or not SPARK_4, statement
    expected = [(0, "V0"), (1, "v1"), (2, "V2"), (4, "V4"), (7, "x")]
    con = duck.connect()
    duck.attach(con, sqlite_catalog.duckdb_attach, alias="ours")
    assert canon_rows(con.execute("SELECT * FROM ours.main.t").fetchall()) == canon_rows(expected)
    with lake.catalog().session() as cat:
        assert len(cat.table_state("main", "t").data_files) == 0  # still all inlined
    con.close()
