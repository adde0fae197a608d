"""Every view of a lake read by Spark (through dbt-ducklake) and by DuckDB: the same rows,
or both engines failing, or DuckDB refusing with an error that names a Spark construct.

    python -m tests.ecosystem.views METADATA_URL

`./dev ecosystem` runs it on the lake dbt-utils' integration tests built."""

from __future__ import annotations

import os
import sys
import time
from datetime import datetime, timezone
from typing import Any

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark.session import SessionConfig, get_session
from dbt.adapters.ducklake.spark.sql import LakeSQL
from tests import duck
from tests.canon import canon_rows


def _utc(rows: list[Any]) -> list[Any]:
    """Spark hands TIMESTAMPs out naive (UTC here); DuckDB aware."""
    return [
        tuple(
            v.replace(tzinfo=timezone.utc) if isinstance(v, datetime) and v.tzinfo is None else v
            for v in r
        )
        for r in rows
    ]


def _read(run: Any) -> Any:
    try:
        return canon_rows(_utc(run()))
    except Exception as exc:  # an error is a result too
        return exc


def main(metadata: str) -> int:
    os.environ["TZ"] = "UTC"
    time.tzset()
    conf = {"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"}
    spark = get_session(SessionConfig(master="local[2]", conf=conf))
    lake = Lake.open(metadata)
    sql = LakeSQL(spark, lake)
    con = duck.connect()
    duck.attach(con, metadata.replace("sqlite:///", "sqlite:"))
    verdicts: dict[str, list[str]] = {}
    for view in lake.catalog().views():
        name = f"{view.schema_name}.{view.name}"
        quoted = f'lake."{view.schema_name}"."{view.name}"'
        ours = _read(lambda: [tuple(r) for r in sql.execute(f"SELECT * FROM {name}").collect()])  # noqa: B023
        theirs = _read(lambda: con.execute(f"SELECT * FROM {quoted}").fetchall())  # noqa: B023
        if isinstance(ours, Exception) and isinstance(theirs, Exception):
            verdict = "both fail"
        elif isinstance(theirs, Exception) and "reads only through Spark" in str(theirs):
            verdict = "DuckDB refuses: " + str(theirs).splitlines()[0][:120]
        elif ours == theirs:
            verdict = "same"
        else:
            verdict = f"DIFFERENT: Spark {str(ours)[:100]} | DuckDB {str(theirs)[:100]}"
        verdicts.setdefault(verdict.split(":")[0], []).append(f"{name}  {verdict}")
    print("\nviews read by Spark and by DuckDB:")
    for kind, lines in sorted(verdicts.items()):
        print(f"  {kind}: {len(lines)}")
        if kind != "same":
            print("\n".join(f"    {line}" for line in lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
