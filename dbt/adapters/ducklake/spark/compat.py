"""What differs between the Spark lines the engine runs on (3.5 and 4.x), in one place.

Spark 4 added the functions `timestamp_add`/`timestamp_diff`, correlated DataFrame
subqueries (`exists`, `outer`), DataFrames built from Arrow tables and Parquet readers
that widen a column's stored type (INT32 read as BIGINT, FLOAT as DOUBLE). Spark 3.5
takes another path for each here: same results, sometimes a slower plan.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .versions import client_is_spark_4, spark_3_defaults, version_of

# the local pyspark's API (a Spark Connect client's too)
CLIENT_IS_SPARK_4 = client_is_spark_4()
# correlated subqueries built from DataFrames (Spark 4.0)
HAS_DATAFRAME_SUBQUERIES = hasattr(DataFrame, "exists")

try:
    from pyspark.sql.types import VariantVal

    VARIANT_VALUES: tuple[type, ...] = (VariantVal,)
except ImportError:  # Spark 3.5 has no VARIANT type
    VARIANT_VALUES = ()

SPARK_3_DEFAULTS = spark_3_defaults()

_EPOCH = "1970-01-01 00:00:00"


_DAY = 86_400_000_000  # microseconds


def ntz_from_micros(micros: SparkColumn) -> SparkColumn:
    """A TIMESTAMP_NTZ `micros` microseconds after 1970-01-01 00:00:00."""
    if hasattr(F, "timestamp_add"):
        return F.timestamp_add("MICROSECOND", micros, F.lit(_EPOCH).cast("timestamp_ntz"))
    # Spark 3.5: from the day and the time of day, whatever the session's time zone
    # (exact: a double quotient rounds micros near the year 9999 up, and the first day's
    # start lies below the smallest long)
    rest = F.pmod(micros, F.lit(_DAY))
    day = F.date_from_unix_date(((micros.cast("decimal(20,0)") - rest) / _DAY).cast("int"))
    minutes = (rest - F.pmod(rest, F.lit(60_000_000))) / 60_000_000  # exact: below 2^53
    seconds = (F.pmod(rest, F.lit(60_000_000)) / F.lit(1_000_000)).cast("decimal(8,6)")
    return F.make_timestamp_ntz(
        F.year(day),
        F.month(day),
        F.dayofmonth(day),
        F.floor(minutes / 60),
        F.pmod(minutes.cast("int"), F.lit(60)),
        seconds,
    )


def micros_from_ntz(value: SparkColumn) -> SparkColumn:
    """Microseconds from 1970-01-01 00:00:00 to a TIMESTAMP_NTZ."""
    if hasattr(F, "timestamp_diff"):
        return F.timestamp_diff("MICROSECOND", F.lit(_EPOCH).cast("timestamp_ntz"), value)
    seconds = F.date_part(F.lit("SECOND"), value)  # decimal(8,6): with the fraction
    # in decimals: the earliest day's start lies below the smallest long
    wide = "decimal(20,0)"
    return (
        F.unix_date(value.cast("date")).cast(wide) * _DAY
        + F.hour(value).cast(wide) * 3_600_000_000
        + F.minute(value).cast(wide) * 60_000_000
        + (seconds * 1_000_000).cast(wide)
    ).cast("long")


_lines: dict[int, tuple[int, int]] = {}


def spark_line(spark: SparkSession) -> tuple[int, int]:
    """(major, minor) of the session's Spark (a Connect server's own), asked once."""
    line = _lines.get(id(spark))
    if line is None:
        line = _lines[id(spark)] = version_of(spark.version)
    return line


def reader_widens(spark: SparkSession) -> bool:
    """Whether this session's Parquet readers read a file's narrower stored type as the
    column's wider one (Spark 4.0; 3.5 refuses the file)."""
    return spark_line(spark) >= (4, 0)


def builds_from_arrow(spark: SparkSession) -> bool:
    """Whether `createDataFrame` takes a pyarrow Table (classic PySpark 4.0)."""
    return CLIENT_IS_SPARK_4 and hasattr(spark, "_jsparkSession")


def has_deletes_reader(spark: SparkSession) -> bool:
    """Whether the adapter's Parquet reader that skips deleted rows can run: it extends
    Spark 4's Parquet format (built against 4.0, Scala 2.13)."""
    return spark_line(spark) >= (4, 0)


def tree_string(spark: SparkSession, schema: T.StructType) -> str:
    """Spark's printed tree of a schema (`root` / ` |-- id: long (nullable = true)`)."""
    if hasattr(schema, "treeString"):
        return str(schema.treeString())
    # PySpark 3.5: the JVM prints it (classic sessions only reach here)
    jvm: Any = spark._jvm
    return str(jvm.org.apache.spark.sql.types.DataType.fromJson(schema.json()).treeString())


def scala_seq(jvm: Any, jlist: Any) -> Any:
    """A Scala Seq of a java.util.List, in Scala 2.13 (Spark 4) or 2.12 (Spark 3.5)."""
    if CLIENT_IS_SPARK_4:
        return jvm.scala.jdk.javaapi.CollectionConverters.asScala(jlist).toSeq()
    return jvm.scala.collection.JavaConverters.asScalaBufferConverter(jlist).asScala().toSeq()
