"""`information_schema` and SHOW / DESCRIBE answered from DuckLake metadata.

dbt packages ask the warehouse what exists: dbt-utils queries
`information_schema.tables`, dbt-spark's macros run `SHOW TABLE EXTENDED`. Spark knows
nothing of the lake, but DuckLake's catalog holds every schema, table, view and column,
so these become small DataFrames of metadata rows (never of table data). The
`information_schema` views have DuckDB's columns and values, so a query means the same
in DuckDB over the same lake; SHOW and DESCRIBE have Spark's output columns.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from ..lake import (
    CatalogReader,
    Column,
    ColumnSpec,
    Lake,
    TableInfo,
    ViewInfo,
    decimal_params,
    duckdb_type,
    is_decimal,
)
from .compat import tree_string
from .errors import CatalogQueryError
from .local_rows import local_frame
from .types import ducklake_spec, spark_type
from .views import scan_view

INFORMATION_SCHEMA = "information_schema"

_S, _I = T.StringType(), T.LongType()

_SCHEMATA = [
    ("catalog_name", _S),
    ("schema_name", _S),
    ("schema_owner", _S),
    ("default_character_set_catalog", _S),
    ("default_character_set_schema", _S),
    ("default_character_set_name", _S),
    ("sql_path", _S),
]
_TABLES = [
    ("table_catalog", _S),
    ("table_schema", _S),
    ("table_name", _S),
    ("table_type", _S),
    ("self_referencing_column_name", _S),
    ("reference_generation", _S),
    ("user_defined_type_catalog", _S),
    ("user_defined_type_schema", _S),
    ("user_defined_type_name", _S),
    ("is_insertable_into", _S),
    ("is_typed", _S),
    ("commit_action", _S),
    ("TABLE_COMMENT", _S),
]
# DuckDB's information_schema.columns, in its order; unnamed ones are always NULL here
_COLUMNS_NAMED = [
    ("table_catalog", _S),
    ("table_schema", _S),
    ("table_name", _S),
    ("column_name", _S),
    ("ordinal_position", _I),
    ("column_default", _S),
    ("is_nullable", _S),
    ("data_type", _S),
    ("character_maximum_length", _I),
    ("character_octet_length", _I),
    ("numeric_precision", _I),
    ("numeric_precision_radix", _I),
    ("numeric_scale", _I),
]
_COLUMNS_NULL = [
    "datetime_precision",
    "interval_type",
    "interval_precision",
    "character_set_catalog",
    "character_set_schema",
    "character_set_name",
    "collation_catalog",
    "collation_schema",
    "collation_name",
    "domain_catalog",
    "domain_schema",
    "domain_name",
    "udt_catalog",
    "udt_schema",
    "udt_name",
    "scope_catalog",
    "scope_schema",
    "scope_name",
    "maximum_cardinality",
    "dtd_identifier",
    "is_self_referencing",
    "is_identity",
    "identity_generation",
    "identity_start",
    "identity_increment",
    "identity_maximum",
    "identity_minimum",
    "identity_cycle",
    "is_generated",
    "generation_expression",
    "is_updatable",
]
_COLUMNS = [*_COLUMNS_NAMED, *((n, _S) for n in _COLUMNS_NULL), ("COLUMN_COMMENT", _S)]
_VIEWS = [
    ("table_catalog", _S),
    ("table_schema", _S),
    ("table_name", _S),
    ("view_definition", _S),
    ("check_option", _S),
    ("is_updatable", _S),
    ("is_insertable_into", _S),
    ("is_trigger_updatable", _S),
    ("is_trigger_deletable", _S),
    ("is_trigger_insertable_into", _S),
]
INFORMATION_SCHEMA_VIEWS = ("schemata", "tables", "columns", "views")

# (precision, radix) of DuckDB's numeric types, as its information_schema reports them
_NUMERIC = {
    "int8": 8,
    "int16": 16,
    "int32": 32,
    "int64": 64,
    "int128": 128,
    "float32": 24,
    "float64": 53,
}


def _frame(
    spark: SparkSession, columns: Sequence[tuple[str, T.DataType]], rows: list[Any]
) -> DataFrame:
    schema = T.StructType([T.StructField(n, t, True) for n, t in columns])
    return local_frame(spark, rows, schema)


def information_schema(
    spark: SparkSession, lake: Lake, catalog_name: str, view: str, cat: CatalogReader
) -> DataFrame:
    """One of `schemata`, `tables`, `columns`, `views` over the whole lake at `cat`'s
    snapshot, as DuckDB answers it for the same lake attached as `catalog_name`."""
    with cat.session():
        if view == "schemata":
            rows: list[Any] = [
                (catalog_name, s.name, None, None, None, None, None) for s in cat.schemas()
            ]
            return _frame(spark, _SCHEMATA, rows)
        tables, views = cat.tables(), cat.views()
        if view == "tables":
            rows = [_table_row(catalog_name, t) for t in tables]
            rows += [_view_row(catalog_name, v) for v in views]
            return _frame(spark, _TABLES, rows)
        if view == "views":
            rows = [_view_definition(catalog_name, v) for v in views]
            return _frame(spark, _VIEWS, rows)
        columns = cat.all_columns()
    rows = []
    for t in tables:
        for position, c in enumerate(columns.get(t.table_id, []), start=1):
            rows.append(_column_row(catalog_name, t.schema_name, t.name, position, c))
    for v in views:
        for position, spec in enumerate(view_columns(spark, lake, cat, v), start=1):
            rows.append(_spec_row(catalog_name, v.schema_name, v.name, position, spec))
    return _frame(spark, _COLUMNS, rows)


def _table_row(catalog: str, t: TableInfo) -> tuple[Any, ...]:
    none5 = (None,) * 5
    return (catalog, t.schema_name, t.name, "BASE TABLE", *none5, "YES", "NO", None, t.comment)


def _view_row(catalog: str, v: ViewInfo) -> tuple[Any, ...]:
    none5 = (None,) * 5
    return (catalog, v.schema_name, v.name, "VIEW", *none5, "NO", "NO", None, v.comment)


def _view_definition(catalog: str, v: ViewInfo) -> tuple[Any, ...]:
    text = f"CREATE VIEW {v.name} AS {_view_sql(v, catalog).rstrip().rstrip(';')};"
    return (catalog, v.schema_name, v.name, text, "NONE", "NO", "NO", "NO", "NO", "NO")


def _view_sql(v: ViewInfo, catalog: str) -> str:
    """A view's DuckDB text as DuckDB shows it: `{DUCKLAKE_CATALOG}` is the lake's name."""
    return v.sql.replace("{DUCKLAKE_CATALOG}", catalog)


def _numeric(type_name: str) -> tuple[int | None, int | None, int | None]:
    if is_decimal(type_name):
        precision, scale = decimal_params(type_name)
        return precision, 10, scale
    bits = _NUMERIC.get(type_name)
    return (bits, 2, 0) if bits is not None else (None, None, None)


def _column_row(catalog: str, schema: str, table: str, position: int, c: Column) -> tuple[Any, ...]:
    return _row(
        catalog,
        schema,
        table,
        c.name,
        position,
        None if c.children else c.default_value,  # DuckDB shows no default for nested types
        c.nullable,
        c.duckdb_type,
        c.type,
        c.comment,
    )


def _spec_row(
    catalog: str, schema: str, view: str, position: int, spec: ColumnSpec
) -> tuple[Any, ...]:
    return _row(catalog, schema, view, spec.name, position, None, True, _spec_type(spec), spec.type)


def _row(
    catalog: str,
    schema: str,
    table: str,
    column: str,
    position: int,
    default: str | None,
    nullable: bool,
    data_type: str,
    lake_type: str,
    comment: str | None = None,
) -> tuple[Any, ...]:
    precision, radix, scale = _numeric(lake_type)
    named = (catalog, schema, table, column, position, default, "YES" if nullable else "NO")
    sizes = (data_type, None, None, precision, radix, scale)
    return (*named, *sizes, *((None,) * len(_COLUMNS_NULL)), comment)


def _spec_type(spec: ColumnSpec) -> str:
    children = [(c.name, _spec_type(c)) for c in spec.children]
    return duckdb_type(spec.type, children or None)


def view_columns(
    spark: SparkSession, lake: Lake, cat: CatalogReader, v: ViewInfo
) -> list[ColumnSpec]:
    """A view's columns as DuckLake types: DuckLake stores no view columns, so the view
    is analysed (not run) by Spark."""
    fields = scan_view(spark, lake, v.schema_name, v.name, at=cat.snapshot_id).schema.fields
    return [ducklake_spec(f, f"{v.schema_name}.{v.name}") for f in fields]


# -- SHOW and DESCRIBE -----------------------------------------------------------------

_NAME = r"(?:`[^`]+`|[\w$]+)"
_QUALIFIED = rf"{_NAME}(?:\s*\.\s*{_NAME}){{0,2}}"
_SHOW_TABLES = re.compile(
    rf"SHOW\s+(TABLES|VIEWS|TABLE\s+EXTENDED)"
    rf"(?:\s+(?:IN|FROM)\s+(?P<schema>{_QUALIFIED}))?"
    r"(?:\s+(?:LIKE\s+)?'(?P<pattern>[^']*)')?\s*;?\s*$",
    re.IGNORECASE,
)
_SHOW_SCHEMAS = re.compile(
    r"SHOW\s+(?:SCHEMAS|DATABASES|NAMESPACES)(?:\s+(?:LIKE\s+)?'(?P<pattern>[^']*)')?\s*;?\s*$",
    re.IGNORECASE,
)
_SHOW_COLUMNS = re.compile(
    rf"SHOW\s+COLUMNS\s+(?:IN|FROM)\s+(?P<table>{_QUALIFIED})"
    rf"(?:\s+(?:IN|FROM)\s+(?P<schema>{_QUALIFIED}))?\s*;?\s*$",
    re.IGNORECASE,
)
_DESCRIBE = re.compile(
    rf"(?:DESCRIBE|DESC)\s+(?:TABLE\s+)?(?P<extended>EXTENDED\s+|FORMATTED\s+)?"
    rf"(?P<table>{_QUALIFIED})\s*;?\s*$",
    re.IGNORECASE,
)


class NotInLake(CatalogQueryError):
    def __init__(self, schema: str, name: str):
        super().__init__(f"table or view {schema}.{name} does not exist in the lake")
        self.name = name


@dataclass(frozen=True)
class _Relation:
    schema: str
    name: str
    table: TableInfo | None
    view: ViewInfo | None


def spark_pattern(pattern: str | None) -> re.Pattern[str]:
    """Spark's SHOW … LIKE: `*` is any text, `|` separates alternatives, the rest is a
    regular expression matched whole and case-insensitively."""
    if pattern is None or not pattern.strip():
        return re.compile(".*")
    alternatives = [p.strip().replace("*", ".*") for p in pattern.strip().split("|")]
    return re.compile("|".join(f"(?:{a})" for a in alternatives), re.IGNORECASE)


def is_catalog_statement(text: str) -> bool:
    return any(
        p.match(text) is not None for p in (_SHOW_TABLES, _SHOW_SCHEMAS, _SHOW_COLUMNS, _DESCRIBE)
    )


def catalog_statement(
    spark: SparkSession, lake: Lake, catalog_name: str, default_schema: str, text: str
) -> DataFrame:
    """SHOW TABLES / VIEWS / TABLE EXTENDED / SCHEMAS / COLUMNS and DESCRIBE [EXTENDED]."""
    cat = lake.catalog()
    names = _Names(catalog_name, default_schema)
    if (m := _SHOW_SCHEMAS.match(text)) is not None:
        wanted = spark_pattern(m.group("pattern"))
        rows = [(s.name,) for s in cat.schemas() if wanted.fullmatch(s.name)]
        return _frame(spark, [("namespace", _S)], rows)
    if (m := _SHOW_TABLES.match(text)) is not None:
        kind = " ".join(m.group(1).upper().split())
        schema = names.schema(m.group("schema")) if m.group("schema") else default_schema
        wanted = spark_pattern(m.group("pattern"))
        return _show_tables(spark, lake, cat, catalog_name, kind, schema, wanted)
    if (m := _SHOW_COLUMNS.match(text)) is not None:
        schema, name = names.relation(m.group("table"), m.group("schema"))
        fields = _fields(spark, lake, cat, _find(cat, schema, name))
        return _frame(spark, [("col_name", _S)], [(f.name,) for f in fields])
    m = _DESCRIBE.match(text)
    if m is None:
        raise CatalogQueryError(f"not a SHOW or DESCRIBE statement: {text[:80]!r}")
    schema, name = names.relation(m.group("table"), None)
    relation = _find(cat, schema, name)
    return _describe(spark, lake, cat, catalog_name, relation, bool(m.group("extended")))


@dataclass(frozen=True)
class _Names:
    catalog_name: str
    default_schema: str

    def _parts(self, text: str) -> list[str]:
        parts = [p.strip().strip("`") for p in text.split(".")]
        if len(parts) > 1 and parts[0].lower() == self.catalog_name.lower():
            parts = parts[1:]
        return parts

    def schema(self, text: str) -> str:
        parts = self._parts(text)
        if len(parts) != 1:
            raise CatalogQueryError(f"{text!r} is not a schema of lake {self.catalog_name}")
        return parts[0]

    def relation(self, text: str, schema: str | None) -> tuple[str, str]:
        parts = self._parts(text)
        if schema is not None:
            parts = [self.schema(schema), *parts[-1:]]
        if len(parts) == 1:
            return self.default_schema, parts[0]
        if len(parts) == 2:
            return parts[0], parts[1]
        raise CatalogQueryError(f"{text!r} is not a table or view of lake {self.catalog_name}")


def _find(cat: CatalogReader, schema: str, name: str) -> _Relation:
    for t in cat.tables(schema):
        if t.name.lower() == name.lower():
            return _Relation(t.schema_name, t.name, t, None)
    for v in cat.views(schema):
        if v.name.lower() == name.lower():
            return _Relation(v.schema_name, v.name, None, v)
    raise NotInLake(schema, name)


def _fields(
    spark: SparkSession, lake: Lake, cat: CatalogReader, relation: _Relation
) -> list[T.StructField]:
    if relation.table is not None:
        columns = cat.columns(relation.table.table_id)
        return [
            T.StructField(c.name, spark_type(c), c.nullable, {"comment": c.comment or ""})
            for c in columns
        ]
    assert relation.view is not None
    return list(scan_view(spark, lake, relation.schema, relation.name, at=cat.snapshot_id).schema)


def _show_tables(
    spark: SparkSession,
    lake: Lake,
    cat: CatalogReader,
    catalog_name: str,
    kind: str,
    schema: str,
    wanted: re.Pattern[str],
) -> DataFrame:
    relations = (
        []
        if kind == "VIEWS"
        else [_Relation(t.schema_name, t.name, t, None) for t in cat.tables(schema)]
    )
    relations += [_Relation(v.schema_name, v.name, None, v) for v in cat.views(schema)]
    chosen = sorted(
        (r for r in relations if wanted.fullmatch(r.name)), key=lambda r: r.name.lower()
    )
    name_column = "viewName" if kind == "VIEWS" else "tableName"
    columns = [("namespace", _S), (name_column, _S), ("isTemporary", T.BooleanType())]
    if kind != "TABLE EXTENDED":
        return _frame(spark, columns, [(r.schema, r.name, False) for r in chosen])
    rows = [
        (r.schema, r.name, False, _information(spark, lake, cat, catalog_name, r)) for r in chosen
    ]
    return _frame(spark, [*columns, ("information", _S)], rows)


def _details(cat: CatalogReader, catalog_name: str, r: _Relation) -> list[tuple[str, str]]:
    """What Spark shows of a relation in SHOW TABLE EXTENDED and DESCRIBE EXTENDED."""
    details = [("Catalog", catalog_name), ("Database", r.schema), ("Table", r.name)]
    if r.table is not None:
        details += [("Type", "MANAGED"), ("Provider", "ducklake")]
        details.append(("Location", cat.table_root(r.table)))
        comment = r.table.comment
    else:
        assert r.view is not None
        details += [("Type", "VIEW"), ("Provider", "ducklake")]
        details.append(("View Text", _view_sql(r.view, catalog_name)))
        comment = r.view.comment
    return details + ([("Comment", comment)] if comment else [])


def _information(
    spark: SparkSession, lake: Lake, cat: CatalogReader, catalog_name: str, r: _Relation
) -> str:
    """The text Spark puts in SHOW TABLE EXTENDED's `information`, which dbt-spark reads
    for the relation type and columns."""
    lines = [f"{k}: {v}" for k, v in _details(cat, catalog_name, r)]
    schema = T.StructType(_fields(spark, lake, cat, r))
    lines.append("Schema: " + tree_string(spark, schema).rstrip("\n"))
    return "\n".join(lines) + "\n"


def _describe(
    spark: SparkSession,
    lake: Lake,
    cat: CatalogReader,
    catalog_name: str,
    relation: _Relation,
    extended: bool,
) -> DataFrame:
    fields = _fields(spark, lake, cat, relation)
    rows: list[tuple[str, str, str | None]] = [
        (f.name, f.dataType.simpleString(), f.metadata.get("comment") or None) for f in fields
    ]
    if extended:
        rows += [("", "", ""), ("# Detailed Table Information", "", "")]
        rows += [(k, v, "") for k, v in _details(cat, catalog_name, relation)]
    columns = [("col_name", _S), ("data_type", _S), ("comment", _S)]
    return _frame(spark, columns, rows)
