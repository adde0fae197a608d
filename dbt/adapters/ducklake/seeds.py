"""Seeds: the CSV dbt parsed is written by Spark as one snapshot (create or full replace),
with the column types dbt resolved; no row-by-row INSERTs with bindings."""

from __future__ import annotations

import os
import tempfile
from typing import Any

from dbt.adapters.base.relation import BaseRelation
from dbt_common.exceptions import DbtRuntimeError

from .environment import LakeHandle


def load_seed(
    handle: LakeHandle,
    relation: BaseRelation,
    agate_table: Any,
    column_types: dict[str, str],
    full_refresh: bool,
    delimiter: str,
) -> None:
    """The agate table goes to a temporary CSV that Spark reads with the resolved types.
    A full refresh also drops the views that read the seed (DROP … CASCADE), as dbt
    documents for seeds."""
    names = list(agate_table.column_names)
    _check_seed_header(relation, names, delimiter)
    types = [column_types[n] for n in names]
    assert relation.schema is not None and relation.identifier is not None
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "seed.csv")
        agate_table.to_csv(path)
        # agate writes RFC 4180: quotes doubled inside quoted fields, newlines kept
        raw = handle.spark.read.csv(
            path, header=True, inferSchema=False, escape='"', multiLine=True
        )
        cast = raw.select(
            *[
                _seed_column(raw[i], n, t, relation)
                for i, (n, t) in enumerate(zip(names, types, strict=True))
            ]
        )
        handle.sql.replace_table(
            relation.schema, relation.identifier, cast, drop_dependents=full_refresh
        )


# a header read as one column that holds one of these was split with the wrong delimiter
_DELIMITERS = (",", ";", "|", "\t")


def _check_seed_header(relation: BaseRelation, names: list[str], delimiter: str) -> None:
    """A seed whose header reads as one column holding another common delimiter fails
    (as PostgreSQL's `create table` does on such a column name), not a one-column table."""
    if len(names) != 1:
        return
    held = [d for d in _DELIMITERS if d != delimiter and d in names[0]]
    if held:
        raise DbtRuntimeError(
            f"seed {relation}: syntax error in its header: read with delimiter "
            f"{delimiter!r} it is one column named {names[0][:200]!r}, which holds "
            f"{held[0]!r}; set the seed's `delimiter` config to the file's delimiter"
        )


def _seed_column(column: Any, name: str, type_name: str, relation: BaseRelation) -> Any:
    from pyspark.errors import PySparkException  # seeds run in Spark: loaded by then

    from .spark.errors import spark_error_text

    if type_name.strip().lower() == "text":  # PostgreSQL's name, as models' casts take it
        type_name = "string"
    try:
        return column.cast(type_name).alias(name)
    except PySparkException as exc:  # Spark parses the type name right away
        raise DbtRuntimeError(
            f"seed {relation}: column_types {name}: {type_name!r} is not a Spark SQL type "
            f"(e.g. int, bigint, double, decimal(10,2), string, date, timestamp): "
            f"{spark_error_text(exc)}"
        ) from None
