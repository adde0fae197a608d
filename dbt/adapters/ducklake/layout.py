"""Layout configs of a model: `partition_by` (alias `partitioned_by`) and `sorted_by`
(alias `sort_by`), checked before any SQL runs and rendered as the clauses of the
CREATE TABLE that builds the table, or as the ALTERs an incremental run needs when the
config changed since the table was laid out."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from dbt_common.exceptions import DbtConfigError

from .lake import CatalogReader

ALIASES = {"partition_by": "partitioned_by", "sorted_by": "sort_by"}


@dataclass(frozen=True)
class Layout:
    partition_items: tuple[str, ...]
    sort_items: tuple[str, ...]
    partition: tuple[tuple[str, str], ...]
    sort: tuple[tuple[str, str, str], ...]

    def create_clauses(self) -> str:
        out = []
        if self.partition_items:
            out.append(f"partitioned by ({', '.join(self.partition_items)})")
        if self.sort_items:
            out.append(f"sorted by ({', '.join(self.sort_items)})")
        return " ".join(out)


def model_layout(model: str, config: Mapping[str, Any]) -> Layout:
    """The model's layout configs, validated; errors name the model, the option and
    the accepted forms."""
    # Spark SQL's parser (sqlglot) loads with the first model that needs a layout
    from .spark.statements import (
        PARTITION_FORMS,
        SORT_FORM,
        StatementError,
        partition_fields,
        sort_fields,
        split_top_level,
    )

    partition_items = _items(model, config, "partition_by", PARTITION_FORMS, split_top_level)
    sort_items = _items(model, config, "sorted_by", (SORT_FORM,), split_top_level)
    try:
        partition = partition_fields(list(partition_items)) if partition_items else []
    except StatementError as exc:
        raise DbtConfigError(f"model {model}: config partition_by: {exc}") from exc
    try:
        sort = sort_fields(list(sort_items)) if sort_items else []
    except StatementError as exc:
        raise DbtConfigError(f"model {model}: config sorted_by: {exc}") from exc
    return Layout(partition_items, sort_items, tuple(partition), tuple(sort))


def layout_alters(
    layout: Layout, cat: CatalogReader, schema: str, name: str, relation: str
) -> list[str]:
    """ALTERs that bring an existing table's layout to `layout` (none when it matches,
    so an unchanged config never writes a snapshot)."""
    table = cat.find_table(schema, name)
    if table is None:
        return []
    names = {c.column_id: c.name for c in cat.columns(table.table_id)}
    spec = cat.partition_spec(table.table_id)
    current_partition = tuple(
        (names.get(f.column_id, ""), f.transform) for f in (spec.fields if spec else ())
    )
    sort_spec = cat.sort_spec(table.table_id)
    current_sort = tuple(
        (f.expression, f.direction, f.null_order) for f in (sort_spec.fields if sort_spec else ())
    )
    alters = []
    if _fold(current_partition) != _fold(layout.partition):
        alters.append(
            f"alter table {relation} set partitioned by ({', '.join(layout.partition_items)})"
            if layout.partition
            else f"alter table {relation} reset partitioned by"
        )
    if _fold(current_sort) != _fold(layout.sort):
        alters.append(
            f"alter table {relation} set sorted by ({', '.join(layout.sort_items)})"
            if layout.sort
            else f"alter table {relation} reset sorted by"
        )
    return alters


def _fold(fields: tuple[tuple[str, ...], ...]) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(part.lower() for part in f) for f in fields)


def _items(
    model: str,
    config: Mapping[str, Any],
    option: str,
    accepted: tuple[str, ...],
    split: Callable[[str], list[str]],
) -> tuple[str, ...]:
    alias = ALIASES[option]
    value, alias_value = config.get(option), config.get(alias)
    if value is not None and alias_value is not None:
        raise DbtConfigError(f"model {model}: set {option} or its alias {alias}, not both")
    value = value if value is not None else alias_value
    if value is None:
        return ()
    if isinstance(value, str):
        value = split(value)  # "year(ts), region" or one key
    if not isinstance(value, list | tuple) or not all(
        isinstance(v, str) and v.strip() for v in value
    ):
        raise DbtConfigError(
            f"model {model}: config {option} must be a list of strings like "
            f"{', '.join(repr(a) for a in accepted)}; got {value!r}"
        )
    return tuple(v.strip() for v in value)


# a table named in text (run-operation --args): `table`, `schema.table` or
# `catalog.schema.table`, each an unquoted identifier
_TABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,2}$")


def layout_target(macro: str, relation: Any) -> str:
    """The table a layout macro alters, as SQL: a relation (`this`, `ref()`) renders as
    dbt quotes it; text must be a plain dotted name, so no argument reaches the SQL
    as anything but a table name."""
    if not isinstance(relation, str):
        return str(relation)
    name = relation.strip()
    if not _TABLE_NAME.match(name):
        raise DbtConfigError(
            f"{macro}: relation {relation!r} is not a table name; pass a relation "
            "(this, ref('model')) or `schema.table` / `table` made of letters, digits "
            "and underscores"
        )
    return name
