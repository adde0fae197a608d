"""Layout configs are checked before any SQL: errors name the model, the option and
the accepted forms; aliases and single strings are accepted."""

from __future__ import annotations

import pytest
from dbt_common.exceptions import DbtConfigError

from dbt.adapters.ducklake.layout import layout_target, model_layout


def test_layout_configs_render_as_create_clauses() -> None:
    layout = model_layout(
        "model.p.m", {"partition_by": ["year(ts)", "bucket(4, id)"], "sort_by": "ts desc"}
    )
    assert layout.partition == (("ts", "year"), ("id", "bucket(4)"))
    assert layout.sort == (("ts", "DESC", "NULLS_LAST"),)
    assert layout.create_clauses() == "partitioned by (year(ts), bucket(4, id)) sorted by (ts desc)"
    assert model_layout("model.p.m", {"partitioned_by": "day(ts), region"}).partition == (
        ("ts", "day"),
        ("region", "identity"),
    )
    assert model_layout("model.p.m", {}).create_clauses() == ""


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"partition_by": ["week(ts)"]},
            r"model\.p\.m: config partition_by: .*accepted: col, year",
        ),
        ({"partition_by": [1]}, r"model\.p\.m: config partition_by must be a list of strings"),
        ({"sorted_by": ["a sideways"]}, r"config sorted_by: .*accepted: col \[ASC\|DESC\]"),
        ({"sorted_by": ["a"], "sort_by": ["b"]}, r"set sorted_by or its alias sort_by, not both"),
    ],
)
def test_invalid_layout_configs_are_refused(config: dict[str, object], message: str) -> None:
    with pytest.raises(DbtConfigError, match=message):
        model_layout("model.p.m", config)


@pytest.mark.parametrize("name", ["events", "shop.events", "lake.shop.events_2", " shop.Events "])
def test_layout_macros_take_a_plain_table_name(name: str) -> None:
    assert layout_target("ducklake_set_sorted_by", name) == name.strip()


@pytest.mark.parametrize(
    "text",
    ["", "shop.events; drop table shop.x", "shop events", "a.b.c.d", "`shop`.events", "1x"],
)
def test_layout_macros_refuse_text_that_is_more_than_a_name(text: str) -> None:
    with pytest.raises(DbtConfigError, match=r"ducklake_set_sorted_by: relation .* is not a table"):
        layout_target("ducklake_set_sorted_by", text)
