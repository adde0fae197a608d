"""The 28 DuckLake 1.0 catalog tables, with the physical types DuckDB uses per backend.

Column sets follow the spec's creation script. On SQLite DuckDB stores BOOLEAN as
BIGINT and UUID / TIMESTAMPTZ as VARCHAR; on PostgreSQL it uses the native types. A
catalog created here must be indistinguishable from one DuckDB created.
"""

from __future__ import annotations

from .connect import Backend
from .types import is_decimal

FORMAT_VERSION = "1.0"

# Logical column kinds: I bigint, S varchar, B boolean, U uuid, T timestamptz.
_PHYSICAL: dict[Backend, dict[str, str]] = {
    "sqlite": {"I": "BIGINT", "S": "VARCHAR", "B": "BIGINT", "U": "VARCHAR", "T": "VARCHAR"},
    "postgres": {
        "I": "BIGINT",
        "S": "VARCHAR",
        "B": "BOOLEAN",
        "U": "UUID",
        "T": "TIMESTAMP WITH TIME ZONE",
    },
}

# (table, [(column, kind, constraint)]) in the order DuckDB creates them.
CATALOG_TABLES: list[tuple[str, list[tuple[str, str, str]]]] = [
    ("ducklake_metadata", [("key", "S", "NOT NULL"), ("value", "S", "NOT NULL"),
                           ("scope", "S", ""), ("scope_id", "I", "")]),
    ("ducklake_snapshot", [("snapshot_id", "I", "PRIMARY KEY"), ("snapshot_time", "T", ""),
                           ("schema_version", "I", ""), ("next_catalog_id", "I", ""),
                           ("next_file_id", "I", "")]),
    ("ducklake_snapshot_changes", [("snapshot_id", "I", "PRIMARY KEY"),
                                   ("changes_made", "S", ""), ("author", "S", ""),
                                   ("commit_message", "S", ""),
                                   ("commit_extra_info", "S", "")]),
    ("ducklake_schema", [("schema_id", "I", "PRIMARY KEY"), ("schema_uuid", "U", ""),
                         ("begin_snapshot", "I", ""), ("end_snapshot", "I", ""),
                         ("schema_name", "S", ""), ("path", "S", ""),
                         ("path_is_relative", "B", "")]),
    ("ducklake_table", [("table_id", "I", ""), ("table_uuid", "U", ""),
                        ("begin_snapshot", "I", ""), ("end_snapshot", "I", ""),
                        ("schema_id", "I", ""), ("table_name", "S", ""), ("path", "S", ""),
                        ("path_is_relative", "B", "")]),
    ("ducklake_view", [("view_id", "I", ""), ("view_uuid", "U", ""),
                       ("begin_snapshot", "I", ""), ("end_snapshot", "I", ""),
                       ("schema_id", "I", ""), ("view_name", "S", ""), ("dialect", "S", ""),
                       ("sql", "S", ""), ("column_aliases", "S", "")]),
    ("ducklake_tag", [("object_id", "I", ""), ("begin_snapshot", "I", ""),
                      ("end_snapshot", "I", ""), ("key", "S", ""), ("value", "S", "")]),
    ("ducklake_column_tag", [("table_id", "I", ""), ("column_id", "I", ""),
                             ("begin_snapshot", "I", ""), ("end_snapshot", "I", ""),
                             ("key", "S", ""), ("value", "S", "")]),
    ("ducklake_data_file", [("data_file_id", "I", "PRIMARY KEY"), ("table_id", "I", ""),
                            ("begin_snapshot", "I", ""), ("end_snapshot", "I", ""),
                            ("file_order", "I", ""), ("path", "S", ""),
                            ("path_is_relative", "B", ""), ("file_format", "S", ""),
                            ("record_count", "I", ""), ("file_size_bytes", "I", ""),
                            ("footer_size", "I", ""), ("row_id_start", "I", ""),
                            ("partition_id", "I", ""), ("encryption_key", "S", ""),
                            ("mapping_id", "I", ""), ("partial_max", "I", "")]),
    ("ducklake_file_column_stats", [("data_file_id", "I", ""), ("table_id", "I", ""),
                                    ("column_id", "I", ""), ("column_size_bytes", "I", ""),
                                    ("value_count", "I", ""), ("null_count", "I", ""),
                                    ("min_value", "S", ""), ("max_value", "S", ""),
                                    ("contains_nan", "B", ""), ("extra_stats", "S", "")]),
    ("ducklake_file_variant_stats", [("data_file_id", "I", ""), ("table_id", "I", ""),
                                     ("column_id", "I", ""), ("variant_path", "S", ""),
                                     ("shredded_type", "S", ""),
                                     ("column_size_bytes", "I", ""), ("value_count", "I", ""),
                                     ("null_count", "I", ""), ("min_value", "S", ""),
                                     ("max_value", "S", ""), ("contains_nan", "B", ""),
                                     ("extra_stats", "S", "")]),
    ("ducklake_delete_file", [("delete_file_id", "I", "PRIMARY KEY"), ("table_id", "I", ""),
                              ("begin_snapshot", "I", ""), ("end_snapshot", "I", ""),
                              ("data_file_id", "I", ""), ("path", "S", ""),
                              ("path_is_relative", "B", ""), ("format", "S", ""),
                              ("delete_count", "I", ""), ("file_size_bytes", "I", ""),
                              ("footer_size", "I", ""), ("encryption_key", "S", ""),
                              ("partial_max", "I", "")]),
    ("ducklake_column", [("column_id", "I", ""), ("begin_snapshot", "I", ""),
                         ("end_snapshot", "I", ""), ("table_id", "I", ""),
                         ("column_order", "I", ""), ("column_name", "S", ""),
                         ("column_type", "S", ""), ("initial_default", "S", ""),
                         ("default_value", "S", ""), ("nulls_allowed", "B", ""),
                         ("parent_column", "I", ""), ("default_value_type", "S", ""),
                         ("default_value_dialect", "S", "")]),
    ("ducklake_table_stats", [("table_id", "I", ""), ("record_count", "I", ""),
                              ("next_row_id", "I", ""), ("file_size_bytes", "I", "")]),
    ("ducklake_table_column_stats", [("table_id", "I", ""), ("column_id", "I", ""),
                                     ("contains_null", "B", ""), ("contains_nan", "B", ""),
                                     ("min_value", "S", ""), ("max_value", "S", ""),
                                     ("extra_stats", "S", "")]),
    ("ducklake_partition_info", [("partition_id", "I", ""), ("table_id", "I", ""),
                                 ("begin_snapshot", "I", ""), ("end_snapshot", "I", "")]),
    ("ducklake_partition_column", [("partition_id", "I", ""), ("table_id", "I", ""),
                                   ("partition_key_index", "I", ""), ("column_id", "I", ""),
                                   ("transform", "S", "")]),
    ("ducklake_file_partition_value", [("data_file_id", "I", ""), ("table_id", "I", ""),
                                       ("partition_key_index", "I", ""),
                                       ("partition_value", "S", "")]),
    ("ducklake_files_scheduled_for_deletion", [("data_file_id", "I", ""), ("path", "S", ""),
                                               ("path_is_relative", "B", ""),
                                               ("schedule_start", "T", "")]),
    ("ducklake_inlined_data_tables", [("table_id", "I", ""), ("table_name", "S", ""),
                                      ("schema_version", "I", "")]),
    ("ducklake_column_mapping", [("mapping_id", "I", ""), ("table_id", "I", ""),
                                 ("type", "S", "")]),
    ("ducklake_name_mapping", [("mapping_id", "I", ""), ("column_id", "I", ""),
                               ("source_name", "S", ""), ("target_field_id", "I", ""),
                               ("parent_column", "I", ""), ("is_partition", "B", "")]),
    ("ducklake_schema_versions", [("begin_snapshot", "I", ""), ("schema_version", "I", ""),
                                  ("table_id", "I", "")]),
    ("ducklake_macro", [("schema_id", "I", ""), ("macro_id", "I", ""),
                        ("macro_name", "S", ""), ("begin_snapshot", "I", ""),
                        ("end_snapshot", "I", "")]),
    ("ducklake_macro_impl", [("macro_id", "I", ""), ("impl_id", "I", ""),
                             ("dialect", "S", ""), ("sql", "S", ""), ("type", "S", "")]),
    ("ducklake_macro_parameters", [("macro_id", "I", ""), ("impl_id", "I", ""),
                                   ("column_id", "I", ""), ("parameter_name", "S", ""),
                                   ("parameter_type", "S", ""), ("default_value", "S", ""),
                                   ("default_value_type", "S", "")]),
    ("ducklake_sort_info", [("sort_id", "I", ""), ("table_id", "I", ""),
                            ("begin_snapshot", "I", ""), ("end_snapshot", "I", "")]),
    ("ducklake_sort_expression", [("sort_id", "I", ""), ("table_id", "I", ""),
                                  ("sort_key_index", "I", ""), ("expression", "S", ""),
                                  ("dialect", "S", ""), ("sort_direction", "S", ""),
                                  ("null_order", "S", "")]),
]  # fmt: skip

TABLE_NAMES = [name for name, _ in CATALOG_TABLES]


def quote(ident: str) -> str:
    return '"' + ident.replace('"', '""') + '"'


def qualified(schema: str | None, table: str) -> str:
    return f"{quote(schema)}.{quote(table)}" if schema else quote(table)


def create_statements(backend: Backend, schema: str | None) -> list[str]:
    physical = _PHYSICAL[backend]
    statements = []
    if schema and backend == "postgres":
        statements.append(f"CREATE SCHEMA IF NOT EXISTS {quote(schema)}")
    for table, columns in CATALOG_TABLES:
        cols = ", ".join(
            " ".join(part for part in (quote(c), physical[kind], constraint) if part)
            for c, kind, constraint in columns
        )
        statements.append(f"CREATE TABLE {qualified(schema, table)}({cols})")
    return statements


# ---------------------------------------------------------------------------------------
# Inlined data tables: one per (table, schema version); top-level columns only.

_SQLITE_INTEGER_LIKE = {
    "boolean",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
}

_POSTGRES_INLINED = {
    "boolean": "BOOLEAN",
    "int8": "SMALLINT",
    "int16": "SMALLINT",
    "int32": "INTEGER",
    "int64": "BIGINT",
    "uint8": "INTEGER",
    "uint16": "INTEGER",
    "uint32": "BIGINT",
    "float32": "REAL",
    "float64": "DOUBLE PRECISION",
    "varchar": "BYTEA",
    "json": "BYTEA",
    "blob": "BYTEA",
    "uuid": "UUID",
    "time": "TIME",
    "timetz": "TIMETZ",
    "interval": "INTERVAL",
}


def inlined_column_type(backend: Backend, ducklake_type: str) -> str:
    """Physical type of an inlined-data column (the spec's inlining encoding tables)."""
    if backend == "sqlite":
        if ducklake_type in _SQLITE_INTEGER_LIKE:
            return "BIGINT"
        if ducklake_type == "blob":
            return "BLOB"
        return "VARCHAR"
    if is_decimal(ducklake_type):
        return "NUMERIC" + ducklake_type[len("decimal") :]
    return _POSTGRES_INLINED.get(ducklake_type, "VARCHAR")


def inlined_table_name(table_id: int, schema_version: int) -> str:
    return f"ducklake_inlined_data_{table_id}_{schema_version}"


def inlined_delete_table_name(table_id: int) -> str:
    return f"ducklake_inlined_delete_{table_id}"


def create_inlined_data_table(
    backend: Backend, schema: str | None, name: str, columns: list[tuple[str, str]]
) -> str:
    cols = ["row_id BIGINT", "begin_snapshot BIGINT", "end_snapshot BIGINT"]
    cols += [f"{quote(c)} {inlined_column_type(backend, t)}" for c, t in columns]
    return f"CREATE TABLE IF NOT EXISTS {qualified(schema, name)}({', '.join(cols)})"


def create_inlined_delete_table(schema: str | None, name: str) -> str:
    return (
        f"CREATE TABLE IF NOT EXISTS {qualified(schema, name)}"
        "(file_id BIGINT, row_id BIGINT, begin_snapshot BIGINT)"
    )
