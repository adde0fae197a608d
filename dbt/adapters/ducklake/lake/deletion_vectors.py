"""Iceberg V3 deletion vectors (`deletion-vector-v1`), the `puffin` delete files DuckDB
writes when `write_deletion_vectors` is on: the deleted positions of one data file as a
64-bit Roaring bitmap, checked by a CRC.

A DuckDB 1.5 `.puffin` file is one bare blob: big-endian length of what follows up to
the CRC, the magic `D1 D3 39 64`, a little-endian u64 count of 32-bit bitmaps, per
bitmap a little-endian u32 key (the positions' high 32 bits) and one portable Roaring
bitmap of the low 32 bits, then a big-endian CRC-32 of magic and bitmaps. Newer DuckLake
writes several cumulative blobs of one data file into a real Puffin container (`PFA1`
... JSON footer), each tagged with the DuckLake snapshot that wrote it; both are read.

Pure numpy and the standard library: tasks decode vectors on executors that have only
pyspark[sql]. Nothing here imports pyspark.
"""

from __future__ import annotations

import json
import struct
import zlib

import numpy as np

from .errors import LakeError

MAGIC = b"\xd1\xd3\x39\x64"
PUFFIN_MAGIC = b"PFA1"
# portable Roaring cookies: without run containers (count follows), and with them
_NO_RUNS = 12346
_WITH_RUNS = 12347
_ARRAY_MAX = 4096  # a container with more values is a 65,536-bit bitset


class CorruptDeletionVectorError(LakeError):
    """A deletion vector's bytes do not decode (bad length, magic, CRC or bitmap): no
    row is kept or dropped on a guess."""


def is_deletion_vector(file_format: str | None) -> bool:
    return (file_format or "parquet").lower() == "puffin"


def read_vectors(data: bytes, name: str) -> list[tuple[int | None, np.ndarray]]:
    """Each vector in a `.puffin` file with the DuckLake snapshot that wrote it (None for
    a bare blob: its catalog row's begin_snapshot), positions sorted as int64."""
    view = memoryview(data)
    if len(data) >= 8 and bytes(view[4:8]) == MAGIC:
        return [(None, decode_blob(view, name))]
    if len(data) >= 12 and bytes(view[:4]) == PUFFIN_MAGIC and bytes(view[-4:]) == PUFFIN_MAGIC:
        return _puffin_blobs(view, name)
    raise CorruptDeletionVectorError(
        f"delete file {name}: neither a deletion-vector-v1 blob nor a Puffin file"
    )


def first_deletions(
    vectors: list[tuple[int | None, np.ndarray]], begin_snapshot: int
) -> tuple[np.ndarray, np.ndarray]:
    """Every deleted position with the first snapshot whose vector holds it (vectors of
    one file are cumulative); untagged vectors count as `begin_snapshot`."""
    if not vectors:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    positions = np.concatenate([v for _, v in vectors])
    snapshots = np.concatenate(
        [np.full(len(v), begin_snapshot if s is None else s, np.int64) for s, v in vectors]
    )
    return first_per_position(positions, snapshots)


def first_per_position(
    positions: np.ndarray, snapshots: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each position once, with its earliest snapshot, sorted by position (a position
    listed by several delete files or vectors was deleted by the first)."""
    order = np.lexsort((snapshots, positions))
    positions, snapshots = positions[order], snapshots[order]
    first = np.ones(len(positions), bool)
    first[1:] = positions[1:] != positions[:-1]
    return positions[first], snapshots[first]


def decode_blob(blob: memoryview | bytes, name: str) -> np.ndarray:
    """The sorted positions of one `deletion-vector-v1` blob; any inconsistency raises
    `CorruptDeletionVectorError` naming the file."""
    view = memoryview(blob)
    if len(view) < 20:
        raise _corrupt(name, f"{len(view)} bytes is too short")
    (length,) = struct.unpack_from(">I", view, 0)
    if length + 8 != len(view):
        raise _corrupt(name, f"length prefix {length} does not match {len(view)} bytes")
    if bytes(view[4:8]) != MAGIC:
        raise _corrupt(name, "no deletion-vector magic")
    (crc,) = struct.unpack_from(">I", view, 4 + length)
    if zlib.crc32(view[4 : 4 + length]) != crc:
        raise _corrupt(name, "CRC mismatch")
    body = view[: 4 + length]
    try:
        (count,) = struct.unpack_from("<Q", body, 8)
        offset, parts = 16, []
        for _ in range(count):
            (key,) = struct.unpack_from("<I", body, offset)
            if key >= 1 << 31:
                raise _corrupt(name, f"negative bitmap key {key - (1 << 32)}")
            low, offset = _roaring32(body, offset + 4, name)
            parts.append((np.int64(key) << np.int64(32)) | low)
    except (struct.error, ValueError) as bad:  # numpy reads past the end: ValueError
        raise _corrupt(name, f"truncated bitmap ({bad})") from None
    if offset != len(body):
        raise _corrupt(name, f"{len(body) - offset} bytes after the last bitmap")
    positions = np.concatenate(parts) if parts else np.empty(0, np.int64)
    positions.sort()
    return positions


def encode_blob(positions: np.ndarray) -> bytes:
    """A `deletion-vector-v1` blob of these positions (any order, repeats allowed):
    keys ascending as Iceberg requires, array and bitset containers as CRoaring writes."""
    values = np.unique(np.asarray(positions, np.int64))
    if len(values) and values[0] < 0:
        raise ValueError("deleted positions are never negative")
    keys, starts, counts = np.unique(values >> 32, return_index=True, return_counts=True)
    section = [struct.pack("<Q", len(keys))]
    for key, start, count in zip(keys, starts, counts, strict=True):
        low = values[start : start + count] & 0xFFFFFFFF
        section.append(struct.pack("<I", int(key)) + _encode_roaring32(low.astype(np.uint32)))
    body = MAGIC + b"".join(section)
    return struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body))


def _roaring32(buf: memoryview, offset: int, name: str) -> tuple[np.ndarray, int]:
    """One portable 32-bit Roaring bitmap at `offset`: its values and where it ends."""
    (cookie,) = struct.unpack_from("<I", buf, offset)
    offset += 4
    if cookie == _NO_RUNS:
        (n,) = struct.unpack_from("<I", buf, offset)
        offset += 4
        runs = np.zeros(n, bool)
        has_offsets = True
    elif cookie & 0xFFFF == _WITH_RUNS:
        n = (cookie >> 16) + 1
        flags = np.frombuffer(buf, np.uint8, (n + 7) // 8, offset)
        runs = np.unpackbits(flags, bitorder="little")[:n].astype(bool)
        offset += (n + 7) // 8
        has_offsets = n >= 4
    else:
        raise _corrupt(name, f"unknown Roaring cookie {cookie:#x}")
    header = np.frombuffer(buf, "<u2", 2 * n, offset).astype(np.int64)
    offset += 4 * n + (4 * n if has_offsets else 0)
    keys, cardinalities = header[0::2], header[1::2] + 1
    if n and np.any(np.diff(keys) <= 0):
        raise _corrupt(name, "container keys are not ascending")
    out = []
    for i in range(n):
        if runs[i]:
            (count,) = struct.unpack_from("<H", buf, offset)
            pairs = np.frombuffer(buf, "<u2", 2 * count, offset + 2).astype(np.int64)
            offset += 2 + 4 * count
            starts, lengths = pairs[0::2], pairs[1::2] + 1
            steps = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
            low = np.repeat(starts, lengths) + steps
        elif cardinalities[i] <= _ARRAY_MAX:
            low = np.frombuffer(buf, "<u2", int(cardinalities[i]), offset).astype(np.int64)
            offset += 2 * int(cardinalities[i])
        else:
            bits = np.unpackbits(np.frombuffer(buf, np.uint8, 8192, offset), bitorder="little")
            low = np.flatnonzero(bits).astype(np.int64)
            offset += 8192
        if len(low) != cardinalities[i] or (len(low) and (low.max() > 0xFFFF)):
            raise _corrupt(name, f"container {i} holds {len(low)} values, not {cardinalities[i]}")
        out.append((keys[i] << 16) | low)
    values = np.concatenate(out) if out else np.empty(0, np.int64)
    return values, offset


def _encode_roaring32(values: np.ndarray) -> bytes:
    """Sorted unique u32 values as a portable Roaring bitmap without run containers."""
    high = values >> 16
    keys, starts, counts = np.unique(high, return_index=True, return_counts=True)
    containers = []
    for start, count in zip(starts, counts, strict=True):
        low = values[start : start + count].astype(np.uint16)
        if count <= _ARRAY_MAX:
            containers.append(low.astype("<u2").tobytes())
        else:
            bits = np.zeros(1 << 16, np.uint8)
            bits[low] = 1
            containers.append(np.packbits(bits, bitorder="little").tobytes())
    n = len(keys)
    header = np.empty(2 * n, "<u2")
    header[0::2], header[1::2] = keys, counts - 1
    first = 8 + 4 * n + 4 * n  # cookie, count, descriptive and offset headers
    sizes = np.array([len(c) for c in containers], np.int64)
    offsets = (first + np.cumsum(sizes) - sizes).astype("<u4")
    return (
        struct.pack("<II", _NO_RUNS, n)
        + header.tobytes()
        + offsets.tobytes()
        + b"".join(containers)
    )


def _puffin_blobs(view: memoryview, name: str) -> list[tuple[int | None, np.ndarray]]:
    """The deletion vectors of a Puffin container, each with its `ducklake-snapshot-id`."""
    try:
        (payload_size,) = struct.unpack_from("<I", view, len(view) - 12)
        start = len(view) - 12 - payload_size
        if start < 8 or bytes(view[start - 4 : start]) != PUFFIN_MAGIC:
            raise ValueError("footer magic not found")
        footer = json.loads(bytes(view[start : start + payload_size]))
        out: list[tuple[int | None, np.ndarray]] = []
        for blob in footer["blobs"]:
            if blob.get("type") != "deletion-vector-v1":
                raise ValueError(f"blob type {blob.get('type')!r}")
            begin, size = int(blob["offset"]), int(blob["length"])
            if begin + size > start - 4:
                raise ValueError("a blob reaches into the footer")
            snapshot = (blob.get("properties") or {}).get("ducklake-snapshot-id")
            tag = int(snapshot) if snapshot is not None else None
            out.append((tag, decode_blob(view[begin : begin + size], name)))
        return out
    except (KeyError, TypeError, ValueError, struct.error) as bad:
        raise _corrupt(name, f"Puffin footer: {bad}") from None


def _corrupt(name: str, why: str) -> CorruptDeletionVectorError:
    return CorruptDeletionVectorError(
        f"deletion vector {name} is corrupt ({why}); its deletes cannot be applied"
    )
