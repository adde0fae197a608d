"""dbt-tests-adapter suites, subclassed: store_failures_as (interactions, project level
off/view/ephemeral, generic tests, exceptions), query comments, simple copy (also with
upper-case model names), changing a relation's type, drop_schema_named, one alias in two
schemas given as databases, sample mode, dbt debug."""

from __future__ import annotations

import pytest
from dbt.tests.adapter.aliases.test_aliases import BaseSameAliasDifferentDatabases
from dbt.tests.adapter.dbt_debug.test_dbt_debug import (
    BaseDebug,
    BaseDebugInvalidProjectPostgres,
    BaseDebugProfileVariable,
)
from dbt.tests.adapter.query_comment.test_query_comment import (
    BaseEmptyQueryComments,
    BaseMacroArgsQueryComments,
    BaseMacroInvalidQueryComments,
    BaseMacroQueryComments,
    BaseNullQueryComments,
    BaseQueryComments,
)
from dbt.tests.adapter.relations.test_changing_relation_type import (
    BaseChangeRelationTypeValidator,
)
from dbt.tests.adapter.relations.test_dropping_schema_named import BaseDropSchemaNamed
from dbt.tests.adapter.sample_mode.test_sample_mode import BaseSampleModeTest
from dbt.tests.adapter.simple_copy.test_copy_uppercase import BaseSimpleCopyUppercase
from dbt.tests.adapter.simple_copy.test_simple_copy import (
    EmptyModelsArentRunBase,
    SimpleCopyBase,
)
from dbt.tests.adapter.store_test_failures_tests.basic import (
    StoreTestFailuresAsExceptions,
    StoreTestFailuresAsGeneric,
    StoreTestFailuresAsInteractions,
    StoreTestFailuresAsProjectLevelEphemeral,
    StoreTestFailuresAsProjectLevelOff,
    StoreTestFailuresAsProjectLevelView,
)
from dbt.tests.util import run_dbt

from tests.functional.conftest import lake_target


class TestStoreTestFailuresAsInteractions(StoreTestFailuresAsInteractions):
    pass


class TestStoreTestFailuresAsProjectLevelOff(StoreTestFailuresAsProjectLevelOff):
    pass


class TestStoreTestFailuresAsProjectLevelView(StoreTestFailuresAsProjectLevelView):
    pass


class TestStoreTestFailuresAsProjectLevelEphemeral(StoreTestFailuresAsProjectLevelEphemeral):
    pass


class TestStoreTestFailuresAsGeneric(StoreTestFailuresAsGeneric):
    pass


class TestStoreTestFailuresAsExceptions(StoreTestFailuresAsExceptions):
    pass


class TestQueryComments(BaseQueryComments):
    pass


class TestMacroQueryComments(BaseMacroQueryComments):
    pass


class TestMacroArgsQueryComments(BaseMacroArgsQueryComments):
    pass


class TestMacroInvalidQueryComments(BaseMacroInvalidQueryComments):
    pass


class TestNullQueryComments(BaseNullQueryComments):
    pass


class TestEmptyQueryComments(BaseEmptyQueryComments):
    pass


class TestSimpleCopy(SimpleCopyBase):
    def test_simple_copy_with_materialized_views(self, project):
        """DuckLake has no materialized views: creating one is refused, naming it; the
        suite's scenario then runs with its unrelated view over the plain table."""
        schema = project.test_schema
        project.run_sql(f"create table {schema}.unrelated_table (id int)")
        with pytest.raises(Exception, match=r"(?i)materialized view"):
            project.run_sql(
                f"create materialized view {schema}.unrelated_materialized_view as "
                f"(select * from {schema}.unrelated_table)"
            )
        project.run_sql(
            f"create view {schema}.unrelated_view as (select * from {schema}.unrelated_table)"
        )
        assert len(run_dbt(["seed"])) == 1
        assert len(run_dbt()) == 7


class TestEmptyModelsArentRun(EmptyModelsArentRunBase):
    pass


class TestSimpleCopyUppercase(BaseSimpleCopyUppercase):
    # the suite hard-codes a PostgreSQL profile; the mixed-case database is kept
    @pytest.fixture(scope="class")
    def dbt_profile_target(self, tmp_path_factory):
        root = tmp_path_factory.mktemp("lake")
        target = lake_target(f"sqlite:///{root}/metadata.sqlite", f"{root}/data")
        return {**target, "database": "dbtMixedCase"}


class TestChangeRelationType(BaseChangeRelationTypeValidator):
    pass


class TestDropSchemaNamed(BaseDropSchemaNamed):
    pass


class TestSameAliasDifferentDatabases(BaseSameAliasDifferentDatabases):
    pass


class TestSampleMode(BaseSampleModeTest):
    pass


class TestDebug(BaseDebug):
    # BaseDebug holds no test: this is BaseDebugPostgres' test_ok, as dbt-bigquery does
    def test_ok(self, project):
        run_dbt(["debug"])
        assert "ERROR" not in self.capsys.readouterr().out


class TestDebugProfileVariable(BaseDebugProfileVariable):
    # BaseDebugProfileVariable holds no test: the same test_ok, with the templated profile
    def test_ok(self, project):
        run_dbt(["debug"])
        assert "ERROR" not in self.capsys.readouterr().out


class TestDebugInvalidProject(BaseDebugInvalidProjectPostgres):
    pass
