"""Checks a node passes before its first statement runs, so a bad name or config fails
with the model, the option and what is accepted, and the lake is left as it was."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from dbt_common.exceptions import DbtConfigError

from .lake import ACCEPTED_NAMES, name_problem

_PLAIN_IDENTIFIER = re.compile(r"^\w+$")


def check_node_names(unique_id: str, names: Iterable[tuple[str, str | None, bool]]) -> None:
    """`names`: (option, value, whether dbt quotes it). Names become folders and
    appear unquoted in SQL unless the project quotes them."""
    for option, name, quoted in names:
        if name is None:
            continue
        problem = name_problem(name)
        if problem is not None:
            raise DbtConfigError(
                f"{unique_id}: {option} {_shown(name)} is not accepted ({problem}); "
                f"accepted: {ACCEPTED_NAMES}"
            )
        if not quoted and not _PLAIN_IDENTIFIER.match(name):
            raise DbtConfigError(
                f"{unique_id}: {option} {_shown(name)} needs quoting: use letters, digits "
                "and _ only, or set `quoting: {identifier: true, schema: true}` in "
                "dbt_project.yml"
            )


def check_key_columns(
    unique_id: str, option: str, keys: Iterable[str], sides: Mapping[str, Iterable[str]]
) -> None:
    """Every key is a column on every side (`sides`: side name -> its column names);
    case-insensitive, as the lake resolves names."""
    for side, columns in sides.items():
        names = list(columns)
        known = {c.lower() for c in names}
        missing = [k for k in keys if k.strip().strip("`").lower() not in known]
        if missing:
            raise DbtConfigError(
                f"{unique_id}: config {option} names {', '.join(missing)}, not a column of "
                f"{side}; its columns: {', '.join(names)}"
            )


def _shown(name: str) -> str:
    return repr(name if len(name) <= 60 else name[:60] + "…")


def node_field(node: Any, name: str) -> Any:
    """A field of a dbt node, which macros hand over as a dict and Python as an object."""
    return node.get(name) if isinstance(node, dict) else getattr(node, name, None)
