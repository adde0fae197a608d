"""An opt-in for projects of many small models: the driver JVM compiles later than
HotSpot's defaults. With the defaults, a dbt process of 50 tiny models spent about half
of its JVM's CPU in the just-in-time compilers (C1 and C2), on code it runs a few hundred
times and then leaves, on cores that dbt's threads also need.
`DUCKLAKE_JIT=short-runs` starts the driver with `-XX:CompileThresholdScaling=10`: a
method is compiled after ten times the calls. Measured here (2 cores): that run's JVM
CPU 17-20 -> 13-15 s and its wall 18.1 -> 16.7 s; but per-batch code stays in the
first-tier compiler longer, and a 10M-row scan with deletes took 0.68 -> 0.76 s (Spark's
own read with row positions 0.68 -> 0.92 s). So it is not the default.

The user's own JIT options win: any compile-threshold or tiered-compilation flag in
`spark.driver.extraJavaOptions` or in the JVM's option variables leaves them alone.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from .class_archive import OPTIONS_KEY, user_sets

SHORT_RUN_JIT = "-XX:CompileThresholdScaling=10"
ENVIRONMENT_KEY = "DUCKLAKE_JIT"
SHORT_RUNS = "short-runs"
# flags by which a user (or a test lane) manages the compilers themselves
_JIT_FLAGS = ("CompileThreshold", "Tier", "-Xint", "-Xcomp", "UseCompiler")


def with_short_run_jit(settings: Mapping[str, str]) -> dict[str, str]:
    """`settings` with the driver JVM's compile thresholds raised when the environment
    asks for it (`DUCKLAKE_JIT=short-runs`) and the user manages no JIT option."""
    out = dict(settings)
    own = out.get(OPTIONS_KEY, "")
    if os.environ.get(ENVIRONMENT_KEY, "").lower() != SHORT_RUNS or user_sets(_JIT_FLAGS, own):
        return out
    out[OPTIONS_KEY] = f"{SHORT_RUN_JIT} {own}".strip()
    return out
