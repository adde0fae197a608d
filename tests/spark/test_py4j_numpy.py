"""numpy values still reach the JVM as pyspark converts them, through the converters
the session wraps (`session._NumpyValuesOnly`)."""

from __future__ import annotations

import numpy
from pyspark.sql import functions as F


def test_numpy_scalars_and_arrays_still_convert(spark) -> None:
    row = (
        spark.range(1)
        .select(
            F.lit(numpy.array([1, 2, 3], dtype="int64")).alias("a"),
            F.lit(numpy.int64(7)).alias("s"),
        )
        .first()
    )
    assert row.a == [1, 2, 3]
    assert row.s == 7
