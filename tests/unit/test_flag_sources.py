"""Behavior flags name the same source with the adapter's frame walk as with
dbt_common's `inspect.stack()`, and dbt_common's method is back afterwards."""

from __future__ import annotations

from dbt_common.behavior_flags import Behavior, BehaviorFlagRendered

from dbt.adapters.ducklake.flag_sources import cheap_flag_sources

FLAGS = [
    {"name": "some_flag", "default": False, "description": "d"},
    {"name": "named_flag", "default": True, "source": "dbt-example", "docs_url": "u"},
]


def _sources() -> list[str]:
    behavior = Behavior([dict(f) for f in FLAGS], {})  # type: ignore[misc]
    return [getattr(behavior, f["name"])._behavior_change_event.flag_source for f in FLAGS]


def test_flag_sources_match_dbt_commons_own() -> None:
    own = BehaviorFlagRendered.__dict__["_default_source"]
    expected = _sources()
    with cheap_flag_sources():
        assert BehaviorFlagRendered.__dict__["_default_source"] is not own
        assert _sources() == expected
    assert BehaviorFlagRendered.__dict__["_default_source"] is own
    assert expected == [__name__, "dbt-example"]
