"""Which file each scanned row came from: paths as Spark sees them, and the match of
rows to catalog entries (by size, by URI or by decoded path)."""

from __future__ import annotations

import logging
import os
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .compat import scala_seq
from .encrypted import keyed_read_options
from .errors import ReservedColumnError
from .local_rows import local_frame

log = logging.getLogger("dbt.adapters.ducklake.spark")

ROW_ID = "_ducklake_internal_row_id"
ROW_SNAPSHOT = "_ducklake_internal_snapshot_id"
FILE_ID_KEY = "__ducklake_del_fid_key"
DELETE_FILE_ID_COL = FILE_ID_KEY
DELETE_POS_COL = "__ducklake_del_pos"
DELETE_SNAPSHOT = "__ducklake_del_snapshot"
FILE_ID_COL = "__ducklake_fid"
POS_COL = "__ducklake_pos"
POS_KEY = "__ducklake_pos"

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


def read_parquet(
    spark: SparkSession,
    schema: T.StructType,
    paths: Sequence[str],
    keys: Mapping[str, str] | None = None,
    *,
    source: str = "parquet",
    options: Mapping[str, str] | None = None,
) -> DataFrame:
    """One Parquet scan over exactly these files (no directory discovery); `keys` gives
    the base64 key of each encrypted one (see encrypted.py). `source` and `options`
    name another Parquet data source (the adapter's `DELETES_SOURCE`) and its options.

    Classic PySpark hands a path list to the JVM one py4j call per path (seconds for
    thousands of files); here the list crosses as one string. Spark Connect sends it in
    one message anyway.
    """
    reader = spark.read.schema(schema).option("recursiveFileLookup", "true")
    if keys:
        reader = reader.options(**keyed_read_options(spark, keys))
    if options:
        reader = reader.options(**options)
    reader = reader.format(source)
    jreader = getattr(reader, "_jreader", None)
    jvm = getattr(getattr(spark, "_sc", None), "_jvm", None)
    if jreader is None or jvm is None or len(paths) < _MANY_FILES:
        return reader.load(list(paths))
    folder = _folder_of_exactly(paths)
    if folder is not None:
        whole = DataFrame(jreader.load(_jvm_seq(jvm, [folder])), spark)
        # what Spark listed is what the catalog named, unless a file came in between
        if len(whole._jdf.inputFiles()) == len(paths):
            return whole
    return DataFrame(jreader.load(_jvm_seq(jvm, paths)), spark)


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
    return scala_seq(jvm, jlist)


def _norm(path: str) -> str:
    return path if "://" in path else os.path.normpath(path)


@dataclass(frozen=True)
class FileMatch:
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
        table on the size (`hashed_index`), or for a path key from a CASE, each value
        from a constant array, so no broadcast side is built (one Spark job less). A path
        key takes this way only for `few_rows` (delete files), where comparing strings
        per row costs less than the job. Otherwise a broadcast join. With a size match, a
        row of an unknown file fails the query; with a path match, it is dropped.
        """
        modulus = perfect_modulus(self.keys) if self.checked else None
        if modulus is not None or (few_rows and len(self.keys) <= INLINE_FILES):
            # SQL text: one py4j call per expression, not one per constant
            if modulus is not None:
                index = hashed_index(row_key, self.keys, modulus)
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
        return self._joined(spark, data, row_key, info)

    def _joined(
        self,
        spark: SparkSession,
        data: DataFrame,
        row_key: str,
        info: Mapping[str, Sequence[int | None]],
    ) -> DataFrame:
        """`attach` as a broadcast join with a table of the keys and their values."""
        names = list(info)
        rows = [(key, *vs) for key, *vs in zip(self.keys, *info.values(), strict=True)]
        table = local_frame(
            spark,
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
INLINE_FILES = 64
# Up to this many data files find theirs by size through a constant table.
HASHED_FILES = 128


def perfect_modulus(sizes: Sequence[Any]) -> int | None:
    """A small m giving every size its own `size % m` (a few thousand tries at most:
    over 128 files rows are joined instead)."""
    if not sizes or len(sizes) > HASHED_FILES:
        return None
    for m in range(len(sizes), len(sizes) + 4096):
        if len({k % m for k in sizes}) == len(sizes):
            return m
    return None


def hashed_index(row_key: str, sizes: Sequence[int], modulus: int) -> SparkColumn:
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


def file_match(paths: Sequence[str], sizes: Sequence[int | None]) -> FileMatch:
    if MATCH_BY_SIZE and all(s for s in sizes) and len(set(sizes)) == len(sizes):
        return FileMatch(list(sizes), "bigint", F.col("_metadata.file_size"), True)
    uris = [spark_uri(p) for p in paths]
    if all(u is not None for u in uris):
        return FileMatch(uris, "string", F.col("_metadata.file_path"), False)
    return FileMatch(
        [_norm(p) for p in paths], "string", local_path(F.col("_metadata.file_path")), False
    )


HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


def hive_value(key: str) -> SparkColumn:
    """Per row, the value of its file's Hive directory `key=value` as a string, decoded
    as DuckDB decodes it (percent escapes); NULL for `__HIVE_DEFAULT_PARTITION__` or
    a path without that directory. For files added with `hive_partitioning`."""
    plain_path = local_path(F.col("_metadata.file_path"))
    raw = F.regexp_extract(plain_path, "(?:^|/)\\Q" + key + "\\E=([^/]*)/", 1)
    value = F.url_decode(F.regexp_replace(raw, r"\+", "%2B"))
    return F.when((raw == "") | (value == HIVE_NULL), F.lit(None)).otherwise(value)


# Spark's own name for the column its Parquet readers fill with each row's position in its
# file (what `_metadata.row_index` reads). Asked for as a plain field of the read schema it
# skips building the metadata struct: a 10M-row scan filtered by position took 1.12x the
# plain read this way against 1.37x through `_metadata.row_index` (bench/engine_paths.py).
ROW_INDEX = "_tmp_metadata_row_index"


def positioned(schema: T.StructType) -> tuple[T.StructType, str]:
    """`schema` with Spark's row-position field added, and the column to read it by.
    A data column of that name would be taken for the positions (and Spark refuses it
    beside `_metadata.row_index`): refused, naming it."""
    for f in schema.fields:
        if f.name.lower() == ROW_INDEX:
            raise ReservedColumnError(
                f"column {f.name!r}: Spark's Parquet reader reserves this name for row "
                "positions, so rows of a table with it cannot be located in their files "
                "(DELETE, UPDATE, MERGE, row ids, reads of files with deletes); rename the column"
            )
    # a new StructType: `StructType.add` would change the caller's schema in place
    return T.StructType([*schema.fields, T.StructField(ROW_INDEX, T.LongType(), True)]), ROW_INDEX


def with_position(df: DataFrame, match: FileMatch, position: str) -> DataFrame:
    """`df` (read with `positioned`'s schema) with its rows' file and position columns
    in place of Spark's."""
    out = df.select("*", match.per_row.alias("__ducklake_path"), F.col(position).alias(POS_KEY))
    return out.drop(ROW_INDEX)
