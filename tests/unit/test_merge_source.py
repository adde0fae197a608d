"""A MERGE value or condition reads only the source when every column it names is
qualified by the source's alias: told without a parse for `[NOT] alias.column`, as the
parse tells it for anything else."""

from __future__ import annotations

import pytest

from dbt.adapters.ducklake.spark.merge_source import _QUALIFIED, _source_only

CASES = [
    ("DBT_INTERNAL_SOURCE.ducklake_removed", True),
    ("not DBT_INTERNAL_SOURCE.ducklake_removed", True),
    ("NOT  dbt_internal_source . `a b`", True),
    ("`DBT_INTERNAL_SOURCE`.x", True),
    ("DBT_INTERNAL_DEST.x", False),
    ("not DBT_INTERNAL_DEST.x", False),
    ("notes.x", False),  # a qualifier that starts with "not"
    ("x", False),
    ("DBT_INTERNAL_SOURCE.x + 1", True),  # parsed
    ("upper(DBT_INTERNAL_SOURCE.v) || DBT_INTERNAL_DEST.v", False),
    ("(select max(x) from t)", False),
]


@pytest.mark.parametrize(("text", "source_only"), CASES)
def test_source_only(text: str, source_only: bool) -> None:
    _source_only.cache_clear()
    assert _source_only(text, "DBT_INTERNAL_SOURCE", "DBT_INTERNAL_DEST") is source_only


def test_the_plain_forms_skip_the_parse() -> None:
    plain = [t for t, _ in CASES if _QUALIFIED.fullmatch(t)]
    assert plain == [t for t, _ in CASES[:7]]
