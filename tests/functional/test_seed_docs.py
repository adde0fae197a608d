"""More dbt-tests-adapter suites, subclassed unchanged: the table materialization suite,
adapter methods, concurrency, simple_seed (a full refresh drops the seed's downstream
views in the same snapshot: DROP … CASCADE) and persist_docs.

Not wired: BasePersistDocs, whose view-column assertions need column comments on views —
DuckLake has none (DuckDB's extension refuses `COMMENT ON COLUMN` on a view: "it is not a
table"). `TestPersistDocsTablesAndViews` below checks everything else it checks."""

from __future__ import annotations

import json

import pytest
from dbt.tests.adapter.basic.test_adapter_methods import BaseAdapterMethod
from dbt.tests.adapter.basic.test_table_materialization import BaseTableMaterialization
from dbt.tests.adapter.concurrency.test_concurrency import BaseConcurrency
from dbt.tests.adapter.persist_docs.test_persist_docs import (
    BasePersistDocsAllColumnsMissing,
    BasePersistDocsBase,
    BasePersistDocsColumnMissing,
    BasePersistDocsCommentOnQuotedColumn,
    BasePersistDocsQuotedColumnCaseSensitive,
    BasePersistDocsQuotedDescriptionNotAppliedOnMismatch,
)
from dbt.tests.adapter.simple_seed.test_seed import (
    BaseBasicSeedTests,
    BaseSeedConfigFullRefreshOff,
    BaseSeedConfigFullRefreshOn,
)
from dbt.tests.util import run_dbt


class TestTableMaterialization(BaseTableMaterialization):
    pass


class TestAdapterMethod(BaseAdapterMethod):
    pass


class TestConcurrency(BaseConcurrency):
    pass


class TestBasicSeed(BaseBasicSeedTests):
    pass


class TestSeedFullRefreshOn(BaseSeedConfigFullRefreshOn):
    pass


class TestSeedFullRefreshOff(BaseSeedConfigFullRefreshOff):
    pass


class TestPersistDocsColumnMissing(BasePersistDocsColumnMissing):
    pass


class TestPersistDocsAllColumnsMissing(BasePersistDocsAllColumnsMissing):
    pass


class TestPersistDocsQuotedColumnCaseSensitive(BasePersistDocsQuotedColumnCaseSensitive):
    pass


class TestPersistDocsQuotedDescriptionNotAppliedOnMismatch(
    BasePersistDocsQuotedDescriptionNotAppliedOnMismatch
):
    pass


class TestPersistDocsCommentOnQuotedColumn(BasePersistDocsCommentOnQuotedColumn):
    pass


class TestPersistDocsTablesAndViews(BasePersistDocsBase):
    """BasePersistDocs' project and checks, but view columns carry no comments."""

    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": {"test": {"+persist_docs": {"relation": True, "columns": True}}}}

    def test_has_comments(self, project) -> None:
        run_dbt(["docs", "generate"])
        with open("target/catalog.json") as fp:
            nodes = json.load(fp)["nodes"]
        assert len(nodes) == 4
        self._assert_has_table_comments(nodes["model.test.table_model"])
        self._assert_has_view_comments(nodes["model.test.view_model"], True, False)
        self._assert_has_view_comments(nodes["model.test.no_docs_model"], False, False)
