"""The deletion-vector codec against DuckDB 1.5.5's own `.puffin` files: decoded positions
are exactly the rows DuckDB no longer returns, encoding gives DuckDB's bytes back, every
Roaring container kind and the Puffin container decode, and corruption is an error."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from dbt.adapters.ducklake.lake import (
    CorruptDeletionVectorError,
    encode_blob,
    first_deletions,
    read_vectors,
)
from dbt.adapters.ducklake.lake.deletion_vectors import MAGIC, decode_blob
from tests import duck


def _duckdb_vector(tmp_path: Path, where: str, rows: int) -> tuple[bytes, list[int]]:
    """The one `.puffin` file DuckDB writes for `DELETE … WHERE where` on a table of
    `rows` ids, and the ids it then no longer returns."""
    con = duck.connect()
    duck.attach(
        con,
        f"sqlite:{tmp_path}/meta.sqlite",
        data_path=f"{tmp_path}/data/",
        options="DATA_INLINING_ROW_LIMIT 0",
    )
    con.execute("USE lake")
    con.execute("CALL ducklake_set_option('lake', 'write_deletion_vectors', true)")
    con.execute(f"CREATE TABLE t AS SELECT range AS id FROM range({rows})")
    con.execute(f"DELETE FROM t WHERE {where}")
    kept = {r[0] for r in con.execute("SELECT id FROM t").fetchall()}
    con.close()
    (vector,) = Path(tmp_path, "data").rglob("*-delete.puffin")
    return vector.read_bytes(), sorted(set(range(rows)) - kept)


@pytest.mark.parametrize(
    "where",
    [
        "id % 10 = 3",  # array containers
        "id % 7 = 3 OR id BETWEEN 100000 AND 170000",  # bitset containers too
    ],
)
def test_duckdb_vectors_decode_to_the_rows_duckdb_drops(tmp_path: Path, where: str) -> None:
    data, deleted = _duckdb_vector(tmp_path, where, 200_000)
    [(snapshot, positions)] = read_vectors(data, "v.puffin")
    assert snapshot is None  # a bare blob: the catalog row's begin_snapshot applies
    assert positions.tolist() == deleted
    assert encode_blob(positions) == data  # byte for byte what DuckDB writes


def _blob(section: bytes) -> bytes:
    body = MAGIC + section
    return struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body))


def test_run_containers_and_high_keys_decode() -> None:
    # one 32-bit bitmap under key 3 (positions 3 << 32 | …) with cookie 12347: one run
    # container (flag set) holding runs [5, 7] and [70, 70]
    roaring = (
        struct.pack("<I", 12347 | (0 << 16))  # n = 1
        + bytes([0b1])
        + struct.pack("<HH", 0, 3)  # key 0, cardinality 4
        + struct.pack("<H", 2)
        + struct.pack("<HHHH", 5, 2, 70, 0)
    )
    blob = _blob(struct.pack("<Q", 1) + struct.pack("<I", 3) + roaring)
    base = 3 << 32
    assert decode_blob(blob, "v").tolist() == [base + 5, base + 6, base + 7, base + 70]
    sample = np.array([0, 65_535, 65_536, (1 << 32) - 1, 1 << 32, (9 << 32) + 4], np.int64)
    assert decode_blob(encode_blob(sample[::-1]), "v").tolist() == sample.tolist()
    assert decode_blob(encode_blob(np.empty(0, np.int64)), "v").tolist() == []


def test_a_puffin_container_tags_each_vector_with_its_snapshot() -> None:
    first = encode_blob(np.array([1, 5], np.int64))
    second = encode_blob(np.array([1, 5, 9], np.int64))  # cumulative, as DuckDB writes
    blobs = [(first, 4), (second, 6)]
    body, entries, offset = b"PFA1", [], 4
    for blob, snapshot in blobs:
        entries.append(
            {
                "type": "deletion-vector-v1",
                "offset": offset,
                "length": len(blob),
                "properties": {"ducklake-snapshot-id": str(snapshot)},
            }
        )
        body += blob
        offset += len(blob)
    payload = json.dumps({"blobs": entries}).encode()
    data = body + b"PFA1" + payload + struct.pack("<II", len(payload), 0) + b"PFA1"
    vectors = read_vectors(data, "v.puffin")
    assert [(s, v.tolist()) for s, v in vectors] == [(4, [1, 5]), (6, [1, 5, 9])]
    positions, snapshots = first_deletions(vectors, begin_snapshot=99)
    assert list(zip(positions.tolist(), snapshots.tolist(), strict=True)) == [
        (1, 4),
        (5, 4),
        (9, 6),
    ]


def test_corruption_is_an_error_naming_the_file() -> None:
    good = encode_blob(np.array([3, 13, 4_000], np.int64))
    truncated_bitmap = _blob(good[8:-4][:-2])  # a valid CRC over a short bitmap
    bad = {
        "length prefix": good[:-1],
        "no deletion-vector magic": good[:4] + b"\0" + good[5:],
        "CRC mismatch": good[:-8] + bytes([good[-8] ^ 1]) + good[-7:],
        "truncated bitmap": truncated_bitmap,
    }
    for why, data in bad.items():
        with pytest.raises(CorruptDeletionVectorError, match=rf"v\.puffin is corrupt \({why}"):
            decode_blob(data, "v.puffin")
    with pytest.raises(CorruptDeletionVectorError, match="neither a deletion-vector-v1 blob"):
        read_vectors(b"PAR1" + good, "v.puffin")
