"""Two lakes compared relation by relation in DuckDB, the format's judge."""

from __future__ import annotations

from tests import duck

# when a snapshot recorded a version: differs between any two runs by construction
RUN_TIME_COLUMNS = ("dbt_scd_id", "dbt_updated_at", "dbt_valid_from", "dbt_valid_to")


def relations(con: object, alias: str) -> list[tuple[str, str, str]]:
    return sorted(
        con.execute(
            "SELECT table_schema, table_name, table_type FROM information_schema.tables "
            "WHERE table_catalog = ?",
            [alias],
        ).fetchall()
    )


def assert_same_lakes(expected_attach: str, actual_attach: str) -> list[str]:
    """Every relation has the same columns, types and rows (a multiset) in both lakes;
    snapshot validity is compared as 'is current' instead of its run-time timestamps.
    Returns the relations compared."""
    con = duck.connect()
    duck.attach(con, expected_attach, alias="expected")
    duck.attach(con, actual_attach, alias="actual")
    listed = relations(con, "expected")
    assert listed == relations(con, "actual")
    compared = []
    for schema, name, _ in listed:
        columns = {}
        for alias in ("expected", "actual"):
            described = con.execute(f'DESCRIBE "{alias}"."{schema}"."{name}"').fetchall()
            columns[alias] = [(row[0], row[1]) for row in described]
        assert columns["expected"] == columns["actual"], f"{schema}.{name}: columns differ"
        kept = [f'"{c}"' for c, _ in columns["expected"] if c not in RUN_TIME_COLUMNS]
        if len(kept) < len(columns["expected"]):
            kept.append('"dbt_valid_to" IS NULL AS is_current')
        select = ", ".join(kept)
        one = f'SELECT {select} FROM "expected"."{schema}"."{name}"'
        other = f'SELECT {select} FROM "actual"."{schema}"."{name}"'
        counts = con.execute(
            f"SELECT (SELECT count(*) FROM ({one} EXCEPT ALL {other})), "
            f"(SELECT count(*) FROM ({other} EXCEPT ALL {one})), "
            f"(SELECT count(*) FROM ({one}))"
        ).fetchone()
        assert counts is not None and counts[:2] == (0, 0), (
            f"{schema}.{name}: {counts[0]} rows only in the local lake, "
            f"{counts[1]} only in the other"
        )
        compared.append(f"{schema}.{name} ({counts[2]} rows)")
    con.close()
    return compared
