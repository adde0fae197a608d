"""Columns carry Spark type names (`bigint`, `decimal(10,2)`, `array<string>`): the SQL
dbt generates for this adapter is Spark SQL."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dbt.adapters.base.column import Column


@dataclass
class DucklakeColumn(Column):
    comment: str | None = None

    @classmethod
    def translate_type(cls, dtype: str) -> str:
        return dtype

    def can_expand_to(self, other_column: Column) -> bool:
        return self.is_string() and other_column.is_string()

    def literal(self, value: Any) -> str:
        return f"cast({value} as {self.dtype})"

    @property
    def quoted(self) -> str:
        return "`" + self.column.replace("`", "``") + "`"

    @property
    def data_type(self) -> str:
        return self.dtype

    def is_string(self) -> bool:
        return self.dtype.lower() in ("string", "varchar", "char") or self.dtype.lower().startswith(
            ("varchar(", "char(")
        )

    @classmethod
    def numeric_type(cls, dtype: str, precision: Any, scale: Any) -> str:
        if precision is None or scale is None:
            return "decimal"
        return f"decimal({precision},{scale})"

    def __repr__(self) -> str:
        return f"<DucklakeColumn {self.name} ({self.data_type})>"
