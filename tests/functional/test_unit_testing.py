"""dbt unit tests (dbt-tests-adapter unit_testing suites). The types suite uses its
documented `data_types` hook with Spark SQL literals, complex types included."""

from __future__ import annotations

import pytest
from dbt.tests.adapter.unit_testing.test_case_insensitivity import BaseUnitTestCaseInsensivity
from dbt.tests.adapter.unit_testing.test_invalid_input import BaseUnitTestInvalidInput
from dbt.tests.adapter.unit_testing.test_quoted_reserved_word_column_names import (
    BaseUnitTestQuotedReservedWordColumnNames,
)
from dbt.tests.adapter.unit_testing.test_types import (
    BaseUnitTestingTypes,
    BaseUnitTestingVarcharFixtureNoTruncation,
)

pytestmark = pytest.mark.usefixtures("without_json_artifacts")  # reads no dbt JSON artifact


class TestUnitTestingTypes(BaseUnitTestingTypes):
    @pytest.fixture
    def data_types(self) -> list[list[str]]:
        # sql_value, yaml_value
        return [
            ["1", "1"],
            ["'1'", "1"],
            ["2.5d", "2.5"],
            ["cast(12.34 as decimal(6,2))", "12.34"],
            ["'string'", "string"],
            ["true", "true"],
            ["date '2020-01-02'", "2020-01-02"],
            ["timestamp '2013-11-03 00:00:00'", "2013-11-03 00:00:00"],
            ["array(1, 2, 3)", "'array(1, 2, 3)'"],
            ["map('10', 't', '15', 'f')", """'map("10", "t", "15", "f")'"""],
            ['named_struct("a", 1, "b", 2)', """'named_struct("a", 1, "b", 2)'"""],
        ]


class TestUnitTestCaseInsensitivity(BaseUnitTestCaseInsensivity):
    pass


class TestUnitTestInvalidInput(BaseUnitTestInvalidInput):
    pass


class TestUnitTestQuotedReservedWordColumnNames(BaseUnitTestQuotedReservedWordColumnNames):
    pass


class TestUnitTestingVarcharFixtureNoTruncation(BaseUnitTestingVarcharFixtureNoTruncation):
    pass
