"""Errors raised by the DuckLake metadata layer.

Every error names the object or option at fault so a dbt user can act on it without
reading a traceback.
"""

from __future__ import annotations


class LakeError(Exception):
    """Base class for every DuckLake metadata error."""


class MetadataConfigError(LakeError):
    """The metadata location or its options are unusable (bad scheme, unreachable DB)."""


class FormatVersionError(LakeError):
    """The catalog was written in a DuckLake format version this layer cannot read."""


class CatalogNotFoundError(LakeError):
    """A schema, table, view, column or snapshot does not exist at the snapshot read."""


class CatalogExistsError(LakeError):
    """A schema, table, view or column with that name already exists."""


class InvalidChangeError(LakeError):
    """A staged change is not allowed (bad type promotion, non-empty schema drop, ...)."""


class CommitMessageRequiredError(LakeError):
    """The lake sets `require_commit_message` and the commit carries none."""


class UnsupportedFeatureError(LakeError):
    """The lake uses a DuckLake feature this project cannot read or write yet (encrypted
    files): refused before anything is read wrong or written."""


class CatalogUnreachableError(LakeError):
    """The catalog database went away (restarted, stopped, connection cut) and did not
    come back in time; the message says whether anything was committed."""


class CommitConflictError(LakeError):
    """Another snapshot committed a logically conflicting change; nothing was committed."""

    def __init__(self, message: str, *, snapshot_id: int | None = None, change: str = ""):
        super().__init__(message)
        self.snapshot_id = snapshot_id
        self.change = change
