"""When a dbt process trusts a kept JVM's published gateway (`spark/resident.py`): only
while its keeper lives, whatever the gateway's port still answers (a JVM outlives its
killed keeper for seconds) and whatever the keeper's pid says (zombies, reuse)."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from dbt.adapters.ducklake.spark import resident

# a stand-in keeper: holds the `.alive` lock until killed
HOLDER = """
import fcntl, sys, time
f = open(sys.argv[1], "ab")
fcntl.flock(f, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(600)
"""


def test_the_gateway_is_trusted_only_while_its_keeper_holds_its_lock(tmp_path: Path) -> None:
    base = tmp_path / "key"
    listener = socket.create_server(("127.0.0.1", 0))  # the JVM's port, still answering
    port = listener.getsockname()[1]
    keeper = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(base.with_suffix(".alive"))],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert keeper.stdout is not None and keeper.stdout.readline().strip() == "held"
        base.with_suffix(".json").write_text(
            json.dumps({"port": port, "secret": "s", "pid": keeper.pid})
        )
        assert resident._read_state(base) == {"port": port, "secret": "s", "pid": keeper.pid}
        keeper.send_signal(signal.SIGKILL)
        keeper.wait()
        assert resident._read_state(base) is None, "a dead keeper's gateway is not used"
    finally:
        keeper.kill()
        listener.close()


def test_a_keeper_whose_port_is_closed_or_state_is_torn_is_not_used(tmp_path: Path) -> None:
    base = tmp_path / "key"
    assert resident._read_state(base) is None  # no state file
    base.with_suffix(".json").write_text('{"port": ')
    assert resident._read_state(base) is None
    closed = socket.create_server(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    with open(base.with_suffix(".alive"), "ab") as alive:
        fcntl.flock(alive, fcntl.LOCK_EX)  # as if a keeper lived, in another process
        base.with_suffix(".json").write_text(json.dumps({"port": port, "secret": "s", "pid": 1}))
        assert resident._read_state(base) is None


def test_a_zombie_or_missing_process_is_not_running() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 30
    while resident.running(child.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(child.pid, 0)  # the kernel still knows it (a zombie until waited for)
    assert not resident.running(child.pid)
    child.wait()
    assert not resident.running(child.pid) and resident.running(os.getpid())
