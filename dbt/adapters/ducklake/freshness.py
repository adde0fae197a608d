"""`dbt source freshness` for lake tables without a `loaded_at_field`: the time of the
last snapshot that changed the table, read from the catalog (no scan, no JVM)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from dbt.adapters.base import BaseRelation
from dbt.adapters.base.impl import FreshnessResponse
from dbt.adapters.capability import Capability, CapabilityDict, CapabilitySupport, Support
from dbt.adapters.contracts.connection import AdapterResponse
from dbt_common.exceptions import DbtRuntimeError

if TYPE_CHECKING:
    from .environment import LakeHandle

# what the adapter declares, so dbt asks it instead of requiring a loaded_at_field
FRESHNESS_FROM_METADATA = CapabilityDict(
    {
        Capability.TableLastModifiedMetadata: CapabilitySupport(support=Support.Full),
        Capability.TableLastModifiedMetadataBatch: CapabilitySupport(support=Support.Full),
    }
)


class MetadataFreshness:
    """Mixed into the adapter, ahead of dbt's SQL adapter: answers dbt's metadata
    freshness (the TableLastModifiedMetadata capability) from the catalog."""

    if TYPE_CHECKING:  # the adapter's own, which this class must not shadow

        def _handle(self) -> LakeHandle: ...

        def _create_freshness_response(
            self, last_modified: datetime | None, snapshotted_at: datetime | None
        ) -> FreshnessResponse: ...

    def calculate_freshness_from_metadata_batch(
        self, sources: list[BaseRelation], macro_resolver: Any = None
    ) -> tuple[list[AdapterResponse | None], dict[BaseRelation, FreshnessResponse]]:
        lake = self._handle().lake
        now = datetime.now(timezone.utc)
        found: dict[BaseRelation, FreshnessResponse] = {}
        with lake.reading():  # one catalog connection for every source
            for source in sources:
                schema, name = source.schema or "", source.identifier or ""
                if lake.catalog().find_table(schema, name) is None:
                    raise DbtRuntimeError(
                        f"source {source}: no lake table {schema}.{name}, so it has no last "
                        "change to report; set a loaded_at_field, or point the source at a "
                        "table"
                    )
                last = lake.last_change(schema, name)
                found[source] = self._create_freshness_response(
                    last.snapshot_time if last is not None else None, now
                )
        return [AdapterResponse(_message="OK (from the catalog)")], found
