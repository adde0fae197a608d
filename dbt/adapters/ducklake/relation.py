"""Relations render as `schema.table` (Spark SQL names them so); the lake's name is the
dbt `database` but never printed."""

from __future__ import annotations

from dataclasses import dataclass, field

from dbt.adapters.base.relation import BaseRelation, Policy


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
