"""DataFrame -> DuckLake data files through Spark's own Parquet writer.

Spark's writer runs in the JVM: no rows cross to Python workers, and the files are the
bytes `df.write.parquet` makes. It puts field ids on top-level columns (the session
enables `spark.sql.parquet.fieldId.write.enabled`), which is all DuckDB needs for flat
tables. Lists and maps need ids on their elements and DuckDB-style partition
directories need our own layout, so those tables, and types or options Spark's writer
cannot express as DuckDB does, stay on the Arrow writer (write.py / arrow.py).

Stats come from the footers the write produced, read by one small Spark job.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..lake import STAGING_PREFIX, Column, is_decimal, is_url
from .arrow import FooterTask, WriteOptions, file_facts, nan_from_footer
from .compat import CLIENT_IS_SPARK_4
from .notices import notice
from .types import FIELD_ID, ROW_ID_FIELD_ID, SNAPSHOT_FIELD_ID, spark_type

log = logging.getLogger("dbt.adapters.ducklake.spark")

# DuckLake types Spark writes with the physical and logical types DuckDB's writer uses
_FLAT_TYPES = frozenset(
    {
        "boolean",
        "int8",
        "int16",
        "int32",
        "int64",
        "float32",
        "float64",
        "varchar",
        "json",
        "blob",
        "date",
        "timestamp",
        "timestamptz",
        "variant",  # Spark writes it as DuckDB does: a Variant-annotated group
    }
)
# DuckLake's parquet_compression values Spark's writer has built in
_CODECS = {"snappy": "snappy", "zstd": "zstd", "gzip": "gzip", "uncompressed": "uncompressed"}
# bytes per value in memory, by type; strings and blobs are taken at 32
_WIDTH = {
    "boolean": 1,
    "int8": 1,
    "int16": 2,
    "int32": 4,
    "int64": 8,
    "float32": 4,
    "float64": 8,
    "date": 4,
    "timestamp": 8,
    "timestamptz": 8,
}
_VARIABLE_WIDTH = 32
# up to this many files, the driver reads their footers itself (a few ms each)
_DRIVER_FOOTERS = 64


def native_writable(columns: Sequence[Column], options: WriteOptions, partitioned: bool) -> bool:
    """Whether Spark's writer can make these files exactly as the Arrow writer would.

    Not on object stores: Spark's commit protocol and the rename into DuckDB's names
    would copy every file twice there (S3 renames are copies); the Arrow writer puts
    each file in place once."""
    return (
        not partitioned
        and not options.encrypted  # sealed files are written by pyarrow (sealed.py)
        and not is_url(options.root)
        and options.compression in _CODECS
        and options.compression_level is None
        and all(c.type in _FLAT_TYPES or is_decimal(c.type) for c in columns)
    )


def write_native(
    data: DataFrame,
    columns: Sequence[Column],
    options: WriteOptions,
    *,
    row_ids: bool,
    snapshot_ids: bool,
) -> list[dict[str, Any]]:
    """Write `data` (the table's columns, then row ids / snapshot ids when asked) as
    files in the table directory; one fact row per non-empty file.

    Spark writes into a staging directory of its own (its commit protocol needs one);
    the finished files are renamed into place, so a failed write leaves nothing.
    """
    fields = [
        F.col(f"`{c.name}`").cast(spark_type(c)).alias(c.name, metadata={FIELD_ID: c.column_id})
        for c in columns
    ]
    extra = []
    if row_ids:
        extra.append(("_ducklake_internal_row_id", ROW_ID_FIELD_ID))
    if snapshot_ids:
        extra.append(("_ducklake_internal_snapshot_id", SNAPSHOT_FIELD_ID))
    for name, field_id in extra:
        fields.append(F.col(name).cast("bigint").alias(name, metadata={FIELD_ID: field_id}))
    out = data.select(*fields)
    staging = f"{options.root}{STAGING_PREFIX}{uuid.uuid4()}/"
    try:
        rows_per_file = _rows_per_file(out, columns, options, f"{staging[:-1]}-sample/")
        writer = _parquet_writer(out, options, rows_per_file)
        if row_ids and not snapshot_ids:
            # the new versions of updated rows (UPDATE, MERGE) keep their row ids: with
            # Parquet's v2 encodings those (and other increasing integers) are stored as
            # small deltas, a third of the PLAIN bytes of a 1% spread MERGE; DuckDB and
            # Spark read v2 pages. Compaction keeps v1, its files are read most.
            writer = writer.option("parquet.writer.version", "v2")
        writer.parquet(staging)
        # DuckDB's layout and names: ducklake-<uuid>.parquet in the table directory
        written = []
        for name in sorted(options.files.list_names(staging)):
            if name.endswith(".parquet") and not name.startswith("."):
                stored = f"ducklake-{uuid.uuid4()}.parquet"
                options.files.rename(staging + name, options.root + stored)
                written.append(stored)
    finally:  # what is left is Spark's scratch and checksum files, or a failed write
        options.files.delete_dir(staging)
    if not written:
        return []
    facts = _footer_facts(data, written, columns, options)
    empty = [f for f in facts if f["record_count"] == 0]
    for f in empty:  # Spark writes one empty file for an empty result
        options.files.delete(options.root + f["path"])
    log.info("Spark's Parquet writer wrote %s file(s)", len(facts) - len(empty))
    return [f for f in facts if f["record_count"] > 0]


def _parquet_writer(out: DataFrame, options: WriteOptions, rows_per_file: int) -> Any:
    if options.row_group_size != WriteOptions.row_group_size and not CLIENT_IS_SPARK_4:
        notice(
            f"parquet_row_group_size {options.row_group_size} is not applied: Spark 3.5's "
            "Parquet writer (parquet-mr 1.13) has no row count limit; it needs Spark 4.0"
        )
    return (
        out.write.option("compression", _CODECS[options.compression])
        .option("maxRecordsPerFile", str(rows_per_file))
        .option("parquet.block.row.count.limit", str(options.row_group_size))
        .option("mapreduce.fileoutputcommitter.marksuccessfuljobs", "false")
    )


def _rows_per_file(
    out: DataFrame, columns: Sequence[Column], options: WriteOptions, scratch: str
) -> int:
    """Rows per file so that files roll over near `target_file_size` of Parquet bytes,
    as DuckDB's do. Spark's writer can only count rows, so the compressed bytes per row
    come from the table's files so far, else from a small sample written first when
    Spark expects more data than one file holds (a query that shuffles is not sampled:
    its LIMIT would compute it twice; it gets the in-memory width, an upper bound)."""
    target = options.target_file_size
    if options.bytes_per_row:
        return max(1, int(target / options.bytes_per_row))
    width = sum(_WIDTH.get(c.type, 16 if is_decimal(c.type) else _VARIABLE_WIDTH) for c in columns)
    upper_bound = max(1, target // max(1, width))
    jdf = getattr(out, "_jdf", None)
    if jdf is None:
        return upper_bound
    execution = jdf.queryExecution()
    plan = execution.executedPlan()
    if "Exchange" in plan.toString():
        return upper_bound
    # each task writes its own files: only a task expected to write more than the
    # target (twice its even share, for skew) can need a second file
    tasks = max(1, int(plan.outputPartitioning().numPartitions()))
    expected = int(str(execution.optimizedPlan().stats().sizeInBytes()))
    if 2 * expected / tasks <= target:
        return upper_bound
    try:
        _parquet_writer(out.limit(_SAMPLE_ROWS), options, _SAMPLE_ROWS).parquet(scratch)
        files = options.files
        sample = [scratch + n for n in files.list_names(scratch) if n.endswith(".parquet")]
        sizes = [files.size(path) for path in sample]
        rows = sum(files.read_metadata(path).num_rows for path in sample)
    finally:
        options.files.delete_dir(scratch)
    if rows < _SAMPLE_ROWS:
        return upper_bound  # the whole result fits in the sample: one file
    per_row = sum(sizes) / rows
    log.info("target_file_size: about %.1f compressed bytes per row, from a sample", per_row)
    return max(1, int(target / per_row))


_SAMPLE_ROWS = 8192


def _footer_facts(
    data: DataFrame, stored: list[str], columns: Sequence[Column], options: WriteOptions
) -> list[dict[str, Any]]:
    """Footer facts of the written files: a few are read here (no job to start), many
    where the files are (executors)."""
    if len(stored) <= _DRIVER_FOOTERS:
        root, files = options.root, options.files
        footers = [files.read_metadata(root + p) for p in stored]
        # a file with a NaN needs a column read for its bounds: that is executors' work
        if not any(any(nan_from_footer(f, columns).values()) for f in footers):
            return [
                file_facts(files, root + p, columns, None, p, meta=f)
                for p, f in zip(stored, footers, strict=True)
            ]
    spark = data.sparkSession
    paths = spark.createDataFrame([(p,) for p in stored], "path string")
    task = FooterTask(list(columns), options.root, options.files)
    rows = paths.repartition(min(len(stored), 64)).mapInArrow(task, _FACTS_SCHEMA).collect()
    by_path = {r.path: r.asDict() for r in rows}
    return [by_path[p] for p in stored]


_FACTS_SCHEMA = (
    "path string, record_count bigint, file_size bigint, footer_size bigint, stats string"
)
