"""sample_project with `data_path: s3://bucket/prefix` on moto's S3 server: seeds,
tables, views, the incremental MERGE, the check snapshot, the partitioned and sorted
model, a Python model and the CDC snapshot build twice, DuckDB's httpfs reads every
relation as Spark does, every file is in the bucket, and the secret key appears in no
output or log."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml
from dbt.adapters.factory import reset_adapters
from dbt.cli.main import dbtRunner, dbtRunnerResult

from dbt.adapters.ducklake.lake import FileIO, Lake
from dbt.adapters.ducklake.spark.sql import LakeSQL
from tests import duck
from tests.canon import canon_rows
from tests.conftest import S3Server
from tests.functional.test_sample_project import RELATIONS, SAMPLE, _info, _utc
from tests.spark.test_roundtrip import _spark_rows


def _profile(s3: S3Server, data_path: str) -> dict:
    return {
        "shop": {
            "target": "s3",
            "outputs": {
                "s3": {
                    "type": "ducklake",
                    "metadata": "sqlite:///lake/metadata.sqlite",
                    "data_path": data_path,
                    "schema": "shop",
                    "threads": 2,
                    "spark_master": "local[2]",
                    "spark_conf": {"spark.sql.shuffle.partitions": "2"},
                    **s3.profile_fields(),
                }
            },
        }
    }


def _dbt(project: Path, *command: str) -> dbtRunnerResult:
    try:
        return dbtRunner().invoke(
            [*command, "--project-dir", str(project), "--profiles-dir", str(project)]
        )
    finally:
        reset_adapters()


def test_sample_project_on_s3(spark, s3_server: S3Server, tmp_path, monkeypatch, capsys) -> None:
    project = tmp_path / "shop"
    shutil.copytree(SAMPLE, project, ignore=shutil.ignore_patterns("lake", "target", "logs"))
    data_path = f"s3://{s3_server.new_bucket()}/shop/"
    (project / "profiles.yml").write_text(yaml.safe_dump(_profile(s3_server, data_path)))
    monkeypatch.chdir(project)

    debug = _dbt(project, "debug")
    assert debug.success, debug.exception
    # the sample's rows are few: without this DuckLake would inline them all
    no_inlining = "{option: data_inlining_row_limit, value: 0}"
    assert _dbt(project, "run-operation", "ducklake_set_option", "--args", no_inlining).success
    first = _dbt(project, "build")
    assert first.success, first.exception
    # new orders arrive, a placed order ships: the incremental model MERGEs them
    orders = project / "seeds" / "orders.csv"
    text = orders.read_text().replace(
        "1005,4,230.00,2026-01-07 08:05:00,placed", "1005,4,230.00,2026-01-07 08:05:00,shipped"
    )
    orders.write_text(text + "1009,3,55.00,2026-01-11 10:00:00,placed\n")
    second = _dbt(project, "build", "--select", "orders", "orders_incremental")
    assert second.success, second.exception

    lake = Lake.open("sqlite:///lake/metadata.sqlite", files=FileIO(s3_server.settings()))
    assert lake.data_path == data_path
    # the second build's run of the incremental model is a MERGE of its own snapshot
    built = lake.table_history("shop", "orders_incremental")
    assert len(built) == 2 and _info(built[-1])["materialization"] == "incremental merge"
    con = duck.connect_s3(s3_server.duckdb_secret())
    duck.attach(con, f"sqlite:{project}/lake/metadata.sqlite", alias="lake")
    sql = LakeSQL(spark, lake, default_schema="shop")
    for name in RELATIONS:
        theirs = con.execute(f"SELECT * FROM lake.{name}").fetchall()
        ours = _spark_rows(sql.query(f"SELECT * FROM {name}"))
        assert ours and canon_rows(_utc(ours)) == canon_rows(_utc(theirs)), name
    assert con.execute(
        "SELECT count(*) FROM lake.shop.orders_incremental WHERE order_id = 1009"
    ).fetchone() == (1,)
    con.close()

    # every file the catalog names is in the bucket; nothing went to a local folder
    stored = {e.path for e in lake.files.walk(data_path) if not e.is_dir}
    assert stored and all(p.startswith(data_path) for p in stored)
    assert sorted(p.name for p in (project / "lake").iterdir()) == sorted(
        p.name for p in (project / "lake").glob("metadata.sqlite*")
    )
    secret = s3_server.secret_access_key
    out = capsys.readouterr()
    assert secret not in out.out + out.err
    for log in (project / "logs").rglob("*"):
        if log.is_file():
            assert secret not in log.read_text(errors="replace"), log
    for written in (project / "target").rglob("*"):
        if written.is_file():
            assert secret not in written.read_text(errors="replace"), written
