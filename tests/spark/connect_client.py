"""Run inside a subprocess: scan, write and MERGE into lake tables through Spark Connect."""

from __future__ import annotations

import json
import sys

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark.engine import create_table_as, insert_into
from dbt.adapters.ducklake.spark.merge import When, merge_into
from dbt.adapters.ducklake.spark.scan import scan_table
from dbt.adapters.ducklake.spark.session import SessionConfig, get_session


def main(remote: str, metadata: str, data_path: str) -> None:
    spark = get_session(SessionConfig(remote=remote))
    assert type(spark).__module__.startswith("pyspark.sql.connect"), type(spark)
    lake = Lake.open(metadata, data_path=data_path)
    create_table_as(
        lake,
        "main",
        "via_connect",
        spark.sql(
            "SELECT id, named_struct('a', id, 'tags', array('x', cast(id as string))) AS st, "
            "map('k', id) AS m FROM range(0, 200)"
        ),
    )
    insert_into(lake, "main", "from_duck", spark.range(1000, 1020).selectExpr("id", "'s' || id"))
    rows = scan_table(spark, lake, "main", "from_duck", lineage=True).orderBy("id").collect()
    merge_into(
        spark,
        lake,
        "main",
        "from_duck",
        spark.range(1015, 1025).selectExpr("id", "'m' || id AS v"),
        "t.id = s.id",
        [When("matched", "update", values={"v": "s.v"}), When("not_matched", "insert")],
    )
    merged = scan_table(spark, lake, "main", "from_duck").where("id >= 1010").orderBy("id")
    print(
        json.dumps(
            {
                "scanned": [[r.id, r.v] for r in rows],
                "rowids": sorted(r.rowid for r in rows),
                "count": scan_table(spark, lake, "main", "via_connect").count(),
                "merged": [[r.id, r.v] for r in merged.collect()],
            }
        )
    )


if __name__ == "__main__":
    main(*sys.argv[1:4])
