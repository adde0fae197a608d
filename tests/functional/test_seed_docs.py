"""More dbt-tests-adapter suites, subclassed unchanged: the table materialization suite
and seeds with full_refresh off. (simple_seed's full-refresh cases and persist_docs are
not wired in yet.)"""

from __future__ import annotations

from dbt.tests.adapter.basic.test_table_materialization import BaseTableMaterialization
from dbt.tests.adapter.simple_seed.test_seed import BaseSeedConfigFullRefreshOff


class TestTableMaterialization(BaseTableMaterialization):
    pass


class TestSeedFullRefreshOff(BaseSeedConfigFullRefreshOff):
    pass
