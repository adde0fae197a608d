"""dbt-tests-adapter constraints suites, with the suites' documented per-adapter hooks:
Spark SQL literals and type names for the data-type cases, this adapter's DDL as the
expected SQL, and DuckDB's wording of a NOT NULL violation. DuckLake enforces NOT NULL
only (check, unique, primary and foreign keys are not part of the format), so dbt warns
about those and leaves them out of the DDL."""

from __future__ import annotations

import pytest
from dbt.tests.adapter.constraints.fixtures import model_contract_header_schema_yml
from dbt.tests.adapter.constraints.test_constraints import (
    BaseConstraintQuotedColumn,
    BaseConstraintsRollback,
    BaseConstraintsRuntimeDdlEnforcement,
    BaseIncrementalConstraintsColumnsEqual,
    BaseIncrementalConstraintsRollback,
    BaseIncrementalConstraintsRuntimeDdlEnforcement,
    BaseIncrementalContractSqlHeader,
    BaseModelConstraintsRuntimeEnforcement,
    BaseTableConstraintsColumnsEqual,
    BaseTableContractSqlHeader,
    BaseViewConstraintsColumnsEqual,
)
from dbt.tests.util import run_dbt

pytestmark = pytest.mark.usefixtures("without_json_artifacts")  # reads no dbt JSON artifact


class SparkTypes:
    @pytest.fixture
    def string_type(self) -> str:
        return "STRING"

    @pytest.fixture
    def int_type(self) -> str:
        return "INT"

    @pytest.fixture
    def data_types(self) -> list[list[str]]:
        # sql_column_value, schema_data_type, error_data_type
        return [
            ["1", "int", "INT"],
            ["'1'", "string", "STRING"],
            ["true", "boolean", "BOOLEAN"],
            ["cast(1 as bigint)", "bigint", "BIGINT"],
            ["1.5d", "double", "DOUBLE"],
            ["cast(6.45 as decimal(5,2))", "decimal(5,2)", "DECIMAL(5,2)"],
            ["cast('2019-01-01' as date)", "date", "DATE"],
            ["cast('2019-01-01 10:00:00' as timestamp)", "timestamp", "TIMESTAMP"],
            ["array('a', 'b', 'c')", "array<string>", "ARRAY<STRING>"],
            ["array(1, 2, 3)", "array<int>", "ARRAY<INT>"],
            ["named_struct('x', 1, 'y', 'a')", "struct<x:int,y:string>", "STRUCT<X:INT,Y:STRING>"],
            ["map('k', 1)", "map<string,int>", "MAP<STRING,INT>"],
        ]


class TestTableConstraintsColumnsEqual(SparkTypes, BaseTableConstraintsColumnsEqual):
    pass


class TestViewConstraintsColumnsEqual(SparkTypes, BaseViewConstraintsColumnsEqual):
    pass


class TestIncrementalConstraintsColumnsEqual(SparkTypes, BaseIncrementalConstraintsColumnsEqual):
    pass


# The whole statement this adapter runs: columns declared (NOT NULL kept, the
# unsupported constraints left out) and the query cast to them, in one CTAS.
EXPECTED_DDL = """
create or replace table <model_identifier> (
    id integer not null,
    color text,
    date_day text
)
as
select id, color, date_day from
(
    -- depends_on: <foreign_key_model_identifier>
    select
        'blue' as color,
        1 as id,
        '2019-01-01' as date_day
) as model_subq
"""


class TestTableConstraintsRuntimeDdlEnforcement(BaseConstraintsRuntimeDdlEnforcement):
    @pytest.fixture(scope="class")
    def expected_sql(self) -> str:
        return EXPECTED_DDL


class TestIncrementalConstraintsRuntimeDdlEnforcement(
    BaseIncrementalConstraintsRuntimeDdlEnforcement
):
    @pytest.fixture(scope="class")
    def expected_sql(self) -> str:
        return EXPECTED_DDL


class TestModelConstraintsRuntimeEnforcement(BaseModelConstraintsRuntimeEnforcement):
    @pytest.fixture(scope="class")
    def expected_sql(self) -> str:
        return EXPECTED_DDL


class TestConstraintQuotedColumn(BaseConstraintQuotedColumn):
    @pytest.fixture(scope="class")
    def expected_sql(self) -> str:
        return """
create or replace table <model_identifier> (
    id integer not null,
    `from` text not null,
    date_day text
)
as
select id, `from`, date_day from
(
    select
        'blue' as `from`,
        1 as id,
        '2019-01-01' as date_day
) as model_subq
"""


NOT_NULL_MESSAGES = ["NOT NULL constraint failed", "my_model.id", "nothing was committed"]


class TestTableConstraintsRollback(BaseConstraintsRollback):
    @pytest.fixture(scope="class")
    def expected_error_messages(self) -> list[str]:
        return NOT_NULL_MESSAGES


class TestIncrementalConstraintsRollback(BaseIncrementalConstraintsRollback):
    @pytest.fixture(scope="class")
    def expected_error_messages(self) -> list[str]:
        return NOT_NULL_MESSAGES


# The sql_header suites' models in Spark SQL (their fixtures are PostgreSQL's
# `set session time zone` / `current_setting`): the header runs in the session first.
HEADER_MODEL = """
{{{{ config(materialized = "{materialized}", on_schema_change="append_new_columns") }}}}

{{% call set_sql_header(config) %}}
set time zone 'Asia/Kolkata';
{{%- endcall %}}
select current_timezone() as column_name
"""


class SparkSqlHeader:
    @pytest.fixture(scope="class", autouse=True)
    def restore_time_zone(self, project):
        yield
        project.run_sql("reset spark.sql.session.timeZone")

    def test_header_ran_before_the_model(self, project) -> None:
        run_dbt(["run", "-s", "my_model_contract_sql_header"])
        rows = project.run_sql(
            f"select column_name from {project.test_schema}.my_model_contract_sql_header",
            fetch="all",
        )
        assert rows and {tuple(r) for r in rows} == {("Asia/Kolkata",)}


class TestTableContractSqlHeader(SparkSqlHeader, BaseTableContractSqlHeader):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "my_model_contract_sql_header.sql": HEADER_MODEL.format(materialized="table"),
            "constraints_schema.yml": model_contract_header_schema_yml,
        }


class TestIncrementalContractSqlHeader(SparkSqlHeader, BaseIncrementalContractSqlHeader):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "my_model_contract_sql_header.sql": HEADER_MODEL.format(materialized="incremental"),
            "constraints_schema.yml": model_contract_header_schema_yml,
        }
