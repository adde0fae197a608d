"""The Spark settings test sessions and test profiles share: small data on two cores.

Tests run thousands of queries over a few rows each. For each new plan Spark generates
Java code, compiles it with Janino and then JIT-compiles the classes; on rows this few
that costs more than evaluating the expressions as they are (what Spark falls back to
anyway). Measured on a dbt snapshot suite test, whole run: 67 busy CPU-s with code
generation, 59 without (means of two runs each). Users keep Spark's defaults; the smoke
benchmarks, `sample_project`, the wheel test and the S3 project run with them too.
"""

from __future__ import annotations

SMALL_DATA_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.ui.enabled": "false",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}
