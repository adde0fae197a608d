"""Fresh venvs that tests build (another Python's install of the wheel, the executors'
`pyspark[sql]` venv): by the uv `./dev setup` puts in the test venv, from uv's cache when
it holds everything, else by pip. On a machine whose pip cache is cold, pip downloaded
and built pyspark's sdist for the executors' venv (56 s in CI) while uv's cache already
held the wheel the test venv was installed from (under 2 s)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _uv() -> Path | None:
    uv = Path(sys.executable).with_name("uv")
    return uv if uv.exists() else None


def create(path: Path, python: str = sys.executable) -> Path:
    """A new, empty venv at `path` (replacing one there) for `python`; its interpreter."""
    uv = _uv()
    if uv is None:
        subprocess.run([python, "-m", "venv", "--clear", str(path)], check=True)
    else:
        subprocess.run(
            [str(uv), "venv", "-q", "--clear", "--python", python, str(path)], check=True
        )
    return path / "bin" / "python"


def install(python: Path, *requirements: str) -> None:
    """`requirements` into the venv of `python`, compiling nothing ahead (Python compiles
    what it imports)."""
    uv = _uv()
    if uv is None:
        pip = [str(python), "-m", "pip", "install", "-q", "--no-compile", *requirements]
        subprocess.run(pip, check=True)
        return
    links = ["--find-links", os.environ["PIP_FIND_LINKS"]] if "PIP_FIND_LINKS" in os.environ else []
    command = [str(uv), "pip", "install", "-q", "--python", str(python), *links]
    env = {**os.environ, "UV_NATIVE_TLS": "1"}
    cached = subprocess.run([*command, "--offline", *requirements], env=env, capture_output=True)
    if cached.returncode != 0:  # something is not in uv's cache yet
        subprocess.run([*command, *requirements], env=env, check=True)
