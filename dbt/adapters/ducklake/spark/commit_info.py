"""What every snapshot a statement writes carries: author, commit message, extra info.
A module of its own so the adapter holds one before any statement loads the engine."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CommitInfo:
    author: str | None = None
    message: str | None = None
    extra_info: Any = None
