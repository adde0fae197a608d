"""BEGIN … COMMIT on the lake: the statements of a block stage into one transaction and
commit as one snapshot. A BEGIN inside a block joins it (one snapshot at the outer
COMMIT); ROLLBACK, or an error in any statement, discards the whole block."""

from __future__ import annotations

import re

from ..lake import Lake, Snapshot, Transaction
from .engine import CommitInfo, begin

_BEGIN = re.compile(r"^\s*(BEGIN|START\s+TRANSACTION)(\s+(TRANSACTION|WORK))?\s*$", re.I)
_COMMIT = re.compile(r"^\s*(COMMIT|END)(\s+(TRANSACTION|WORK))?\s*$", re.I)
_ROLLBACK = re.compile(r"^\s*(ROLLBACK|ABORT)(\s+(TRANSACTION|WORK))?\s*$", re.I)


class TransactionBlock:
    """The open block of one SQL session (`tx` is None outside a block)."""

    def __init__(self, lake: Lake):
        self.lake = lake
        self.tx: Transaction | None = None
        self.depth = 0  # nesting of BEGIN … COMMIT inside the open block

    def is_control(self, statement: str) -> bool:
        return any(p.match(statement) for p in (_BEGIN, _COMMIT, _ROLLBACK))

    def control(self, statement: str, commit: CommitInfo) -> Snapshot | None:
        """Run BEGIN, COMMIT or ROLLBACK (`is_control`); COMMIT of the outer block
        returns its snapshot, described by the `commit` info current at BEGIN."""
        if _BEGIN.match(statement):
            if self.tx is None:
                self.tx, self.depth = begin(self.lake, commit), 0
            self.depth += 1
            return None
        if _COMMIT.match(statement):
            self.depth -= 1
            if self.tx is None or self.depth > 0:
                self.depth = max(self.depth, 0)
                return None
            tx, self.tx = self.tx, None
            return tx.commit()
        self.discard()
        return None

    def discard(self) -> None:
        """Nothing of the block was written: its staged changes are dropped."""
        self.tx, self.depth = None, 0
