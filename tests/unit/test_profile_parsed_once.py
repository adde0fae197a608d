"""The profile's `metadata` string is parsed once, when the profile is read; the lake a
connection opens takes that parsed location as it is."""

from __future__ import annotations

from pathlib import Path

import pytest

from dbt.adapters.ducklake import credentials as credentials_module
from dbt.adapters.ducklake import environment
from dbt.adapters.ducklake.credentials import DucklakeCredentials
from dbt.adapters.ducklake.environment import LakeHandle
from dbt.adapters.ducklake.lake import connect, store


def test_the_metadata_string_is_parsed_once_per_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed: list[str] = []
    real = connect.parse_metadata

    def counting(metadata: str) -> connect.MetadataLocation:
        parsed.append(metadata)
        return real(metadata)

    # every name the parser is reached by
    for module in (credentials_module, store, connect):
        monkeypatch.setattr(module, "parse_metadata", counting)
    # outside any dbt invocation: dbt's flags of an earlier in-process run (one with
    # `publish: atomic`) must not make this handle open a staging copy
    monkeypatch.setattr(environment, "dbt_command", lambda: None)
    metadata = f"sqlite:{tmp_path}/lake/metadata.sqlite"  # DuckLake's attach form
    credentials = DucklakeCredentials(
        database="ducklake", schema="main", metadata=metadata, data_path=str(tmp_path / "data")
    )
    handle = LakeHandle(credentials)  # creates the lake: no Spark needed for that
    try:
        assert parsed == [metadata]
        assert handle.lake.location == credentials.location()
        assert handle.lake.location.sqlite_path == str(tmp_path / "lake" / "metadata.sqlite")
        assert handle.lake.latest_snapshot().snapshot_id == 0
    finally:
        handle.close()
