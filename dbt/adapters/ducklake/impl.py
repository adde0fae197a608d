"""The dbt adapter `type: ducklake`: Spark SQL for models, DuckLake metadata for
everything dbt asks about relations (never Spark SHOW/DESCRIBE).

Materializations tell the adapter which node they build (`set_commit_context`), so the
snapshot they write carries the author, a commit message and extra info naming the run.
The Spark layer (pyspark, sqlglot, pyarrow) is imported where a method needs it, so
metadata-only commands (`run-operation`, `ls`, `parse`) never load it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dbt.adapters.base import available
from dbt.adapters.base.impl import AdapterConfig, ConstraintSupport
from dbt.adapters.base.relation import BaseRelation
from dbt.adapters.contracts.connection import AdapterResponse
from dbt.adapters.contracts.relation import RelationType
from dbt.adapters.sql import SQLAdapter
from dbt.artifacts.schemas.catalog import CatalogTable
from dbt_common.contracts.constraints import ConstraintType
from dbt_common.exceptions import DbtRuntimeError

from .atomic import finish
from .catalog import CATALOG_COLUMNS, catalog_rows, catalog_table
from .change_windows import ChangeFeedWindows
from .checks import check_key_columns, check_node_names, node_field
from .column import DucklakeColumn
from .connections import DucklakeConnectionManager
from .environment import LakeHandle, commit_extra_info, dbt_command
from .flag_sources import cheap_flag_sources
from .freshness import FRESHNESS_FROM_METADATA, MetadataFreshness
from .lake import SETTABLE_OPTIONS, CatalogNotFoundError, extra_info_fields
from .layout import Layout, layout_alters, layout_target, model_layout
from .relation import DucklakeRelation
from .seeds import load_seed
from .snapshots import consumed_snapshot, plan_changes_snapshot

STRATEGIES = ("append", "merge", "delete+insert", "insert_overwrite", "microbatch", "apply_changes")


@dataclass
class DucklakeConfig(AdapterConfig):
    commit_message: str | None = None
    partition_by: list[str] | str | None = None
    partitioned_by: list[str] | str | None = None
    sorted_by: list[str] | str | None = None
    sort_by: list[str] | str | None = None
    merge_update_columns: list[str] | None = None
    merge_exclude_columns: list[str] | None = None


class DucklakeAdapter(MetadataFreshness, ChangeFeedWindows, SQLAdapter):
    Relation = DucklakeRelation
    Column = DucklakeColumn
    ConnectionManager = DucklakeConnectionManager
    AdapterSpecificConfigs = DucklakeConfig
    _capabilities = FRESHNESS_FROM_METADATA

    CONSTRAINT_SUPPORT = {
        ConstraintType.check: ConstraintSupport.NOT_SUPPORTED,
        ConstraintType.not_null: ConstraintSupport.ENFORCED,
        ConstraintType.unique: ConstraintSupport.NOT_SUPPORTED,
        ConstraintType.primary_key: ConstraintSupport.NOT_SUPPORTED,
        ConstraintType.foreign_key: ConstraintSupport.NOT_SUPPORTED,
    }

    def __init__(self, config: Any, mp_context: Any) -> None:
        with cheap_flag_sources():  # dbt_common's way reads every frame's source
            super().__init__(config, mp_context)

    @classmethod
    def date_function(cls) -> str:
        return "current_timestamp()"

    @classmethod
    def is_cancelable(cls) -> bool:
        # Ctrl-C: dbt calls the connection manager's cancel, which stops the
        # connection's Spark job group; nothing of the running statement commits
        return True

    @classmethod
    def quote(cls, identifier: str) -> str:
        return "`" + identifier.replace("`", "``") + "`"

    def valid_incremental_strategies(self) -> list[str]:
        return list(STRATEGIES)

    # -- agate (seeds) -> Spark types -------------------------------------------------
    @classmethod
    def convert_text_type(cls, agate_table: Any, col_idx: int) -> str:
        return "string"

    @classmethod
    def convert_number_type(cls, agate_table: Any, col_idx: int) -> str:
        import agate

        decimals = agate_table.aggregate(agate.MaxPrecision(col_idx))
        return "double" if decimals else "bigint"

    @classmethod
    def convert_integer_type(cls, agate_table: Any, col_idx: int) -> str:
        return "bigint"

    @classmethod
    def convert_boolean_type(cls, agate_table: Any, col_idx: int) -> str:
        return "boolean"

    @classmethod
    def convert_date_type(cls, agate_table: Any, col_idx: int) -> str:
        return "date"

    @classmethod
    def convert_time_type(cls, agate_table: Any, col_idx: int) -> str:
        return "string"

    @classmethod
    def convert_datetime_type(cls, agate_table: Any, col_idx: int) -> str:
        return "timestamp"

    def cleanup_connections(self) -> None:
        """dbt's end of an invocation: an atomic build publishes (or discards) here."""
        creds = self.config.credentials
        try:
            target = getattr(self.config, "target_name", None)
            finish(creds.author, target, commit_extra_info, creds.secrets().mask)
        finally:
            super().cleanup_connections()

    # -- metadata from the lake -------------------------------------------------------
    def _handle(self) -> LakeHandle:
        connection = self.connections.get_thread_connection()
        handle = self.connections.open(connection).handle
        assert isinstance(handle, LakeHandle)
        return handle

    @available.parse_none
    def submit_python_job(self, parsed_model: dict, compiled_code: str) -> AdapterResponse:
        """On this adapter's SparkSession; the result waits in `python_view(this)`."""
        from .python_models import run_python_model

        handle = self._handle()
        handle.job_group = self.connections.get_thread_connection().name or "dbt"
        root = (
            self.config.project_root
            if parsed_model.get("package_name") == self.config.project_name
            else None
        )
        view = run_python_model(handle, parsed_model, compiled_code, root)
        return AdapterResponse(_message=f"OK python model staged as {view}")

    @available
    def python_view(self, relation: BaseRelation) -> str:
        from .python_models import python_view

        return python_view(relation.schema or "", relation.identifier or "")

    def list_schemas(self, database: str) -> list[str]:
        return [s.name for s in self._handle().lake.catalog().schemas()]

    def check_schema_exists(self, database: str, schema: str) -> bool:
        return any(s.lower() == schema.lower() for s in self.list_schemas(database))

    def list_relations_without_caching(self, schema_relation: BaseRelation) -> list[BaseRelation]:
        cat = self._handle().lake.catalog()
        schema = schema_relation.schema
        database = schema_relation.database
        if schema is None or not any(s.name == schema for s in cat.schemas()):
            return []
        found: list[BaseRelation] = [
            self.Relation.create(
                database=database, schema=t.schema_name, identifier=t.name, type=RelationType.Table
            )
            for t in cat.tables(schema)
        ]
        found += [
            self.Relation.create(
                database=database, schema=v.schema_name, identifier=v.name, type=RelationType.View
            )
            for v in cat.views(schema)
        ]
        return found

    def get_columns_in_relation(self, relation: BaseRelation) -> list[DucklakeColumn]:
        from .spark.types import spark_type
        from .spark.views import scan_relation

        handle = self._handle()
        assert relation.identifier is not None
        if not relation.schema or not relation.include_policy.schema:  # a Spark temp view
            fields = handle.spark.table(self.quote(relation.identifier)).schema.fields
            return [DucklakeColumn(f.name, f.dataType.simpleString()) for f in fields]
        cat = handle.lake.catalog()
        table = cat.find_table(relation.schema, relation.identifier)
        if table is not None:
            return [
                DucklakeColumn(c.name, spark_type(c).simpleString(), comment=c.comment)
                for c in cat.columns(table.table_id)
            ]
        try:
            df = scan_relation(handle.spark, handle.lake, relation.schema, relation.identifier)
        except CatalogNotFoundError:
            return []
        return [DucklakeColumn(f.name, f.dataType.simpleString()) for f in df.schema.fields]

    @available
    def partition_columns(self, relation: BaseRelation) -> list[str]:
        """Source columns of the table's current partition spec (empty: unpartitioned)."""
        cat = self._handle().lake.catalog()
        assert relation.schema is not None and relation.identifier is not None
        table = cat.find_table(relation.schema, relation.identifier)
        spec = cat.partition_spec(table.table_id) if table is not None else None
        if spec is None:
            return []
        names = {c.column_id: c.name for c in cat.columns(table.table_id)}  # type: ignore[union-attr]
        return [names[f.column_id] for f in spec.fields if f.column_id in names]

    @available
    def current_comments(self, relation: BaseRelation) -> dict[str, str | None]:
        """The table's comment (key '') and its columns' (lower-cased names)."""
        cat = self._handle().lake.catalog()
        assert relation.schema is not None and relation.identifier is not None
        table = cat.find_table(relation.schema, relation.identifier)
        if table is None:
            return {}
        comments: dict[str, str | None] = {"": table.comment}
        comments.update({c.name.lower(): c.comment for c in cat.columns(table.table_id)})
        return comments

    # -- checks before a node's first statement -------------------------------------
    @available
    def check_node(self, node: Any) -> str:
        """The relation's names are ones the lake accepts (and SQL can spell)."""
        quoting = self.config.quoting or {}
        check_node_names(
            node_field(node, "unique_id") or "?",
            [
                ("schema", node_field(node, "schema"), bool(quoting.get("schema"))),
                ("alias", node_field(node, "alias"), bool(quoting.get("identifier"))),
            ],
        )
        return ""

    @available
    def check_unique_key(self, node: Any, keys: list[str], sides: dict[str, list[str]]) -> str:
        """Each unique_key is a column of the new rows and of the target (`sides`: their
        column names), checked before the MERGE would fail on it (naming the engine's
        internal columns)."""
        check_key_columns(node_field(node, "unique_id") or "?", "unique_key", keys, sides)
        return ""

    # -- layout (partition_by / sorted_by) ----------------------------------------------
    @available
    def layout_clauses(self, model: Any) -> str:
        """`partitioned by (…) sorted by (…)` for the CREATE TABLE building `model`."""
        return model_layout(
            node_field(model, "unique_id") or "?", node_field(model, "config") or {}
        ).create_clauses()

    @available
    def layout_alters(self, relation: BaseRelation, model: Any) -> list[str]:
        """ALTERs an incremental run needs because the layout config changed."""
        layout = _layout(model)
        assert relation.schema is not None and relation.identifier is not None
        cat = self._handle().lake.catalog()
        return layout_alters(layout, cat, relation.schema, relation.identifier, str(relation))

    @available
    def layout_statement(self, relation: Any, verb: str, keys: Any) -> str:
        """The ALTER of a layout macro: the table checked to be a name, the keys
        checked like the model configs."""
        macro = f"ducklake_{verb.replace(' ', '_')}"
        target = layout_target(macro, relation)
        if verb.startswith("reset"):
            return f"alter table {target} {verb}"
        option = "partition_by" if "partitioned" in verb else "sorted_by"
        layout = model_layout(macro, {option: keys})
        items = layout.partition_items if option == "partition_by" else layout.sort_items
        return f"alter table {target} {verb} ({', '.join(items)})"

    @available
    def set_lake_option(
        self, option: str, value: Any, schema: str | None = None, table_name: str | None = None
    ) -> str:
        """DuckLake's set_option: global, or scoped to a schema or a table (as DuckDB,
        options are not versioned, so no snapshot is written)."""
        if option not in SETTABLE_OPTIONS:
            raise DbtRuntimeError(
                f"ducklake_set_option: unknown option {option!r}; accepted: "
                f"{', '.join(SETTABLE_OPTIONS)}"
            )
        handle = self._handle()
        schema = schema or (self.config.credentials.schema if table_name else None)
        with handle.lake.transaction(author=handle.credentials.author) as tx:
            table = tx.table(schema, table_name) if schema and table_name else None
            tx.set_option(option, value, schema=schema, table=table)
        scope = (
            f"table {schema}.{table_name}"
            if table_name
            else f"schema {schema}"
            if schema
            else "the lake"
        )
        return f"{option} = {value} for {scope}"

    # -- time travel by run, history ---------------------------------------------------
    @available
    def snapshot_of_run(self, relation: BaseRelation, invocation_id: str) -> int:
        """The snapshot the dbt run `invocation_id` left `relation` at: its last snapshot
        of that run that changed the relation."""
        found = [
            s.snapshot_id
            for s in self._touching(relation)
            if extra_info_fields(s.commit_extra_info).get("invocation_id") == invocation_id
        ]
        if not found:
            raise DbtRuntimeError(
                f"ducklake.at: no snapshot of {relation} was written by dbt invocation "
                f"{invocation_id!r}"
            )
        return max(found)

    @available
    def snapshot_history(self, relation: Any = None, limit: int = 50) -> list[dict[str, Any]]:
        """The newest `limit` snapshots (of `relation`, a relation or 'schema.name')."""
        snaps = self._handle().lake.snapshots() if relation is None else self._touching(relation)
        return [
            {
                "snapshot_id": s.snapshot_id,
                "time": s.snapshot_time.isoformat(timespec="seconds"),
                "author": s.author,
                "message": s.commit_message,
                "node": extra_info_fields(s.commit_extra_info).get("unique_id"),
            }
            for s in sorted(snaps, key=lambda s: s.snapshot_id, reverse=True)[:limit]
        ]

    @available
    def latest_snapshot_id(self) -> int:
        return self._handle().lake.latest_snapshot().snapshot_id

    @available
    def builds_since_compaction(self, relation: Any) -> int:
        """Snapshots that changed `relation` since its last merge_adjacent_files (all of
        them if it was never compacted): drives "compact every N builds" hooks."""
        count = 0
        for s in sorted(self._touching(relation), key=lambda s: s.snapshot_id, reverse=True):
            if any(c.kind == "merge_adjacent" for c in s.changes):
                break
            count += 1
        return count

    @available
    def plan_changes_snapshot(
        self, model: Any, target: BaseRelation | None, compiled_sql: str
    ) -> dict[str, Any] | None:
        """Stage a strategy='changes' snapshot run (see snapshots.py); None: no change."""
        config = node_field(model, "config")
        if config.get("dbt_valid_to_current"):
            raise DbtRuntimeError(
                f"snapshot {node_field(model, 'name')}: strategy 'changes' keeps open versions' "
                "dbt_valid_to NULL; remove dbt_valid_to_current"
            )
        return plan_changes_snapshot(
            self._handle(),
            node_field(model, "name"),
            node_field(model, "alias") or node_field(model, "name"),
            compiled_sql,
            config.get("unique_key"),
            config.get("snapshot_table_column_names"),
            consumed_snapshot(self._touching(target)) if target is not None else None,
            self.config.credentials.schema,
        )

    def _touching(self, relation: Any) -> list[Any]:
        """Snapshots that changed `relation` (a relation or 'schema.name'), oldest first."""
        if isinstance(relation, str):
            schema_part, _, name_part = relation.rpartition(".")
            relation = self.Relation.create(schema=schema_part or None, identifier=name_part)
        schema = relation.schema or self.config.credentials.schema
        return self._handle().lake.table_history(schema, relation.identifier or "")

    # -- commit info --------------------------------------------------------------------
    @available
    def set_commit_context(
        self,
        node: Any,
        action: str,
        message: str | None = None,
        more: dict[str, Any] | None = None,
    ) -> str:
        """Make the next snapshots of this connection carry this node's commit info;
        `action` is the materialization (and strategy), e.g. `incremental merge`."""
        unique_id = node_field(node, "unique_id") or "?"
        verb = dbt_command() or {"seed": "seed", "snapshot": "snapshot"}.get(
            node_field(node, "resource_type"), "run"
        )
        extra = commit_extra_info(
            getattr(self.config, "target_name", None),
            unique_id=unique_id,
            materialization=action,
            **(more or {}),
        )
        text = message or f"dbt {verb} {unique_id} ({action})"
        self._handle().set_commit(text, extra)
        return ""

    @available
    def clear_commit_context(self) -> str:
        self._handle().set_commit(None, None)
        return ""

    # -- a node's transaction (staged_node.py) ----------------------------------------
    @available
    def stage_node(self) -> str:
        """The node has post-hooks inside its transaction: build into a staging copy,
        published as one snapshot by dbt's commit."""
        self._handle().stage_node()
        return ""

    @available
    def defer_call(self, function: str, statement: str) -> bool:
        return self._handle().defer_call(function, statement)

    # -- seeds ----------------------------------------------------------------------------
    @available
    def load_seed(
        self,
        relation: BaseRelation,
        agate_table: Any,
        column_types: dict[str, str],
        full_refresh: bool = False,
        delimiter: str = ",",
    ) -> str:
        """Create (or replace) the seed's table from its CSV in one snapshot (seeds.py)."""
        load_seed(self._handle(), relation, agate_table, column_types, full_refresh, delimiter)
        return ""

    # -- docs ---------------------------------------------------------------------------
    @available
    def catalog_table(self, schemas: list[str]) -> Any:
        """The docs catalog of these schemas as an agate table, from lake metadata."""
        from dbt_common.clients.agate_helper import table_from_data_flat

        handle = self._handle()
        rows = catalog_rows(handle.spark, handle.lake, self.config.credentials.database, schemas)
        return table_from_data_flat(
            [dict(zip(CATALOG_COLUMNS, r, strict=True)) for r in rows], list(CATALOG_COLUMNS)
        )

    def get_catalog_for_single_relation(self, relation: BaseRelation) -> CatalogTable | None:
        """One relation's catalog entry (columns, comments, stats) from lake metadata."""
        handle = self._handle()
        assert relation.schema is not None and relation.identifier is not None
        rows = catalog_rows(
            handle.spark,
            handle.lake,
            self.config.credentials.database,
            [relation.schema],
            only=relation.identifier,
        )
        return catalog_table(rows)

    # -- tests and debug ---------------------------------------------------------------
    def run_sql_for_tests(self, sql: str, fetch: str, conn: Any) -> Any:
        cursor = conn.handle.cursor()
        try:
            cursor.execute(sql)
            if fetch == "one":
                return cursor.fetchone()
            if fetch == "all":
                return cursor.fetchall()
            return None
        finally:
            conn.transaction_open = False

    def debug_query(self) -> None:
        import pyarrow as pa

        handle = self._handle()
        handle.lake.latest_snapshot()  # the metadata database answers
        files, root = handle.lake.files, handle.lake.data_path
        probe = root + ".dbt-ducklake-debug.parquet"
        try:  # the data path takes a file (local disk or S3, as the engine reaches it)
            files.makedirs(root)
            files.write_table(pa.table({"ok": [1]}), probe)
            files.delete(probe)
        except OSError as exc:
            raise DbtRuntimeError(
                handle.credentials.secrets().mask(f"data_path {root!r} is not writable: {exc}")
            ) from exc
        self.execute("select 1 as id")  # the Spark session runs a query


def _layout(model: Any) -> Layout:
    config = node_field(model, "config") or {}
    return model_layout(
        node_field(model, "unique_id") or "?",
        config if isinstance(config, dict) else config.to_dict(),
    )
