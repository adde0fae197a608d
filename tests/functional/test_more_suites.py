"""More dbt-tests-adapter suites, subclassed: dbt show, aliases, caching (unquoted names
match case-insensitively, as DuckDB resolves them), empty, store_failures. Not wired in:
BaseTestEmptySeedFlag (`dbt seed --empty` needs dbt-core 1.12, which cannot be installed
here); BaseEphemeralMulti and BaseEphemeralNested (they compare the compiled file to
PostgreSQL's exact `create view "dbt"."test_test_ephemeral"…` text, with no hook)."""

from __future__ import annotations

from dbt.tests.adapter.aliases.test_aliases import (
    BaseAliasErrors,
    BaseAliases,
    BaseSameAliasDifferentSchemas,
)
from dbt.tests.adapter.caching.test_caching import (
    BaseCachingLowercaseModel,
    BaseCachingSelectedSchemaOnly,
    BaseCachingUppercaseModel,
    BaseNoPopulateCache,
)
from dbt.tests.adapter.dbt_show.test_dbt_show import (
    BaseShowDoesNotHandleDoubleLimit,
    BaseShowLimit,
    BaseShowSqlHeader,
)
from dbt.tests.adapter.empty.test_empty import (
    BaseTestEmpty,
    BaseTestEmptyInlineSourceRef,
)
from dbt.tests.adapter.ephemeral.test_ephemeral import BaseEphemeralErrorHandling
from dbt.tests.adapter.store_test_failures_tests.test_store_test_failures import (
    BaseStoreTestFailures,
    BaseStoreTestFailuresLimit,
)


class TestShowLimit(BaseShowLimit):
    pass


class TestShowSqlHeader(BaseShowSqlHeader):
    pass


class TestShowDoesNotHandleDoubleLimit(BaseShowDoesNotHandleDoubleLimit):
    # the suite's documented per-adapter hook: this engine's parser words it so
    DATABASE_ERROR_MESSAGE = "Found multiple 'LIMIT' clauses"


class TestAliases(BaseAliases):
    pass


class TestAliasErrors(BaseAliasErrors):
    pass


class TestSameAliasDifferentSchemas(BaseSameAliasDifferentSchemas):
    pass


class TestCachingLowercaseModel(BaseCachingLowercaseModel):
    pass


class TestCachingUppercaseModel(BaseCachingUppercaseModel):
    pass


class TestCachingSelectedSchemaOnly(BaseCachingSelectedSchemaOnly):
    pass


class TestNoPopulateCache(BaseNoPopulateCache):
    pass


class TestEmpty(BaseTestEmpty):
    pass


class TestEmptyInlineSourceRef(BaseTestEmptyInlineSourceRef):
    pass


class TestStoreTestFailures(BaseStoreTestFailures):
    pass


class TestStoreTestFailuresLimit(BaseStoreTestFailuresLimit):
    pass


class TestEphemeralErrorHandling(BaseEphemeralErrorHandling):
    pass
