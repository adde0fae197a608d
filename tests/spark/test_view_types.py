"""The numeric types the view translation derives (`spark/view_types.py`) are the ones
Spark's analyser gives: each expression's derived type is compared with Spark's own
`typeof` over the same columns."""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from dbt.adapters.ducklake.spark.view_types import Number, _column_types, number_type

COLUMNS = {
    "dec": "decimal(10,2)",
    "wide": "decimal(38,10)",
    "small": "decimal(5,4)",
    "i": "int",
    "b": "bigint",
    "sm": "smallint",
    "ti": "tinyint",
    "d": "double",
}

EXPRESSIONS = [
    "dec / 2",
    "dec / -2",
    "dec / (2)",
    "dec / 2L",
    "dec / 12345678901",
    "dec * 100",
    "dec + 1",
    "dec - small",
    "dec / 100.0",
    "i / 100.0",
    "-i / 100.0",
    "(i + 1) / 100.0",
    "(1 + 2) / 100.0",
    "1.0 / 3.0",
    "i / 3.0 * 3",
    "dec / 3 / 7",
    "abs(dec) / 3",
    "-dec / 3",
    "sm / 1.5",
    "ti / 1.5",
    "b / 1.5",
    "dec / i",
    "dec / b",
    "wide / dec",
    "wide * wide",
    "wide + dec",
    "dec % 3",
    "i % 100.0",
    "dec / d",
    "i / 2",
    "i + b",
    "i div 2",
    "dec div 2",
    "0.05",
    "100.0",
    "12345678901234567890",
    "CAST(i AS DECIMAL(12,3)) / 7",
    "CAST(i AS DECIMAL) / 7",
    "1.5BD / 3",
    "(dec - 1) / ((20 - 0) / 3)",
]

TABLE = "view_types_t"  # a temporary view, dropped after the test: the session is shared

AGGREGATES = ["avg(dec)", "sum(dec)", "avg(i)", "sum(i)", "sum(d)", "max(dec) / 3", "avg(dec) / 2"]


def _spark_name(number: Number) -> str:
    if number.kind == "decimal":
        return f"decimal({number.precision},{number.scale})"
    if number.kind == "fractional":
        return "double"
    return {3: "tinyint", 5: "smallint", 10: "int", 20: "bigint"}[number.precision]


def _derived(expression: str) -> str | None:
    query = sqlglot.parse_one(f"SELECT {expression} AS r FROM {TABLE}", read="spark")
    types = _column_types(query, {"main": {TABLE: COLUMNS}}, "main")
    select = query.selects[0]
    assert isinstance(select, exp.Alias)
    number = number_type(select.this, types)
    return None if number is None else _spark_name(number)


def test_derived_types_are_sparks(spark) -> None:
    columns = ", ".join(f"CAST(NULL AS {t}) AS {n}" for n, t in COLUMNS.items())
    spark.sql(f"SELECT {columns}").createOrReplaceTempView(TABLE)
    wrong = []
    try:
        for expression in EXPRESSIONS + AGGREGATES:
            sparks = spark.sql(f"SELECT typeof({expression}) FROM {TABLE}").first()[0]
            derived = _derived(expression)
            if derived != sparks:
                wrong.append((expression, derived, sparks))
    finally:
        spark.catalog.dropTempView(TABLE)
    assert not wrong, wrong


def test_functions_it_does_not_model_are_unknown() -> None:
    # unknown rather than guessed: the translation then refuses DECIMALs in DuckDB
    assert _derived("round(dec, 1)") is None
    assert _derived("coalesce(dec, 0)") is None
    assert _derived("'12' / 3") is None
