"""Relations render as `schema.table` (Spark SQL names them so); the lake's name is the
dbt `database` but never printed."""

from __future__ import annotations

from dataclasses import dataclass, field

from dbt.adapters.base.relation import BaseRelation, ComponentName, Policy


@dataclass
class DucklakeQuotePolicy(Policy):
    database: bool = False
    schema: bool = False
    identifier: bool = False


@dataclass
class DucklakeIncludePolicy(Policy):
    database: bool = False
    schema: bool = True
    identifier: bool = True


@dataclass(frozen=True, eq=False, repr=False)
class DucklakeRelation(BaseRelation):
    quote_policy: Policy = field(default_factory=lambda: DucklakeQuotePolicy())
    include_policy: Policy = field(default_factory=lambda: DucklakeIncludePolicy())
    quote_character: str = "`"
    # dbt-spark's macros (our fallback) ask these of every relation
    is_delta: bool = False
    is_hudi: bool = False
    is_iceberg: bool = False
    information: str | None = None
    require_alias: bool = False

    def _is_exactish_match(self, field: ComponentName, value: str) -> bool:
        """Unquoted names match case-insensitively, as DuckDB resolves DuckLake names:
        a table created as `MODEL` is the model `model`."""
        if self.quote_policy.get_part(field) is False:
            return self.path.get_lowered_part(field) == value.lower()
        return self.path.get_part(field) == value
