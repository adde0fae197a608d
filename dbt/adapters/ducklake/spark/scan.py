"""A DuckLake table at a snapshot as a Spark DataFrame.

The driver reads the catalog (a fixed number of queries), prunes files with their stats
and partition values, and plans one Parquet scan over the kept files. Executors read
columns by field id (renames, drops and promotions follow), drop deleted positions
(delete files, partial delete files, inlined deletes) with an anti-join, filter partial
files by `_ducklake_internal_snapshot_id`, and inlined rows are unioned in.
"""

from __future__ import annotations

import logging
import os
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from datetime import time as dt_time
from decimal import Decimal
from typing import Any

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..lake import (
    CatalogReader,
    Column,
    DataFile,
    DataFileSpec,
    DeleteFile,
    Lake,
    NameMap,
    StagedTable,
    decode_default,
)
from .prune import Predicate, may_match
from .types import (
    DELETE_POS_FIELD_ID,
    FIELD_ID,
    ROW_ID_FIELD_ID,
    SNAPSHOT_FIELD_ID,
    python_rows,
    spark_schema,
)

log = logging.getLogger("dbt.adapters.ducklake.spark")

ROW_ID = "_ducklake_internal_row_id"
ROW_SNAPSHOT = "_ducklake_internal_snapshot_id"
_FILE_ID = "__ducklake_del_fid_key"
DELETE_FILE_ID_COL = _FILE_ID
DELETE_POS_COL = "__ducklake_del_pos"
DELETE_SNAPSHOT = "__ducklake_del_snapshot"
FILE_ID_COL = "__ducklake_fid"
POS_COL = "__ducklake_pos"
_POS = "__ducklake_pos"


@dataclass
class ScanMetrics:
    """What the last scan planned; tests and logs use it to show pruning."""

    files_total: int = 0
    files_read: int = 0
    inlined_rows: int = 0
    rows_read: int = 0  # rows of the data files read (before deletes) plus inlined rows
    pruned_by: list[str] = field(default_factory=list)
    files: list[DataFile] = field(default_factory=list)  # the data files the scan reads


# Characters Hadoop's Path keeps as they are in the URI Spark reports as
# `_metadata.file_path` (java.net.URI's path characters); any other ASCII is %XX-encoded.
_URI_PATH_SAFE = frozenset(string.ascii_letters + string.digits + "-_.!~*'()@&=+$,;/")


def spark_uri(path: str) -> str | None:
    """The exact `_metadata.file_path` Spark reports for a local file, or None when this
    cannot be told without asking Hadoop (URLs, ':' or non-ASCII in the path).

    Precomputed once per file on the driver, it lets scans match rows to files by plain
    string equality instead of decoding a URI on every row.
    """
    if "://" in path or ":" in path or not path.isascii():
        return None
    full = os.path.abspath(path)
    return "file:" + "".join(c if c in _URI_PATH_SAFE else f"%{ord(c):02X}" for c in full)


def local_path(spark_path: SparkColumn) -> SparkColumn:
    """Spark's `_metadata.file_path` (a URI) as the plain path the catalog stores.

    Per-row work: only for files whose URI `spark_uri` cannot predict.
    """
    protected = F.regexp_replace(spark_path, r"\+", "%2B")
    decoded = F.url_decode(protected)
    return F.regexp_replace(decoded, r"^file:(//)?", "")


def read_parquet(spark: SparkSession, schema: T.StructType, paths: Sequence[str]) -> DataFrame:
    """One Parquet scan over exactly these files (no directory discovery).

    Classic PySpark hands a path list to the JVM one py4j call per path (seconds for
    thousands of files); here the list crosses as one string. Spark Connect sends it in
    one message anyway.
    """
    reader = spark.read.schema(schema).option("recursiveFileLookup", "true")
    jreader = getattr(reader, "_jreader", None)
    jvm = getattr(getattr(spark, "_sc", None), "_jvm", None)
    if jreader is None or jvm is None or len(paths) < _MANY_FILES:
        return reader.parquet(*paths)
    folder = _folder_of_exactly(paths)
    if folder is not None:
        whole = DataFrame(jreader.parquet(_jvm_seq(jvm, [folder])), spark)
        # what Spark listed is what the catalog named, unless a file came in between
        if len(whole._jdf.inputFiles()) == len(paths):
            return whole
    return DataFrame(jreader.parquet(_jvm_seq(jvm, paths)), spark)


_MANY_FILES = 64


def _folder_of_exactly(paths: Sequence[str]) -> str | None:
    """The local directory holding exactly these Parquet files and nothing else to
    read, or None. Spark lists one directory in one call, where it checks and stats a
    list of paths one by one: planning a 10,000-file table takes a third of the time."""
    folder = os.path.dirname(paths[0])
    if "://" in folder or not folder:
        return None
    names = set()
    for p in paths:
        if os.path.dirname(p) != folder:
            return None
        names.add(os.path.basename(p))
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return None
    present = set()
    for entry in entries:
        if entry.name.startswith(".") or (entry.name.startswith("_") and "=" not in entry.name):
            continue  # names Spark skips as hidden
        if not entry.is_file(follow_symlinks=False):
            return None  # a subdirectory (a write in progress) would be read as well
        present.add(entry.name)
    return folder if present == names else None


def _jvm_seq(jvm: Any, paths: Sequence[str]) -> Any:
    """A Scala Seq of paths built in one py4j call (not one per path)."""
    joined = jvm.java.lang.String("\n".join(paths))
    jlist = (
        jvm.java.util.regex.Pattern.compile("\n")
        .splitAsStream(joined)
        .collect(jvm.java.util.stream.Collectors.toList())
    )
    return jvm.scala.jdk.javaapi.CollectionConverters.asScala(jlist).toSeq()


def _norm(path: str) -> str:
    return path if "://" in path else os.path.normpath(path)


def scan_table(
    spark: SparkSession,
    lake: Lake,
    schema: str,
    name: str,
    *,
    at: int | datetime | None = None,
    lineage: bool = False,
    positions: bool = False,
    predicates: Sequence[Predicate] | Callable[[Sequence[Column]], Sequence[Predicate]] = (),
    metrics: ScanMetrics | None = None,
    catalog: CatalogReader | None = None,
) -> DataFrame:
    """The table as of `at` (snapshot id, time, or latest), with current names and types.

    `lineage` adds `rowid` and `snapshot_id` (the snapshot that wrote each row);
    `positions` adds `__ducklake_fid` and `__ducklake_pos`, the data file id and row
    position of each row (NULL for inlined rows), which merge-on-read DML needs.
    `predicates` (or a function of the table's columns giving them) only prune files;
    callers still filter rows. `catalog`, when the caller has one open, is read instead
    of opening another at `at`.
    """
    cat = catalog if catalog is not None else lake.catalog(at)
    with cat.session():
        state = cat.table_state(schema, name)
        if callable(predicates):
            predicates = predicates(state.columns)
        file_stats = cat.file_column_stats(state.table.table_id)
        inlined_deletes = cat.inlined_deletes(state.table.table_id)
        inlined = cat.inlined_rows(state.table.table_id)
    return _plan(
        spark,
        cat,
        state.columns,
        state.data_files,
        file_stats,
        inlined_deletes,
        inlined,
        lineage=lineage,
        positions=positions,
        predicates=predicates,
        metrics=metrics,
        partition=state.partition,
    )


def _plan(
    spark: SparkSession,
    cat: CatalogReader,
    columns: Sequence[Column],
    files: Sequence[DataFile],
    file_stats: dict[int, Any],
    inlined_deletes: Sequence[Any],
    inlined: Sequence[Any],
    *,
    lineage: bool,
    positions: bool,
    predicates: Sequence[Predicate],
    metrics: ScanMetrics | None,
    partition: Any,
) -> DataFrame:
    snap = cat.snapshot_id
    metrics = metrics if metrics is not None else ScanMetrics()
    metrics.files_total = len(files)
    kept = [
        f
        for f in files
        if may_match(f, columns, file_stats.get(f.data_file_id), partition, predicates)
    ]
    metrics.files_read = len(kept)
    metrics.files = kept
    metrics.inlined_rows = len(inlined)
    metrics.rows_read = sum(f.record_count for f in kept) + len(inlined)
    if predicates:
        metrics.pruned_by = [str(p) for p in predicates]
        log.info(
            "scan at snapshot %s: %s of %s data files pruned by %s",
            snap,
            len(files) - len(kept),
            len(files),
            ", ".join(metrics.pruned_by),
        )
    out_schema = spark_schema(list(columns))
    if lineage:
        out_schema = out_schema.add("rowid", T.LongType()).add("snapshot_id", T.LongType())
    if positions:
        out_schema = out_schema.add(FILE_ID_COL, T.LongType()).add(POS_COL, T.LongType())
    parts: list[DataFrame] = []
    if kept:
        parts.append(
            read_files(
                spark, cat, columns, kept, file_stats, inlined_deletes, snap, lineage, positions
            )
        )
    if inlined:
        rows = [
            tuple(r.values[c.column_id] for c in columns)
            + ((r.row_id, r.begin_snapshot) if lineage else ())
            + ((None, None) if positions else ())
            for r in inlined
        ]
        parts.append(spark.createDataFrame(spark_rows(rows, columns), out_schema))
    if not parts:
        return spark.createDataFrame([], out_schema)
    result = parts[0]
    for extra in parts[1:]:
        result = result.unionByName(extra)
    return result


_AS_TEXT = ("uuid", "time", "timetz", "interval")
_AS_DECIMAL = ("uint64", "int128", "uint128")


def spark_rows(rows: list[tuple[Any, ...]], columns: Sequence[Column]) -> list[tuple[Any, ...]]:
    """Inlined values as the Python values of the Spark types `types.spark_type` maps to."""
    return [
        tuple(_spark_value(c, v) for c, v in zip(columns, r, strict=False)) + r[len(columns) :]
        for r in rows
    ]


def time_text(value: dt_time) -> str:
    """A time as DuckDB prints it: fractional seconds without trailing zeros."""
    text = value.replace(tzinfo=None).isoformat()
    return text.rstrip("0").rstrip(".") if "." in text else text


def _spark_value(col: Column, value: Any) -> Any:
    if value is None:
        return None
    if col.type == "list":
        return [_spark_value(col.children[0], v) for v in value]
    if col.type == "struct":
        return {c.name: _spark_value(c, value.get(c.name)) for c in col.children}
    if col.type == "map":
        key, item = col.children
        return {_spark_value(key, k): _spark_value(item, v) for k, v in value.items()}
    if col.type in ("time", "timetz") and isinstance(value, dt_time):
        return time_text(value)
    if col.type in _AS_TEXT:
        return str(value)
    if col.type in _AS_DECIMAL:
        return Decimal(value)
    return value


def read_files(
    spark: SparkSession,
    cat: CatalogReader,
    columns: Sequence[Column],
    files: Sequence[DataFile],
    file_stats: dict[int, Any],
    inlined_deletes: Sequence[Any],
    snap: int | None,
    lineage: bool,
    positions: bool = False,
) -> DataFrame:
    """Rows of `files` as of snapshot `snap`, or every row they ever held when None.

    Files that need nothing per row (no deletes, no rows of later snapshots, no missing
    defaults, field ids present) are read as a plain Parquet scan when the caller asks
    for no per-file columns; only the others are matched to their file.
    """
    defaults = {c.column_id: c for c in columns if decode_default(c) is not None}
    plain: list[DataFile] = []
    if not (lineage or positions):
        plain, files = _split_plain(files, file_stats, defaults, inlined_deletes, snap)
    parts: list[DataFrame] = []
    if plain:
        plain_schema = spark_schema(list(columns), reading=True)
        raw = read_parquet(spark, plain_schema, [f.path for f in plain])
        parts.append(raw.select(*[_logical(c) for c in columns]))
    if files:
        parts.append(
            _read_per_file(
                spark,
                cat,
                columns,
                files,
                file_stats,
                defaults,
                inlined_deletes,
                snap,
                lineage,
                positions,
            )
        )
    result = parts[0]
    for extra in parts[1:]:
        result = result.unionByName(extra)
    return result


def _split_plain(
    files: Sequence[DataFile],
    file_stats: dict[int, Any],
    defaults: dict[int, Column],
    inlined_deletes: Sequence[Any],
    snap: int | None,
) -> tuple[list[DataFile], list[DataFile]]:
    """(files readable as they are, files needing per-row work)."""
    with_inlined_deletes = {d.data_file_id for d in inlined_deletes}
    plain: list[DataFile] = []
    other: list[DataFile] = []
    for f in files:
        stats = file_stats.get(f.data_file_id) or {}
        needs = (
            f.mapping_id is not None
            or (bool(stats) and any(cid not in stats for cid in defaults))
            or (
                snap is not None
                and (
                    f.delete_file is not None
                    or f.data_file_id in with_inlined_deletes
                    or (f.partial_max is not None and f.partial_max > snap)
                )
            )
        )
        (other if needs else plain).append(f)
    return plain, other


def _read_per_file(
    spark: SparkSession,
    cat: CatalogReader,
    columns: Sequence[Column],
    files: Sequence[DataFile],
    file_stats: dict[int, Any],
    defaults: dict[int, Column],
    inlined_deletes: Sequence[Any],
    snap: int | None,
    lineage: bool,
    positions: bool,
) -> DataFrame:
    read_schema = spark_schema(list(columns), reading=True)
    read_schema = read_schema.add(
        T.StructField(ROW_ID, T.LongType(), True, {FIELD_ID: ROW_ID_FIELD_ID})
    )
    read_schema = read_schema.add(
        T.StructField(ROW_SNAPSHOT, T.LongType(), True, {FIELD_ID: SNAPSHOT_FIELD_ID})
    )
    # One scan over all files with field ids (plus one per name mapping, for files
    # written without ids); files older than a column with a default get it per file.
    # Rows find their file by the URI Spark reports, precomputed here when possible.
    match = _file_match([f.path for f in files], [f.file_size_bytes for f in files])
    offsets = _row_numbering(files)
    file_info = {
        "__ducklake_fid": [f.data_file_id for f in files],
        "__ducklake_row_id_start": [f.row_id_start for f in files],
        "__ducklake_begin": [f.begin_snapshot for f in files],
        "__ducklake_off": [offsets[f.data_file_id] for f in files],
    }
    by_id = [f.path for f in files if f.mapping_id is None]
    mapped: dict[int, list[str]] = {}
    for f in files:
        if f.mapping_id is not None:
            mapped.setdefault(f.mapping_id, []).append(f.path)
    raw: DataFrame | None = None
    if by_id:
        raw = _with_position(read_parquet(spark, read_schema, by_id), match)
    mappings = cat.name_mappings(mapped) if mapped else {}
    for mapping_id, paths in mapped.items():
        part = _read_mapped(spark, columns, mappings.get(mapping_id, []), paths, match)
        raw = part if raw is None else raw.unionByName(part)
    assert raw is not None
    data = match.attach(spark, raw, "__ducklake_path", file_info)
    if defaults:
        data = _apply_defaults(data, files, file_stats, defaults)
    deletes = None
    if snap is not None:
        if any(f.partial_max is not None and f.partial_max > snap for f in files):
            # a partial file holds rows of several snapshots; keep those visible at `snap`
            visible = F.col(ROW_SNAPSHOT).isNull() | (F.col(ROW_SNAPSHOT) <= F.lit(snap))
            data = data.where(visible)
        deletes = _deletes(spark, files, inlined_deletes, snap, offsets)
    if deletes is not None:
        deleted = sum(f.delete_file.delete_count for f in files if f.delete_file is not None)
        data = _drop_deleted(data, deletes, masks=deleted + len(inlined_deletes) > _FEW_DELETES)
    select = [_logical(c) for c in columns]
    if lineage:
        select.append(
            F.coalesce(F.col(ROW_ID), F.col("__ducklake_row_id_start") + F.col(_POS)).alias("rowid")
        )
        select.append(
            F.coalesce(F.col(ROW_SNAPSHOT), F.col("__ducklake_begin")).alias("snapshot_id")
        )
    if positions:
        select += [F.col("__ducklake_fid").alias(FILE_ID_COL), F.col(_POS).alias(POS_COL)]
    return data.select(*select)


@dataclass(frozen=True)
class _FileMatch:
    """How rows of a multi-file scan find the catalog entry of the file they came from.

    By size when the files' sizes are all different: `_metadata.file_size` is a number,
    so the broadcast join is a hash lookup on a long, not on an 80-byte string per row.
    A row whose size matches no entry (the file changed under the catalog) fails the
    query instead of being dropped. Else by the URI Spark reports (predicted on the
    driver) or, when that cannot be predicted, by the path decoded per row.
    """

    keys: list[Any]
    key_type: str  # Spark SQL type of the keys
    per_row: SparkColumn  # the key each row carries
    checked: bool  # unmatched rows must fail (the size match)

    def attach(
        self,
        spark: SparkSession,
        data: DataFrame,
        row_key: str,
        info: Mapping[str, Sequence[int | None]],
        *,
        few_rows: bool = False,
    ) -> DataFrame:
        """`data` (whose `row_key` holds the per-row key) with one bigint column per
        entry of `info`, holding the value of the row's file (`info` lists one value per
        file, in the order of `keys`), and without `row_key`.

        Over few files this needs no join: the file's index comes from a constant slot
        table on the size (`_hashed_index`), or for a path key from a CASE, each value
        from a constant array, so no broadcast side is built (one Spark job less). A path
        key takes this way only for `few_rows` (delete files), where comparing strings
        per row costs less than the job. Otherwise a broadcast join. With a size match, a
        row of an unknown file fails the query; with a path match, it is dropped.
        """
        modulus = _perfect_modulus(self.keys) if self.checked else None
        if modulus is not None or (few_rows and len(self.keys) <= _INLINE_FILES):
            # SQL text: one py4j call per expression, not one per constant
            if modulus is not None:
                index = _hashed_index(row_key, self.keys, modulus)
            else:
                whens = " ".join(
                    f"WHEN {row_key} = {_sql_key(k)} THEN {i}" for i, k in enumerate(self.keys, 2)
                )
                index = F.expr(f"CASE {whens} END")
            if self.checked:
                index = F.coalesce(index, F.raise_error(F.lit(_CHANGED_FILE)))
            values = [
                F.expr(
                    f"element_at(array({', '.join(_sql_key(v) for v in (None, *vs))}), {row_key})"
                ).alias(name)
                for name, vs in info.items()
            ]
            indexed = data.withColumn(row_key, index)
            if not self.checked:
                indexed = indexed.where(F.col(row_key).isNotNull())
            return indexed.select("*", *values).drop(row_key)
        names = list(info)
        rows = [(key, *vs) for key, *vs in zip(self.keys, *info.values(), strict=True)]
        table = spark.createDataFrame(
            rows,
            ", ".join([f"__ducklake_match_key {self.key_type}"] + [f"{n} bigint" for n in names]),
        )
        condition = F.col(row_key) == F.col("__ducklake_match_key")
        if not self.checked:
            joined = data.join(F.broadcast(table), condition)
        else:
            joined = data.join(F.broadcast(table), condition, "left")
            guarded = [
                F.coalesce(F.col(n), F.raise_error(F.lit(_CHANGED_FILE)).cast("bigint")).alias(n)
                for n in names
            ]
            kept = [F.col("`" + c.replace("`", "``") + "`") for c in data.columns]
            joined = joined.select(*kept, *guarded)
        return joined.drop(row_key, "__ducklake_match_key")


def _sql_key(value: int | str | None) -> str:
    """A key or value as a Spark SQL literal (bigint or string)."""
    if value is None:
        return "CAST(NULL AS BIGINT)"
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return f"{int(value)}L"


# Up to this many delete files, delete rows find their file by a CASE on its path.
_INLINE_FILES = 64
# Up to this many data files find theirs by size through a constant table.
_HASHED_FILES = 128


def _perfect_modulus(sizes: Sequence[Any]) -> int | None:
    """A small m giving every size its own `size % m` (a few thousand tries at most:
    over 128 files rows are joined instead)."""
    if not sizes or len(sizes) > _HASHED_FILES:
        return None
    for m in range(len(sizes), len(sizes) + 4096):
        if len({k % m for k in sizes}) == len(sizes):
            return m
    return None


def _hashed_index(row_key: str, sizes: Sequence[int], modulus: int) -> SparkColumn:
    """Per row, 2 + the position of its file's size in `sizes`, or NULL for a size no
    file has: one modulo and two constant-array reads per row, in the same few lines of
    generated code for 4 files or 128 (a CASE per file grows past what the JIT compiles
    and slows the whole stage down)."""
    slots = [1] * modulus  # 1 points at the sentinel that no size equals
    for i, k in enumerate(sizes, 2):
        slots[k % modulus] = i
    table = ", ".join(map(str, slots))
    slot = f"element_at(array({table}), CAST(pmod({row_key}, {modulus}L) AS INT) + 1)"
    known = f"array(-1L, {', '.join(_sql_key(k) for k in sizes)})"
    return F.expr(f"CASE WHEN element_at({known}, {slot}) = {row_key} THEN {slot} END")


_CHANGED_FILE = (
    "a Parquet file's size differs from the size the DuckLake catalog records for it: "
    "the file was changed outside the lake"
)


MATCH_BY_SIZE = True  # tests turn it off to run the URI and decoded-path matches


def _file_match(paths: Sequence[str], sizes: Sequence[int | None]) -> _FileMatch:
    if MATCH_BY_SIZE and all(s for s in sizes) and len(set(sizes)) == len(sizes):
        return _FileMatch(list(sizes), "bigint", F.col("_metadata.file_size"), True)
    uris = [spark_uri(p) for p in paths]
    if all(u is not None for u in uris):
        return _FileMatch(uris, "string", F.col("_metadata.file_path"), False)
    return _FileMatch(
        [_norm(p) for p in paths], "string", local_path(F.col("_metadata.file_path")), False
    )


def _with_position(df: DataFrame, match: _FileMatch) -> DataFrame:
    return df.select(
        "*",
        match.per_row.alias("__ducklake_path"),
        F.col("_metadata.row_index").alias(_POS),
    )


def _read_mapped(
    spark: SparkSession,
    columns: Sequence[Column],
    mapping: Sequence[NameMap],
    paths: list[str],
    match: _FileMatch,
) -> DataFrame:
    """Files without field ids: read each column by the name its mapping gives it."""
    entry_field = {m.column_id: m.target_field_id for m in mapping}
    by_field: dict[tuple[int | None, int], NameMap] = {}
    for m in mapping:
        parent = entry_field.get(m.parent_column) if m.parent_column is not None else None
        by_field[(parent, m.target_field_id)] = m

    def field(col: Column, parent: int | None) -> T.StructField | None:
        entry = by_field.get((parent, col.column_id))
        if entry is None:
            return None
        dt = spark_schema([col], reading=True)[0].dataType
        if col.type == "struct":
            kids = [(field(c, col.column_id), c) for c in col.children]
            dt = T.StructType(
                [
                    k
                    if k is not None
                    else T.StructField(f"__absent_{c.column_id}", spark_schema([c])[0].dataType)
                    for k, c in kids
                ]
            )
        return T.StructField(entry.source_name, dt, True)

    fields = {c.column_id: field(c, None) for c in columns}
    schema = T.StructType([f for f in fields.values() if f is not None])
    df = _with_position(read_parquet(spark, schema, paths), match)
    select = []
    for c in columns:
        target = spark_schema([c], reading=True)[0].dataType
        f = fields[c.column_id]
        value = F.col(f"`{f.name}`").cast(target) if f is not None else F.lit(None).cast(target)
        select.append(value.alias(c.name))
    select += [
        F.lit(None).cast("bigint").alias(ROW_ID),
        F.lit(None).cast("bigint").alias(ROW_SNAPSHOT),
        F.col("__ducklake_path"),
        F.col(_POS),
    ]
    return df.select(*select)


def _logical(col: Column) -> SparkColumn:
    """A column as read (DuckDB's physical type) converted to its mapped Spark type."""
    c = F.col(f"`{col.name}`")
    if col.type == "uuid":
        return _uuid_text(col.name)
    if col.type in ("time", "timetz"):
        micros = c % F.lit(1_000_000)
        text = F.format_string(
            "%02d:%02d:%02d",
            (c / 3_600_000_000).cast("int"),
            (c / 60_000_000 % 60).cast("int"),
            (c / 1_000_000 % 60).cast("int"),
        )
        frac = F.rtrim(F.regexp_replace(F.format_string(".%06d", micros), "0+$", ""))
        return (
            F.when(c.isNull(), None)
            .otherwise(F.concat(text, F.when(micros == 0, F.lit("")).otherwise(frac)))
            .alias(col.name)
        )
    if col.type == "timestamp_ns":
        epoch = F.lit("1970-01-01 00:00:00").cast("timestamp_ntz")
        return F.timestamp_add("MICROSECOND", F.floor(c / 1000), epoch).alias(col.name)
    if col.type in ("int128", "uint128"):
        return c.cast(T.DecimalType(38, 0)).alias(col.name)
    return c


def _uuid_text(name: str) -> SparkColumn:
    """16 UUID bytes -> 8-4-4-4-12 lower-case text, as DuckDB prints them."""
    h = F.lower(F.hex(F.col(f"`{name}`")))
    parts = [
        F.substring(h, start, length)
        for start, length in ((1, 8), (9, 4), (13, 4), (17, 4), (21, 12))
    ]
    return (
        F.when(F.col(f"`{name}`").isNull(), F.lit(None))
        .otherwise(F.concat_ws("-", *parts))
        .alias(name)
    )


def _apply_defaults(
    data: DataFrame,
    files: Sequence[DataFile],
    file_stats: dict[int, Any],
    defaults: dict[int, Column],
) -> DataFrame:
    """Fill columns added after a file was written with their initial default.

    A file holds exactly the columns it has stats for (DuckDB and this engine write
    stats for every column); files without any stats are taken to hold them all.
    """
    for column_id, col in defaults.items():
        missing = [
            f.data_file_id
            for f in files
            if file_stats.get(f.data_file_id) and column_id not in file_stats[f.data_file_id]
        ]
        if not missing:
            continue
        value = F.lit(decode_default(col)).cast(spark_schema([col])[0].dataType)
        data = data.withColumn(
            col.name,
            F.when(F.col("__ducklake_fid").isin(missing), value).otherwise(F.col(f"`{col.name}`")),
        )
    return data


def _deletes(
    spark: SparkSession,
    files: Sequence[DataFile],
    inlined_deletes: Sequence[Any],
    snap: int,
    offsets: Mapping[int, int],
) -> DataFrame | None:
    """The row number (`_row_numbering`) of every row deleted as of `snap`."""
    positions = delete_positions(
        spark,
        [f.delete_file for f in files if f.delete_file is not None],
        [d for d in inlined_deletes if d.data_file_id in offsets],
        offsets,
    )
    if positions is None:
        return None
    number = F.col("__ducklake_del_off") + F.col("__ducklake_del_pos")
    return positions.where(F.col(DELETE_SNAPSHOT) <= F.lit(snap)).select(
        number.alias("__ducklake_del_number")
    )


_CHUNK_BITS = 6  # 64 positions per mask


def _row_numbering(files: Sequence[DataFile]) -> dict[int, int]:
    """Per data file, the number its first row gets when the files' rows are numbered
    one after the other; each file starts a new run of 64 (see `_drop_deleted`)."""
    offsets, start = {}, 0
    for f in files:
        offsets[f.data_file_id] = start
        start += -(-f.record_count >> _CHUNK_BITS) << _CHUNK_BITS
    return offsets


# up to this many deleted rows, a plain anti-join on row numbers (no aggregation stage)
_FEW_DELETES = 1 << 17


def _drop_deleted(data: DataFrame, deletes: DataFrame, *, masks: bool) -> DataFrame:
    """`data` (with `__ducklake_off` and positions) without the rows `deletes` numbers.

    Rows are numbered across the scanned files (`_row_numbering`). Few deletes are a
    broadcast anti-join on that one long. Many become a 64-bit mask per run of 64
    numbers: each row looks up its run (a long key with nearly contiguous values, which
    Spark keeps as a plain array) and tests one bit, a tenth of the entries of the
    anti-join and no hashing per row, for the price of one aggregation stage.
    """
    numbered = data.withColumn("__ducklake_row_number", F.col("__ducklake_off") + F.col(_POS))
    if not masks:
        kept = numbered.join(
            F.broadcast(deletes),
            F.col("__ducklake_row_number") == F.col("__ducklake_del_number"),
            "left_anti",
        )
        return kept.drop("__ducklake_row_number")
    masks_by_run = deletes.groupBy(
        F.shiftright("__ducklake_del_number", _CHUNK_BITS).alias("__ducklake_del_chunk")
    ).agg(
        F.bit_or(F.expr("shiftleft(1L, CAST(__ducklake_del_number % 64 AS INT))")).alias(
            "__ducklake_mask"
        )
    )
    kept = numbered.join(
        F.broadcast(masks_by_run),
        F.shiftright("__ducklake_row_number", _CHUNK_BITS) == F.col("__ducklake_del_chunk"),
        "left",
    ).where(
        F.col("__ducklake_mask").isNull()
        | F.expr("shiftright(__ducklake_mask, CAST(__ducklake_row_number % 64 AS INT)) & 1 = 0")
    )
    return kept.drop("__ducklake_row_number", "__ducklake_del_chunk", "__ducklake_mask")


def delete_positions(
    spark: SparkSession,
    delete_files: Sequence[DeleteFile],
    inlined_deletes: Sequence[Any],
    offsets: Mapping[int, int] | None = None,
) -> DataFrame | None:
    """(data file id, position, deleting snapshot) of every delete in these delete files
    (per-row snapshot ids of partial files, else the file's begin) and inlined deletes;
    with `offsets`, also each data file's `__ducklake_del_off` from it."""
    parts = []
    off = offsets or {}
    if delete_files:
        match = _file_match(
            [d.path for d in delete_files], [d.file_size_bytes for d in delete_files]
        )
        delete_info = {
            "__ducklake_del_fid": [d.data_file_id for d in delete_files],
            "__ducklake_del_begin": [d.begin_snapshot for d in delete_files],
            "__ducklake_del_off": [off.get(d.data_file_id, 0) for d in delete_files],
        }
        schema = T.StructType(
            [
                T.StructField("pos", T.LongType(), True, {FIELD_ID: DELETE_POS_FIELD_ID}),
                T.StructField(ROW_SNAPSHOT, T.LongType(), True, {FIELD_ID: SNAPSHOT_FIELD_ID}),
            ]
        )
        deletes = read_parquet(spark, schema, [d.path for d in delete_files]).select(
            "*", match.per_row.alias("__ducklake_del_path")
        )
        read = match.attach(
            spark, deletes, "__ducklake_del_path", delete_info, few_rows=True
        ).select(
            F.col("__ducklake_del_fid").alias(_FILE_ID),
            F.col("pos").alias("__ducklake_del_pos"),
            F.coalesce(F.col(ROW_SNAPSHOT), F.col("__ducklake_del_begin")).alias(DELETE_SNAPSHOT),
            F.col("__ducklake_del_off"),
        )
        parts.append(read)
    if inlined_deletes:
        rows = [
            (d.data_file_id, d.position, d.begin_snapshot, off.get(d.data_file_id, 0))
            for d in inlined_deletes
        ]
        parts.append(
            spark.createDataFrame(
                rows,
                f"{_FILE_ID} bigint, __ducklake_del_pos bigint, {DELETE_SNAPSHOT} bigint, "
                "__ducklake_del_off bigint",
            )
        )
    if not parts:
        return None
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out


def read_back(
    spark: SparkSession,
    table: StagedTable,
    root: str,
    files: Sequence[DataFileSpec],
    row_ids: bool,
) -> list[tuple[Any, ...]]:
    """The rows of a few just-written, unregistered files (a result that turned out
    small enough to inline), in the order they were written; with `row_ids` each row
    ends with its `_ducklake_internal_row_id`."""
    columns = table.column_list()
    schema = spark_schema(columns, reading=True)
    out_schema = spark_schema(columns)
    select = [_logical(c) for c in columns]
    if row_ids:
        schema = schema.add(T.StructField(ROW_ID, T.LongType(), True, {FIELD_ID: ROW_ID_FIELD_ID}))
        out_schema = out_schema.add(ROW_ID, T.LongType())
        select.append(F.col(ROW_ID))
    parts = [
        read_parquet(spark, schema, [root + f.path]).select(
            F.lit(i).alias("__ducklake_file_order"),
            F.col("_metadata.row_index").alias(_POS),
            *select,
        )
        for i, f in enumerate(files)
        if f.record_count
    ]
    if not parts:
        return []
    union = parts[0]
    for part in parts[1:]:
        union = union.unionByName(part)
    ordered = union.orderBy("__ducklake_file_order", _POS).drop("__ducklake_file_order", _POS)
    return python_rows(ordered.collect(), out_schema)  # at most the inlining limit
