"""A DuckLake catalog as users open it: the Store plus snapshot readers and transactions."""

from __future__ import annotations

import getpass
import os
from datetime import datetime
from typing import Any

from .changes_made import COMPACTION_KINDS, qualified_name
from .models import Snapshot
from .reader import CatalogReader
from .store import Store
from .transaction import Transaction

# changes that move a table's rows without changing them
_MOVES_ROWS = COMPACTION_KINDS | {"inline_flush", "flushed_inlined"}


class Lake(Store):
    """Open one with `Lake.open(metadata, data_path=...)`."""

    def catalog(self, at: int | datetime | None = None) -> CatalogReader:
        return CatalogReader(self, self.snapshot(at))

    def table_history(self, schema: str, name: str) -> list[Snapshot]:
        """Snapshots that changed the table or view `schema.name`, oldest first: under
        every id the name had (a replaced table gets a new id), and by name (creations,
        renames); the catalog filters them, so the cost follows the table's history."""
        ids = self.catalog().table_ids_ever(schema, name)
        return self.snapshots_touching(ids, [qualified_name(schema, name)])

    def last_change(self, schema: str, name: str) -> Snapshot | None:
        """The newest snapshot that changed the rows or definition of `schema.name`
        (`dbt source freshness` reads its time). Maintenance (compaction, flushing
        inlined rows) moves rows without changing them and does not count."""
        ids = self.catalog().table_ids_ever(schema, name)
        named = qualified_name(schema, name).lower()
        wanted = {str(i) for i in ids} | {named}
        for snapshot in reversed(self.snapshots_touching(ids, [named])):
            changes = snapshot.changes
            if any(c.value.lower() in wanted and c.kind not in _MOVES_ROWS for c in changes):
                return snapshot
        return None

    def transaction(
        self,
        *,
        author: str | None = None,
        commit_message: str | None = None,
        extra_info: Any = None,
    ) -> Transaction:
        return Transaction(
            self,
            author=author if author is not None else default_author(),
            commit_message=commit_message,
            extra_info=extra_info,
        )


def default_author() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no passwd entry in some containers
        return os.environ.get("USER", "unknown")
