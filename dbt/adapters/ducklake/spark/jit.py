"""The driver JVM compiles later than HotSpot's defaults: a dbt command is a process of
seconds to minutes, and with the defaults its JVM spends about half of its CPU in the
just-in-time compilers (C1 and C2) on code that a short run leaves behind, on a machine
whose cores also run dbt's threads. `-XX:CompileThresholdScaling=10` asks for ten times
the invocations before a method is compiled. Code that does data work (per row, per
batch) still reaches the thresholds within milliseconds. Measured here (2 cores, 50
tiny models): the JVM's CPU 17-20 -> 13-15 s per run, the run 18.1 -> 16.7 s; a
10M-row write and scan and the small changes are no slower.

The user's own JIT options win: any compile-threshold or tiered-compilation flag in
`spark.driver.extraJavaOptions` or in the JVM's option variables leaves the defaults
alone, as does `DUCKLAKE_JIT=default`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from .class_archive import JVM_OPTION_VARIABLES, OPTIONS_KEY

SHORT_RUN_JIT = "-XX:CompileThresholdScaling=10"
# flags by which a user (or a test lane) manages the compilers themselves
_JIT_FLAGS = ("CompileThreshold", "Tier", "-Xint", "-Xcomp", "UseCompiler")


def with_short_run_jit(settings: Mapping[str, str]) -> dict[str, str]:
    """`settings` with the driver JVM's compile thresholds raised, unless the user
    manages them."""
    out = dict(settings)
    own = out.get(OPTIONS_KEY, "")
    if (
        os.environ.get("DUCKLAKE_JIT", "").lower() == "default"
        or _manages_jit(own)
        or any(_manages_jit(os.environ.get(name, "")) for name in JVM_OPTION_VARIABLES)
    ):
        return out
    out[OPTIONS_KEY] = f"{SHORT_RUN_JIT} {own}".strip()
    return out


def _manages_jit(options: str) -> bool:
    return any(flag in options for flag in _JIT_FLAGS)
