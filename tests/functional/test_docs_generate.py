"""`dbt docs generate` suites, subclassed with the suites' documented hook: the expected
catalog in this adapter's terms — Spark type names, no owner (DuckLake records none),
row count and size stats from DuckLake's table stats for tables, none for views."""

from __future__ import annotations

from typing import Any

import pytest
from dbt.tests.adapter.basic import expected_catalog
from dbt.tests.adapter.basic.test_docs_generate import BaseDocsGenerate, BaseDocsGenReferences
from dbt.tests.util import AnyInteger


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
    def expected_catalog(self, project):  # type: ignore[no-untyped-def]
        return expected_catalog.base_expected_catalog(
            project,
            role=None,
            model_stats=expected_catalog.no_stats(),
            seed_stats=table_stats(1),
            **SPARK_TYPES,
        )


class TestDocsGenReferences(BaseDocsGenReferences):
    @pytest.fixture(scope="class")
    def expected_catalog(self, project):  # type: ignore[no-untyped-def]
        return expected_catalog.expected_references_catalog(
            project,
            role=None,
            bigint_type="bigint",
            model_stats=table_stats(1),
            seed_stats=table_stats(1),
            view_summary_stats=expected_catalog.no_stats(),
            **SPARK_TYPES,
        )
