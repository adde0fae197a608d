"""What the Spark line under test accepts of a test's own SQL: Spark 4 added QUALIFY,
`expr::type` casts and functions such as zeroifnull; Spark 3.5 refuses them itself,
before the adapter sees a row, so corpora leave those statements out there."""

from __future__ import annotations

import re

from dbt.adapters.ducklake.spark.compat import CLIENT_IS_SPARK_4

_SPARK_4_SQL = re.compile(r"\b(qualify|zeroifnull|nullifzero)\b|::", re.IGNORECASE)


def runs_on_this_spark(sql: str) -> bool:
    """Whether this Spark parses and resolves `sql` (as far as Spark 4 syntax goes)."""
    return CLIENT_IS_SPARK_4 or not _SPARK_4_SQL.search(sql)
