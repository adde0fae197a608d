"""`publish: atomic` (write-audit-publish): a `dbt build` publishes every node's
changes in one DuckLake snapshot, and only when every node, test and hook passed.

The first connection of a staged invocation copies the catalog (lake/staging_copy.py); every
node commits into that copy, so `ref()` and tests read what the build made while readers
of the real catalog see nothing. dbt's events tell us each node's outcome; when dbt
cleans up its connections at the end of the invocation, the copy's plans are published
as one snapshot (lake/publish.py), or dropped with the files they wrote.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.events.logging import AdapterLogger
from dbt_common.events.event_manager_client import get_event_manager
from dbt_common.exceptions import DbtConfigError, DbtRuntimeError
from dbt_common.invocation import get_invocation_id

from .change_windows import published_positions
from .lake import (
    Lake,
    LakeError,
    drop_stage,
    open_stage,
    publish,
    remove_staged_files,
    staged_plans,
)

logger = AdapterLogger("DuckLake")

PUBLISH_MODES = ("per_node", "atomic")
VAR = "ducklake_publish"
# the commands that build nodes and run on-run-end cleanup; others write per node
STAGED_COMMANDS = ("build", "run", "seed", "snapshot")
_FAILED = {"error", "fail", "runtime error", "skipped", "partial success"}


def check_mode(value: Any, source: str) -> str:
    if value not in PUBLISH_MODES:
        raise DbtConfigError(
            f"ducklake: {source} {value!r} is not a publish mode; accepted: "
            f"{', '.join(PUBLISH_MODES)}"
        )
    return str(value)


def publish_mode(profile_value: str) -> str:
    """The profile's `publish`, unless `--vars '{ducklake_publish: …}'` overrides it."""
    from dbt.flags import get_flags

    cli_vars = getattr(get_flags(), "VARS", None) or {}
    if VAR in cli_vars:
        return check_mode(cli_vars[VAR], f"--vars {VAR}")
    return profile_value


@dataclass
class Outcomes:
    """What dbt's events said about an invocation's nodes and hooks."""

    started: dict[str, str] = field(default_factory=dict)  # unique id -> materialization
    finished: dict[str, str] = field(default_factory=dict)  # unique id -> status
    failed_hooks: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def observe(self, msg: Any) -> None:
        """An event callback: node starts and results, hook results."""
        name = msg.info.name
        if name not in ("NodeStart", "NodeFinished", "LogHookEndLine"):
            return
        with self.lock:
            if name == "LogHookEndLine":
                if str(msg.data.status).lower() not in ("success", "ok", "pass"):
                    self.failed_hooks.append(msg.data.statement)
                return
            info = msg.data.node_info
            if name == "NodeStart":
                self.started[info.unique_id] = info.materialized or info.resource_type
            else:
                self.finished[info.unique_id] = str(msg.data.run_result.status).lower()

    def failures(self) -> list[str]:
        """Nodes (and hooks) that failed, errored, were skipped or never finished."""
        with self.lock:
            bad = [uid for uid, status in self.finished.items() if status in _FAILED]
            bad += [uid for uid in self.started if uid not in self.finished]
            return bad + self.failed_hooks

    def nodes(self) -> list[dict[str, str]]:
        with self.lock:
            return [
                {"unique_id": uid, "materialized": self.started.get(uid, "")}
                for uid in sorted(self.finished)
            ]


@dataclass
class Build:
    """One staged invocation: the real catalog, its copy, and what dbt reported."""

    real: Lake
    stage: Lake
    command: str
    outcomes: Outcomes = field(default_factory=Outcomes)


_BUILDS: dict[str, Build] = {}
_BUILDS_LOCK = threading.Lock()


def staged_lake(mode: str, command: str | None, open_real: Callable[[], Lake]) -> Lake | None:
    """The invocation's staging copy when it publishes atomically (created by its first
    connection), else None: the connection then writes to the real catalog."""
    if mode != "atomic" or command not in STAGED_COMMANDS:
        return None
    invocation = get_invocation_id()
    with _BUILDS_LOCK:
        build = _BUILDS.get(invocation)
        if build is None:
            real = open_real()
            build = Build(real, open_stage(real, invocation), command or "build")
            get_event_manager().add_callback(build.outcomes.observe)
            _BUILDS[invocation] = build
            logger.info(
                f"publish: atomic — nodes build into a staging copy of the catalog "
                f"(snapshot {build.stage.staged_from}); nothing is visible until all pass"
            )
        return build.stage


def finish(
    author: str | None,
    target: str | None,
    extra_info: Callable[..., str],
    mask: Callable[[str], str],
) -> None:
    """End of a staged invocation: publish in one snapshot, or discard everything."""
    with _BUILDS_LOCK:
        build = _BUILDS.pop(get_invocation_id(), None)
    if build is None:
        return
    with contextlib.suppress(ValueError):  # dbt may have reset its callbacks already
        get_event_manager().callbacks.remove(build.outcomes.observe)
    try:
        _publish_or_discard(build, author, target, extra_info, mask)
    finally:
        drop_stage(build.stage)
        build.real.close()


def _publish_or_discard(
    build: Build,
    author: str | None,
    target: str | None,
    extra_info: Callable[..., str],
    mask: Callable[[str], str],
) -> None:
    interrupted = sys.exc_info()[1]  # cleanup runs in dbt's `finally`
    failed = build.outcomes.failures()
    if interrupted is not None or failed:
        why = f"{len(failed)} failed" if failed else f"interrupted ({type(interrupted).__name__})"
        _discard(build, f"nothing published: {why}" + _listed(failed))
        return
    invocation = get_invocation_id()
    plans = staged_plans(build.stage)
    try:
        snapshot = publish(
            build.real,
            build.stage,
            plans,
            author=author,
            message=f"dbt {build.command} {invocation}",
            extra_info=lambda published: extra_info(
                target,
                command=build.command,
                publish="atomic",
                nodes=build.outcomes.nodes(),
                **published_positions(build.stage, plans, published),
            ),
        )
    except Exception as exc:  # a conflict, or the catalog failing: rolled back either way
        text = mask(str(exc) if isinstance(exc, LakeError) else f"{type(exc).__name__}: {exc}")
        _discard(build, f"nothing published: {text}")
        raise DbtRuntimeError(f"publish: atomic: nothing published: {text}") from None
    if snapshot is None:
        logger.info("publish: atomic — the build changed nothing; no snapshot")
        return
    logger.info(
        f"published snapshot {snapshot.snapshot_id}: {len(plans)} staged commit(s) of "
        f"{len(build.outcomes.finished)} node(s) in one snapshot"
    )


def _discard(build: Build, message: str) -> None:
    removed, left = remove_staged_files(build.stage)
    tail = f"; removed the {removed} file(s) the build wrote"
    if left:
        tail += (
            f"; {len(left)} could not be removed and are left for ducklake_delete_orphaned_files"
        )
    logger.info(message + tail)


def _listed(failed: list[str]) -> str:
    shown = ", ".join(failed[:5]) + (", …" if len(failed) > 5 else "")
    return f" ({shown})" if failed else ""
