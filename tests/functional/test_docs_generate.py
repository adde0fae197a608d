"""`dbt docs generate` and single-relation catalog suites, subclassed with the suites'
documented hook: the expected
catalog in this adapter's terms — Spark type names, no owner (DuckLake records none),
row count and size stats from DuckLake's table stats for tables, none for views."""

from __future__ import annotations

from typing import Any

import pytest
from dbt.artifacts.schemas.catalog import CatalogTable
from dbt.tests.adapter.basic import expected_catalog
from dbt.tests.adapter.basic.test_docs_generate import BaseDocsGenerate, BaseDocsGenReferences
from dbt.tests.adapter.basic.test_get_catalog_for_single_relation import (
    BaseGetCatalogForSingleRelation,
)
from dbt.tests.util import AnyInteger
from dbt_common.contracts.metadata import ColumnMetadata, StatsItem, TableMetadata


def table_stats(rows: int) -> dict[str, Any]:
    """What the catalog reports for a lake table: exact rows, its files' bytes."""
    return {
        "has_stats": {
            "id": "has_stats",
            "label": "Has Stats?",
            "value": True,
            "description": "Indicates whether there are statistics for this table",
            "include": False,
        },
        "rows": {
            "id": "rows",
            "label": "Row count",
            "value": rows,
            "description": "Rows in the table (DuckLake table stats)",
            "include": True,
        },
        "bytes": {
            "id": "bytes",
            "label": "Size",
            "value": AnyInteger(),
            "description": "Bytes of the table's data files",
            "include": True,
        },
    }


SPARK_TYPES = {
    "id_type": "bigint",
    "text_type": "string",
    "time_type": "timestamp",
    "view_type": "VIEW",
    "table_type": "BASE TABLE",
}


class TestDocsGenerate(BaseDocsGenerate):
    @pytest.fixture(scope="class")
    def expected_catalog(self, project):
        return expected_catalog.base_expected_catalog(
            project,
            role=None,
            model_stats=expected_catalog.no_stats(),
            seed_stats=table_stats(1),
            **SPARK_TYPES,
        )


class TestDocsGenReferences(BaseDocsGenReferences):
    @pytest.fixture(scope="class")
    def expected_catalog(self, project):
        return expected_catalog.expected_references_catalog(
            project,
            role=None,
            bigint_type="bigint",
            model_stats=table_stats(1),
            seed_stats=table_stats(1),
            view_summary_stats=expected_catalog.no_stats(),
            **SPARK_TYPES,
        )


def _seed_columns() -> dict[str, ColumnMetadata]:
    types = [
        ("id", "bigint"),
        ("first_name", "string"),
        ("email", "string"),
        ("ip_address", "string"),
        ("updated_at", "timestamp"),
    ]
    return {
        n: ColumnMetadata(type=t, index=i, name=n, comment=None)
        for i, (n, t) in enumerate(types, start=1)
    }


def _no_stats() -> dict[str, StatsItem]:
    return {
        "has_stats": StatsItem(
            id="has_stats",
            label="Has Stats?",
            value=False,
            include=False,
            description="Indicates whether there are statistics for this table",
        )
    }


class TestGetCatalogForSingleRelation(BaseGetCatalogForSingleRelation):
    """The suite's hook: what this adapter reports for one table and one view."""

    @pytest.fixture(scope="class")
    def expected_catalog_my_seed(self, project):
        stats = {
            key: StatsItem(id=key, include=True, **item)
            for key, item in {
                "rows": {
                    "label": "Row count",
                    "value": 1,
                    "description": "Rows in the table (DuckLake table stats)",
                },
                "bytes": {
                    "label": "Size",
                    "value": AnyInteger(),
                    "description": "Bytes of the table's data files",
                },
            }.items()
        }
        stats["has_stats"] = StatsItem(
            id="has_stats",
            label="Has Stats?",
            value=True,
            include=False,
            description="Indicates whether there are statistics for this table",
        )
        return CatalogTable(
            metadata=TableMetadata(
                type="BASE TABLE",
                schema=project.test_schema,
                name="my_seed",
                database=project.database,
                comment=None,
                owner=None,
            ),
            columns=_seed_columns(),
            stats=stats,
        )

    @pytest.fixture(scope="class")
    def expected_catalog_my_view_model(self, project):
        return CatalogTable(
            metadata=TableMetadata(
                type="VIEW",
                schema=project.test_schema,
                name="my_view_model",
                database=project.database,
                comment=None,
                owner=None,
            ),
            columns=_seed_columns(),
            stats=_no_stats(),
        )
