"""The one way to the files under a data path, local or in S3: `FileIO`.

Everything the driver and the Spark tasks do with data files (footers, sizes, delete
files, renames, cleanup, orphan listing) goes through here, on `pyarrow.fs`: pyarrow is
part of `pyspark[sql]`, so executors that have only that can run it too, and its
S3FileSystem takes an endpoint, region, path-style addressing and keys without another
dependency. Paths are what the catalog names: absolute local paths or `s3://bucket/key`.

Imports only pyarrow: Spark tasks carry a `FileIO` (it pickles as its settings) and
build their filesystem on first use.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from types import ModuleType
from typing import TYPE_CHECKING, Any


class _OnFirstUse:
    """A module imported when one of its names is first asked for: opening a lake to
    read its catalog (a metadata-only dbt command) needs no pyarrow."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        module: ModuleType = importlib.import_module(self._name)
        return getattr(module, attr)


if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq
else:
    pafs = _OnFirstUse("pyarrow.fs")
    pq = _OnFirstUse("pyarrow.parquet")

S3_SCHEMES = ("s3://", "s3a://")
URL_STYLES = ("path", "vhost")


def is_url(path: str) -> bool:
    return "://" in path


def normalize_path(path: str) -> str:
    """A local path without `..` or doubled separators; URLs are left as written."""
    return path if is_url(path) else os.path.normpath(path)


@dataclass(frozen=True)
class S3Settings:
    """How to reach S3 (or an S3-compatible server). Unset fields fall back to the
    AWS SDK's own defaults (its credential chain, `us-east-1`, AWS's endpoints)."""

    endpoint: str | None = None  # http://host:port or https://host; bare host = https
    region: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = field(default=None, repr=False)
    url_style: str | None = None  # path | vhost; default path with an endpoint, else vhost

    @classmethod
    def resolve(
        cls, fields: Mapping[str, str | None], environ: Mapping[str, str] | None = None
    ) -> S3Settings:
        """Profile fields first, then the standard AWS environment variables."""
        env = os.environ if environ is None else environ
        return cls(
            endpoint=fields.get("endpoint") or env.get("AWS_ENDPOINT_URL") or None,
            region=fields.get("region")
            or env.get("AWS_REGION")
            or env.get("AWS_DEFAULT_REGION")
            or None,
            access_key_id=fields.get("access_key_id") or env.get("AWS_ACCESS_KEY_ID") or None,
            secret_access_key=fields.get("secret_access_key")
            or env.get("AWS_SECRET_ACCESS_KEY")
            or None,
            url_style=fields.get("url_style") or None,
        )

    def problems(self) -> list[str]:
        """What is wrong with these settings, in the profile's field names."""
        found = []
        if self.url_style is not None and self.url_style not in URL_STYLES:
            found.append(f"s3_url_style {self.url_style!r}: accepted values are path, vhost")
        if bool(self.access_key_id) != bool(self.secret_access_key):
            found.append(
                "s3_access_key_id and s3_secret_access_key go together (or neither, for "
                "the AWS SDK's own credential chain)"
            )
        return found

    @property
    def use_ssl(self) -> bool:
        return not (self.endpoint or "").lower().startswith("http://")

    @property
    def host(self) -> str | None:
        """The endpoint without its scheme (`host:port`)."""
        if not self.endpoint:
            return None
        return self.endpoint.split("://", 1)[-1].rstrip("/")

    @property
    def path_style(self) -> bool:
        return (self.url_style or ("path" if self.endpoint else "vhost")) == "path"

    def filesystem(self) -> pafs.S3FileSystem:
        # no region: the AWS SDK's own lookup (environment, config file, us-east-1)
        options: dict[str, Any] = {"force_virtual_addressing": not self.path_style}
        if self.region:
            options["region"] = self.region
        if self.host:
            options["endpoint_override"] = self.host
            options["scheme"] = "https" if self.use_ssl else "http"
        if self.access_key_id:
            options["access_key"] = self.access_key_id
            options["secret_key"] = self.secret_access_key
        return pafs.S3FileSystem(**options)


# one filesystem per settings and process (tasks build theirs on first use)
_FILESYSTEMS: dict[S3Settings, pafs.FileSystem] = {}


@functools.cache
def _local() -> pafs.LocalFileSystem:
    return pafs.LocalFileSystem()


@dataclass(frozen=True)
class FileEntry:
    path: str  # as the catalog names it (s3://… for S3)
    is_dir: bool
    modified: datetime | None  # None for S3 "directories" (key prefixes)


@dataclass(frozen=True)
class FileIO:
    """File operations on local paths and `s3://` URLs; picklable, so tasks carry it."""

    s3: S3Settings = field(default_factory=S3Settings)

    def _resolve(self, path: str) -> tuple[pafs.FileSystem, str]:
        for scheme in S3_SCHEMES:
            if path.startswith(scheme):
                fs = _FILESYSTEMS.get(self.s3)
                if fs is None:
                    fs = _FILESYSTEMS.setdefault(self.s3, self.s3.filesystem())
                return fs, path[len(scheme) :]
        if is_url(path):
            raise ValueError(f"{path!r}: data paths are local paths or s3:// URLs")
        return _local(), os.path.abspath(path)

    def size(self, path: str) -> int:
        fs, inner = self._resolve(path)
        info = fs.get_file_info(inner)
        if info.type != pafs.FileType.File:
            raise FileNotFoundError(path)
        return int(info.size)

    def exists(self, path: str) -> bool:
        fs, inner = self._resolve(path)
        return bool(fs.get_file_info(inner).type != pafs.FileType.NotFound)

    def modified(self, path: str) -> datetime | None:
        fs, inner = self._resolve(path)
        return _mtime(fs.get_file_info(inner))

    def delete(self, path: str) -> None:
        """Remove a file; one already gone counts as removed."""
        fs, inner = self._resolve(path)
        with contextlib.suppress(FileNotFoundError):
            fs.delete_file(inner)

    def delete_dir(self, path: str) -> None:
        """Remove a directory and everything in it; a missing one counts as removed."""
        fs, inner = self._resolve(path)
        with contextlib.suppress(FileNotFoundError):
            fs.delete_dir(inner.rstrip("/"))

    def rename(self, source: str, target: str) -> None:
        """Move a file (a copy and a delete on S3)."""
        fs, inner = self._resolve(source)
        fs.move(inner, self._for_writing(target)[1])

    def makedirs(self, path: str) -> None:
        """Create a directory (S3 has none to create)."""
        fs, inner = self._resolve(path)
        if fs is _local():
            fs.create_dir(inner, recursive=True)

    def list_names(self, directory: str) -> list[str]:
        """Names of the files directly inside `directory`."""
        fs, inner = self._resolve(directory)
        selector = pafs.FileSelector(inner.rstrip("/"), allow_not_found=True)
        return [
            info.base_name for info in fs.get_file_info(selector) if info.type == pafs.FileType.File
        ]

    def walk(self, root: str) -> Iterator[FileEntry]:
        """Every file and directory under `root`, in one listing (S3: one paged LIST)."""
        fs, inner = self._resolve(root)
        selector = pafs.FileSelector(inner.rstrip("/"), recursive=True, allow_not_found=True)
        prefix = root.split("://", 1)[0] + "://" if is_url(root) else ""
        for info in fs.get_file_info(selector):
            yield FileEntry(prefix + info.path, info.type == pafs.FileType.Directory, _mtime(info))

    def read_metadata(self, path: str) -> pq.FileMetaData:
        fs, inner = self._resolve(path)
        return pq.read_metadata(inner, filesystem=fs)

    def read_bytes(self, path: str) -> bytes:
        fs, inner = self._resolve(path)
        with fs.open_input_stream(inner) as stream:
            return bytes(stream.read())

    def parquet_file(self, path: str) -> pq.ParquetFile:
        """The file opened for reading only the columns and row groups asked for."""
        fs, inner = self._resolve(path)
        return pq.ParquetFile(fs.open_input_file(inner))

    def read_table(self, path: str, columns: list[str] | None = None) -> pa.Table:
        fs, inner = self._resolve(path)
        return pq.read_table(inner, columns=columns, filesystem=fs)

    def write_bytes(self, data: bytes, path: str) -> None:
        fs, inner = self._for_writing(path)
        with fs.open_output_stream(inner) as stream:
            stream.write(data)

    def write_table(self, table: pa.Table, path: str, **options: Any) -> None:
        fs, inner = self._for_writing(path)
        pq.write_table(table, inner, filesystem=fs, **options)

    def parquet_writer(self, path: str, schema: pa.Schema, **options: Any) -> pq.ParquetWriter:
        fs, inner = self._for_writing(path)
        return pq.ParquetWriter(inner, schema, filesystem=fs, **options)

    def _for_writing(self, path: str) -> tuple[pafs.FileSystem, str]:
        """The file's filesystem, its local parent directory created."""
        fs, inner = self._resolve(path)
        if fs is _local():
            fs.create_dir(os.path.dirname(inner), recursive=True)
        return fs, inner


def _mtime(info: pafs.FileInfo) -> datetime | None:
    if info.type == pafs.FileType.NotFound:
        raise FileNotFoundError(info.path)
    mtime = info.mtime
    if mtime is None:
        return None
    return mtime if mtime.tzinfo is not None else mtime.replace(tzinfo=timezone.utc)
