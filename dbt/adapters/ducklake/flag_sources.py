"""The source dbt_common names for each behavior flag, found without `inspect.stack()`.

dbt_common's `BehaviorFlagRendered` names a flag's source by calling `inspect.stack()`,
which reads the source lines of every frame on the stack, once per flag, even for flags
that name their source. Measured: 80 ms per flag in `dbt run-operation` (two flags),
more under deeper stacks (6% of the Python time of the functional tests). The name it
finds is the module of the first frame outside dbt_common's module; frames' globals
give the same name for the cost of a few attribute reads.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from dbt_common import behavior_flags


def _calling_module() -> str:
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_globals.get("__name__")
        if name and name != behavior_flags.__name__:
            return str(name)
        frame = frame.f_back  # type: ignore[assignment]
    return "Unknown"


@contextmanager
def cheap_flag_sources() -> Iterator[None]:
    """Within the block, flags name their source from frames' globals (dbt_common's
    own method is put back after it; left alone if dbt_common no longer has it)."""
    rendered = behavior_flags.BehaviorFlagRendered
    own = rendered.__dict__.get("_default_source")
    if not isinstance(own, staticmethod):
        yield
        return
    rendered._default_source = staticmethod(_calling_module)  # type: ignore[method-assign]
    try:
        yield
    finally:
        rendered._default_source = own  # type: ignore[method-assign]
