"""dbt-tests-adapter simple_seed suites, subclassed unchanged: custom schema, parsing,
delimiters (unique, wrong: fails naming the delimiter and the header, empty), column
type overrides (`text` is Spark's `string`, as in models' casts), enabled via config, a
BOM, an empty seed. Not wired: BaseSeedSpecificFormats (its `seed.with.dots` is a table
name with dots, which the lake refuses by design: README, Names)."""

from __future__ import annotations

from pathlib import Path

import pytest
from dbt.tests.adapter.simple_seed import fixtures as seed_suite_fixtures
from dbt.tests.adapter.simple_seed import seeds as seed_fixtures
from dbt.tests.adapter.simple_seed.test_seed import (
    BaseSeedCustomSchema,
    BaseSeedParsing,
    BaseSeedWithEmptyDelimiter,
    BaseSeedWithUniqueDelimiter,
    BaseSeedWithWrongDelimiter,
    BaseSimpleSeedEnabledViaConfig,
    BaseSimpleSeedWithBOM,
    BaseTestEmptySeed,
)
from dbt.tests.adapter.simple_seed.test_seed_type_override import BaseSimpleSeedColumnOverride
from dbt.tests.util import copy_file, run_dbt

pytestmark = pytest.mark.usefixtures("without_json_artifacts")  # reads no dbt JSON artifact


class TestSeedCustomSchema(BaseSeedCustomSchema):
    pass


class TestSeedParsing(BaseSeedParsing):
    pass


class TestSeedWithUniqueDelimiter(BaseSeedWithUniqueDelimiter):
    pass


class TestSeedWithWrongDelimiter(BaseSeedWithWrongDelimiter):
    def test_the_error_names_delimiter_and_header(self, project):
        message = run_dbt(["seed"], expect_pass=False).results[0].message
        assert "seed_pipe_separated" in message
        assert "delimiter ';'" in message
        assert "'seed_id|first_name|email|ip_address|birthday'" in message


class TestSeedWithEmptyDelimiter(BaseSeedWithEmptyDelimiter):
    pass


# the column types the suite expects, in PostgreSQL's names -> the same types in Spark's
SPARK_TYPE_NAMES = {
    "type: text": "type: string",
    "type: integer": "type: bigint",
    "type: timestamp without time zone": "type: timestamp",
}


class TestSimpleSeedColumnOverride(BaseSimpleSeedColumnOverride):
    # the suite's schema.yml, its expected type names spelled as Spark names them
    @pytest.fixture(scope="class")
    def models(self):
        schema_yml = seed_suite_fixtures.properties__schema_yml
        for postgres, spark in SPARK_TYPE_NAMES.items():
            schema_yml = schema_yml.replace(postgres + "\n", spark + "\n")
        return {"schema.yml": schema_yml}


class TestSimpleSeedEnabledViaConfig(BaseSimpleSeedEnabledViaConfig):
    pass


class TestSimpleSeedWithBOM(BaseSimpleSeedWithBOM):
    # the suite copies its seed_bom.csv from the test module's folder: this takes it
    # from the suite's own package, the rest of its setUp unchanged
    @pytest.fixture(scope="class", autouse=True)
    def setUp(self, project):
        project.run_sql(seed_fixtures.seeds__expected_sql)
        suite_dir = Path(seed_fixtures.__file__).parent
        copy_file(suite_dir, "seed_bom.csv", project.project_root / "seeds" / "seed_bom.csv", "")


class TestEmptySeed(BaseTestEmptySeed):
    pass
