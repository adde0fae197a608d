"""What differs between the Spark lines the engine runs on (3.5 and 4.x), in one place.

Spark 4 added the functions `timestamp_add`/`timestamp_diff`, correlated DataFrame
subqueries (`exists`, `outer`), DataFrames built from Arrow tables and Parquet readers
that widen a column's stored type (INT32 read as BIGINT, FLOAT as DOUBLE). Spark 3.5
takes another path for each here: same results, sometimes a slower plan.
"""

from __future__ import annotations

import pyspark
from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F


def version_of(text: str) -> tuple[int, int]:
    """(major, minor) of a Spark version string such as '3.5.9' or '4.1.0-preview'."""
    parts = [int("".join(ch for ch in p if ch.isdigit()) or 0) for p in text.split(".")[:2]]
    major, minor = [*parts, 0, 0][:2]
    return major, minor


# the local pyspark's API (a Spark Connect client's too)
CLIENT_IS_SPARK_4 = version_of(pyspark.__version__) >= (4, 0)
# correlated subqueries built from DataFrames (Spark 4.0)
HAS_DATAFRAME_SUBQUERIES = hasattr(DataFrame, "exists")

try:
    from pyspark.sql.types import VariantVal

    VARIANT_VALUES: tuple[type, ...] = (VariantVal,)
except ImportError:  # Spark 3.5 has no VARIANT type
    VARIANT_VALUES = ()

_EPOCH = "1970-01-01 00:00:00"


def ntz_from_micros(micros: SparkColumn) -> SparkColumn:
    """A TIMESTAMP_NTZ `micros` microseconds after 1970-01-01 00:00:00."""
    if hasattr(F, "timestamp_add"):
        return F.timestamp_add("MICROSECOND", micros, F.lit(_EPOCH).cast("timestamp_ntz"))
    # the session's time zone is UTC (session.REQUIRED_CONF): the instant's wall time
    return F.timestamp_micros(micros).cast("timestamp_ntz")


def micros_from_ntz(value: SparkColumn) -> SparkColumn:
    """Microseconds from 1970-01-01 00:00:00 to a TIMESTAMP_NTZ."""
    if hasattr(F, "timestamp_diff"):
        return F.timestamp_diff("MICROSECOND", F.lit(_EPOCH).cast("timestamp_ntz"), value)
    return F.unix_micros(value.cast("timestamp"))  # UTC session, as above


def reader_widens(spark: SparkSession) -> bool:
    """Whether this session's Parquet readers read a file's narrower stored type as the
    column's wider one (Spark 4.0; 3.5 refuses the file)."""
    return version_of(spark.version) >= (4, 0)


def builds_from_arrow(spark: SparkSession) -> bool:
    """Whether `createDataFrame` takes a pyarrow Table (classic PySpark 4.0)."""
    return CLIENT_IS_SPARK_4 and hasattr(spark, "_jsparkSession")


def has_deletes_reader(spark: SparkSession) -> bool:
    """Whether the adapter's Parquet reader that skips deleted rows can run: it extends
    Spark 4's Parquet format (built against 4.0, Scala 2.13)."""
    return version_of(spark.version) >= (4, 0)
