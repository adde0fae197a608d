"""Profile fields of `type: ducklake` (the public contract, README: Profile), checked up
front so a typo fails `dbt debug` with the field's name instead of a Spark stack trace."""

from __future__ import annotations

import difflib
import getpass
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from dbt.adapters.contracts.connection import Credentials
from dbt.adapters.events.logging import AdapterLogger
from dbt_common.exceptions import DbtConfigError

from .atomic import check_mode
from .lake import FileIO, LakeError, MetadataLocation, S3Settings, Secrets, parse_metadata
from .spark.session_config import SessionConfig, default_keep_alive
from .storage import s3_jars, uses_s3, with_s3_jars

logger = AdapterLogger("DuckLake")


@dataclass
class DucklakeCredentials(Credentials):
    database: str = "ducklake"  # the lake's name; relations render as schema.table
    schema: str = ""
    metadata: str = ""
    data_path: str | None = None
    # a data_path other than the lake's stored one: refused unless this is set (DuckDB's
    # OVERRIDE_DATA_PATH, for a lake whose files were moved)
    override_data_path: bool = False
    metadata_schema: str | None = None
    spark_master: str | None = None
    spark_remote: str | None = None
    spark_conf: dict[str, Any] = field(default_factory=dict)
    author: str | None = None
    # object storage (data_path: s3://bucket/prefix); unset fields fall back to the
    # standard AWS environment variables, then to the AWS SDK's defaults
    s3_endpoint: str | None = None
    s3_region: str | None = None
    s3_access_key_id: str | None = None
    s3_secret_access_key: str | None = None
    s3_url_style: str | None = None  # path | vhost
    # per_node: each node's build is its own snapshot; atomic: a build publishes all its
    # nodes in one snapshot, only when everything passed (atomic.py)
    publish: str = "per_node"
    # a new lake is created encrypted (DuckDB's ENCRYPTED); an existing one must be
    encrypted: bool = False
    # delete files as deletion vectors where the lake sets no write_deletion_vectors
    write_deletion_vectors: bool | None = None
    # commands that run nodes start Spark (and, local, warm it) while dbt parses
    spark_prestart: bool = True
    # seconds a local driver JVM stays up for the next dbt command; 0: one JVM per
    # command; unset: DEFAULT_KEEP_ALIVE_S where a kept JVM can serve, else 0
    spark_keep_alive: int | None = None

    _ALIASES = {"catalog": "metadata", "lake": "database"}

    @property
    def type(self) -> str:
        return "ducklake"

    @property
    def unique_field(self) -> str:
        return self.metadata

    def _connection_keys(self) -> tuple[str, ...]:
        return (
            "metadata",
            "data_path",
            "override_data_path",
            "metadata_schema",
            "database",
            "schema",
            "spark_master",
            "spark_remote",
            "author",
            "s3_endpoint",
            "s3_region",
            "s3_url_style",
            "publish",
            "encrypted",
            "write_deletion_vectors",
            "spark_prestart",
            "spark_keep_alive",
        )

    @classmethod
    def validate(cls, data: Any) -> None:
        # dbt drops fields it does not know: a typo (`spark_mastr`) would run with the
        # default without a word
        if isinstance(data, Mapping):
            for warning in unknown_fields(data):
                logger.warning(warning)
        super().validate(data)

    def connection_info(self, *, with_aliases: bool = False) -> Iterable[tuple[str, Any]]:
        # `dbt debug` prints these; a password in `metadata` must not reach the screen
        secrets = self.secrets()
        for key, value in super().connection_info(with_aliases=with_aliases):
            if key == "spark_keep_alive" and value is None:
                value = f"{self._keep_alive(self.data_path)} (default)"
            yield key, secrets.mask(value) if isinstance(value, str) else value

    def secrets(self) -> Secrets:
        """The profile's passwords and secret Spark settings, for masking messages."""
        return Secrets.of(self.metadata, self.spark_conf, [self.s3_settings().secret_access_key])

    def s3_settings(self) -> S3Settings:
        """The profile's S3 fields over AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
        AWS_REGION / AWS_DEFAULT_REGION and AWS_ENDPOINT_URL."""
        return S3Settings.resolve(
            {
                "endpoint": self.s3_endpoint,
                "region": self.s3_region,
                "access_key_id": self.s3_access_key_id,
                "secret_access_key": self.s3_secret_access_key,
                "url_style": self.s3_url_style,
            }
        )

    def location(self) -> MetadataLocation:
        """`metadata` parsed once, when the profile is read: the value the lake opens
        with (an unreadable one fails `dbt debug` naming the field)."""
        parsed = self.__dict__.get("_parsed_metadata")
        if parsed is None or parsed[0] != self.metadata:
            try:
                parsed = (self.metadata, parse_metadata(self.metadata))
            except LakeError as exc:
                raise DbtConfigError(f"ducklake profile: metadata: {exc}") from exc
            self.__dict__["_parsed_metadata"] = parsed  # not a profile field
        return parsed[1]

    def file_io(self) -> FileIO:
        """How the driver and the Spark tasks reach the data path's files."""
        return FileIO(self.s3_settings())

    def __post_init__(self) -> None:
        if not self.schema:
            raise DbtConfigError("ducklake profile: `schema` (the default schema) is required")
        if not self.metadata:
            raise DbtConfigError(
                "ducklake profile: `metadata` is required — a SQLAlchemy URL "
                "(sqlite:///lake.sqlite, postgresql+psycopg://user@host/db), DuckLake's "
                "attach form (sqlite:lake.sqlite, postgres:dbname=x host=y) or a file path"
            )
        self.location()
        if not isinstance(self.spark_conf, dict):
            raise DbtConfigError("ducklake profile: spark_conf must be a map of Spark settings")
        try:
            self.session_config().validate()
        except LakeError as exc:
            raise DbtConfigError(f"ducklake profile: {exc}") from exc
        if self.data_path:
            self.require_shared(self.data_path, "data_path")
        for problem in self.s3_settings().problems():
            raise DbtConfigError(f"ducklake profile: {problem}")
        check_mode(self.publish, "profile field publish")
        if self.author is None:
            self.author = _os_user()

    def require_shared(self, data_path: str, source: str) -> None:
        """Executors of a cluster or a Connect server resolve a relative path against
        their own working directory, so they would write files the catalog never finds."""
        if self.session_config().local or "://" in data_path:
            return
        if not os.path.isabs(os.path.expanduser(data_path)):
            where = (
                f"spark_remote {self.spark_remote}"
                if self.spark_remote
                else (f"spark_master {self.spark_master}")
            )
            raise DbtConfigError(
                f"ducklake profile: {source} {data_path!r} is a relative path, but {where} "
                "runs executors elsewhere: they must reach the same files, so give an "
                "absolute path on storage every executor mounts, or an object store URL"
            )

    def session_config(self, data_path: str | None = None) -> SessionConfig:
        """The Spark session; with a data path on S3, S3A's jars from the jar cache
        (their settings, secrets included, are set on the running session)."""
        master = self._master()
        conf = {k: str(v) for k, v in self.spark_conf.items()}
        s3_data = self._s3_data(data_path or self.data_path)
        keep_alive = self._keep_alive(data_path or self.data_path)
        if s3_data:
            if keep_alive:
                # S3A's settings live in the JVM's Hadoop configuration, which a kept
                # JVM would share between profiles
                raise DbtConfigError(
                    "ducklake profile: spark_keep_alive works with data paths on local or "
                    "mounted storage; remove it for the S3 data path "
                    f"{data_path or self.data_path}"
                )
            conf = with_s3_jars(conf, s3_jars())
        return SessionConfig(
            master=master, remote=self.spark_remote, conf=conf, keep_alive_s=keep_alive
        )

    def _master(self) -> str | None:
        return self.spark_master if self.spark_master or self.spark_remote else "local[*]"

    def _s3_data(self, data_path: str | None) -> bool:
        return uses_s3(data_path) and not self.spark_remote

    def _keep_alive(self, data_path: str | None) -> int:
        """The profile's `spark_keep_alive`, or the default for its master and data path."""
        if self.spark_keep_alive is not None:
            return self.spark_keep_alive
        return default_keep_alive(self._master(), self.spark_remote, self._s3_data(data_path))


def _os_user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no user database entry (containers)
        return "dbt"


def unknown_fields(profile: Mapping[str, Any]) -> list[str]:
    """A warning per profile field this adapter does not know, naming the closest one."""
    known = sorted(
        {f.name for f in fields(DucklakeCredentials)} | set(DucklakeCredentials._ALIASES)
    )
    warnings = []
    for key in sorted(set(profile) - set(known)):
        close = difflib.get_close_matches(str(key), known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f"; known fields: {', '.join(known)}"
        warnings.append(f"ducklake profile: unknown field {key!r} is ignored{hint}")
    return warnings
