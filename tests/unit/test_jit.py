"""The driver JVM's raised compile thresholds: only when asked for, added to the user's
options, spelled as the machine's Java knows them, and out of the way when the user (or
a test lane) manages the compilers."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from dbt.adapters.ducklake.spark.class_archive import JVM_OPTION_VARIABLES, OPTIONS_KEY
from dbt.adapters.ducklake.spark.jit import SHORT_RUN_JIT, with_short_run_jit


@pytest.fixture(autouse=True)
def _asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in JVM_OPTION_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DUCKLAKE_JIT", "short-runs")


def test_hotspots_defaults_unless_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    for value in (None, "", "default", "short"):
        if value is None:
            monkeypatch.delenv("DUCKLAKE_JIT")
        else:
            monkeypatch.setenv("DUCKLAKE_JIT", value)
        assert with_short_run_jit({OPTIONS_KEY: "-Xmx2g"}) == {OPTIONS_KEY: "-Xmx2g"}, value


def test_added_before_the_users_other_options() -> None:
    assert with_short_run_jit({})[OPTIONS_KEY] == SHORT_RUN_JIT
    out = with_short_run_jit({OPTIONS_KEY: "-Xmx2g", "spark.master": "local[2]"})
    assert out == {OPTIONS_KEY: f"{SHORT_RUN_JIT} -Xmx2g", "spark.master": "local[2]"}


@pytest.mark.parametrize(
    "own", ["-XX:TieredStopAtLevel=1", "-XX:CompileThresholdScaling=1", "-Xint", "-Xcomp"]
)
def test_a_users_own_compiler_options_are_left_alone(own: str) -> None:
    assert with_short_run_jit({OPTIONS_KEY: own}) == {OPTIONS_KEY: own}


def test_compiler_options_in_the_jvms_environment_are_left_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
    assert with_short_run_jit({}) == {}


def test_the_machines_java_knows_the_flag() -> None:
    """Spark starts its JVM with -XX:+IgnoreUnrecognizedVMOptions, so a misspelt flag
    would be dropped without a word: the Java on PATH (or JAVA_HOME's) must list it."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    assert java, "no java on this machine"
    flags = subprocess.run(
        [java, *SHORT_RUN_JIT.split(), "-XX:+PrintFlagsFinal", "-version"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (line,) = [x for x in flags.splitlines() if " CompileThresholdScaling " in x]
    assert float(line.split("=")[1].split()[0]) == 10.0, line
