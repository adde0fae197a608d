"""Profile validation: a bad profile fails with the field named, before Spark starts."""

from __future__ import annotations

import pytest
from dbt_common.exceptions import DbtConfigError

from dbt.adapters.ducklake.credentials import DucklakeCredentials
from dbt.adapters.ducklake.lake.secrets import Secrets, mask_shapes

BASE = {"metadata": "sqlite:///lake.sqlite", "schema": "main"}


def test_defaults() -> None:
    creds = DucklakeCredentials.from_dict(BASE)
    assert creds.database == "ducklake" and creds.author
    assert creds.session_config().master == "local[*]"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"metadata": ""}, "`metadata` is required"),
        ({"metadata": "mysql://x/y"}, "metadata:"),
        ({"schema": ""}, "`schema`"),
        ({"spark_master": "local[2]", "spark_remote": "sc://h:15002"}, "exclusive"),
        ({"spark_remote": "http://h:15002"}, "sc://host:port"),
        (
            {"spark_conf": {"spark.sql.parquet.outputTimestampType": "INT96"}},
            "conflicts with DuckLake",
        ),
        ({"spark_remote": "sc://h:15002", "spark_keep_alive": 600}, "spark_keep_alive.*local"),
        ({"spark_master": "spark://h:7077", "spark_keep_alive": 60}, "spark_keep_alive.*local"),
        ({"spark_keep_alive": -1}, "spark_keep_alive -1 must be 0"),
        (
            {"data_path": "s3://b/p", "s3_endpoint": "http://h:9000", "spark_keep_alive": 60},
            "spark_keep_alive works with data paths on local",
        ),
    ],
)
def test_bad_profiles_name_the_field(change: dict, message: str) -> None:
    with pytest.raises(DbtConfigError, match=message):
        DucklakeCredentials.from_dict({**BASE, **change})


def test_dbt_init_template_answers_make_a_valid_profile() -> None:
    """`dbt init` asks what profile_template.yml prompts; its defaults (plus a schema)
    must be a working profile."""
    import os

    import yaml

    import dbt.include.ducklake as include

    path = os.path.join(os.path.dirname(include.__file__), "profile_template.yml")
    with open(path) as fp:
        template = yaml.safe_load(fp)
    # Enter takes the default; only the schema has none (dbt asks until it gets one), so
    # no prompt re-asks for what has a default elsewhere (author: the OS user)
    asked = {k for k, v in template["prompts"].items() if "default" not in v}
    assert asked == {"schema"}, asked
    answers = {k: v["default"] for k, v in template["prompts"].items() if "default" in v}
    profile = {**template["fixed"], **answers, "schema": "shop"}
    assert profile.pop("type") == "ducklake" and profile.pop("threads") == 4
    creds = DucklakeCredentials.from_dict(profile)
    assert set(template["prompts"]) - {"threads"} <= set(creds.to_dict())
    assert creds.metadata == "sqlite:///lake/metadata.sqlite" and creds.data_path == "lake/data"


@pytest.mark.parametrize(
    ("metadata", "secret"),
    [
        ("postgresql+psycopg://alice:S3cret@h:5432/db", "S3cret"),
        ("postgresql://alice:S3cret%40x@h/db", "S3cret@x"),  # drivers echo it decoded
        ("postgres:dbname=db host=h password=S3cret user=u", "S3cret"),
        ("ducklake:postgres:dbname=db password='S3 cret\\'s' host=h", "S3 cret's"),
        ("mysql://alice:S3cret@h/db", "S3cret"),  # refused, but its error is masked too
    ],
)
def test_passwords_are_masked_everywhere_they_are_shown(metadata: str, secret: str) -> None:
    secrets = Secrets.of(metadata, {"spark.hadoop.fs.s3a.secret.key": "K3yValue"})
    echoed = f"failed for {metadata}: password {secret!r} rejected; key K3yValue"
    masked = secrets.mask(echoed)
    assert "S3" not in masked and "K3yValue" not in masked and "***" in masked, masked
    assert secrets.mask(secrets.mask(echoed)) == masked  # masking twice eats no text
    assert "S3" not in mask_shapes(metadata)
    try:
        creds = DucklakeCredentials.from_dict({**BASE, "metadata": metadata})
    except DbtConfigError as exc:
        assert "S3" not in str(exc) and "***" in str(exc), str(exc)
        return
    shown = dict(creds.connection_info())["metadata"]  # what `dbt debug` prints
    assert "S3" not in shown and "***" in shown, shown


def test_secret_conf_keys_follow_sparks_redaction_pattern() -> None:
    secrets = Secrets.of(
        "sqlite:///x.sqlite",
        {
            "spark.a.password": "p4ss",
            "spark.b.token": "t0ken",
            "spark.sql.shuffle.partitions": "200",
        },
    )
    assert set(secrets.values) == {"p4ss", "t0ken"}
    assert secrets.mask("partitions 200") == "partitions 200"


@pytest.mark.parametrize(
    "where",
    [{"spark_master": "spark://10.0.0.5:7077"}, {"spark_remote": "sc://10.0.0.5:15002"}],
)
def test_a_relative_data_path_is_refused_when_executors_run_elsewhere(where: dict) -> None:
    with pytest.raises(DbtConfigError, match=r"relative path.*must reach the same files"):
        DucklakeCredentials.from_dict({**BASE, **where, "data_path": "lake/data"})
    for shared in ("/mnt/shared/lake", "s3://bucket/lake", "~/lake"):
        DucklakeCredentials.from_dict({**BASE, **where, "data_path": shared})


@pytest.mark.parametrize("master", [None, "local", "local[2]", "local-cluster[2,1,1024]"])
def test_a_relative_data_path_is_fine_on_this_machine(master: str | None) -> None:
    DucklakeCredentials.from_dict({**BASE, "spark_master": master, "data_path": "lake/data"})


S3 = {"data_path": "s3://bucket/prefix", "s3_endpoint": "http://127.0.0.1:9000"}


def test_s3_fields_configure_spark_and_the_driver_and_the_secret_is_masked(monkeypatch) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-3")
    secret = "wJalrXUtnFEMI-K7MDENG-s3cr3t"
    creds = DucklakeCredentials.from_dict(
        {**BASE, **S3, "s3_access_key_id": "AKIDEXAMPLE", "s3_secret_access_key": secret}
    )
    settings = creds.file_io().s3
    assert (settings.host, settings.region, settings.path_style, settings.use_ssl) == (
        "127.0.0.1:9000",
        "eu-west-3",  # from the environment: the profile leaves it out
        True,  # path style is the default with an endpoint
        False,
    )
    shown = dict(creds.connection_info())
    assert "s3_secret_access_key" not in shown and "s3_access_key_id" not in shown
    assert shown["s3_endpoint"] == "http://127.0.0.1:9000" and secret not in str(shown)
    assert creds.secrets().mask(f"S3 said: bad key {secret}") == "S3 said: bad key ***"
    # S3A's jars come from the jar cache (`./dev jars`) or, without one, from Maven
    # (`spark.jars.packages`); the secret is set at runtime
    conf = creds.session_config().conf
    jars = conf.get("spark.jars", "") + conf.get("spark.jars.packages", "")
    assert "hadoop-aws" in jars and secret not in str(conf)


def test_s3_credentials_come_from_the_aws_environment(monkeypatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDFROMENV")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-Secret-value-123")
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "https://s3.example.com")
    creds = DucklakeCredentials.from_dict({**BASE, "data_path": "s3://b/p"})
    settings = creds.s3_settings()
    assert (settings.access_key_id, settings.region, settings.use_ssl) == (
        "AKIDFROMENV",
        "us-west-2",
        True,
    )
    assert creds.secrets().mask("x env-Secret-value-123 y") == "x *** y"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"s3_url_style": "virtual"}, "accepted values are path, vhost"),
        ({"s3_access_key_id": "AKID"}, "go together"),
    ],
)
def test_bad_s3_fields_are_refused(change: dict, message: str, monkeypatch) -> None:
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY", raising=False)
    with pytest.raises(DbtConfigError, match=message):
        DucklakeCredentials.from_dict({**BASE, **S3, **change})


def test_unknown_profile_fields_are_named_with_the_closest_known_one() -> None:
    from dbt_common.events.base_types import EventMsg
    from dbt_common.events.event_manager_client import get_event_manager

    manager = get_event_manager()
    seen: list[str] = []

    def keep(msg: EventMsg) -> None:
        seen.append(msg.info.msg)

    manager.add_callback(keep)
    try:
        DucklakeCredentials.validate({**BASE, "spark_mastr": "local[2]", "zzz": 1})
    finally:
        manager.callbacks.remove(keep)
    warned = [m for m in seen if "unknown field" in m]
    assert any("'spark_mastr' is ignored; did you mean 'spark_master'?" in m for m in warned), seen
    assert any("'zzz' is ignored; known fields: author, catalog" in m for m in warned), seen
    assert len(warned) == 2, warned
    seen.clear()
    manager.add_callback(keep)
    try:
        DucklakeCredentials.validate({**BASE, "catalog": "x", "override_data_path": True})
    finally:
        manager.callbacks.remove(keep)
    assert not [m for m in seen if "unknown field" in m], seen
