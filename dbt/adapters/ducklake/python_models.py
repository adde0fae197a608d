"""dbt Python models on the adapter's own SparkSession, with no job service in between.

`model(dbt, session)` runs in this process; its DataFrame becomes a Spark temporary
view, and the table or incremental materialization then writes `select * from` that
view exactly as it writes a SQL model's query: the same engine, layout, strategies,
commit message and single snapshot.
"""

from __future__ import annotations

import re
import traceback
from pathlib import Path
from typing import Any

from dbt_common.exceptions import DbtRuntimeError
from pyspark.sql import DataFrame, SparkSession

from .environment import LakeHandle
from .spark.errors import spark_error_text
from .spark.session import label_jobs

PYTHON_MATERIALIZATIONS = ("table", "incremental")


def python_view(schema: str, identifier: str) -> str:
    """The temporary view holding a Python model's result, unique per relation because
    every dbt thread shares one SparkSession."""
    return "__dbt_python_" + re.sub(r"\W", "_", f"{schema}__{identifier}")


class ModelSession:
    """The SparkSession a model receives. `sql()` and `table()` also resolve lake
    relations (`dbt.this`, `schema.table`), which Spark's own catalog does not know;
    everything else is the session itself, and `isinstance(session, SparkSession)` holds."""

    def __init__(self, handle: LakeHandle):
        self._handle = handle

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return type(self._handle.spark)

    def sql(self, query: str, args: Any = None, **kwargs: Any) -> DataFrame:
        if args is not None or kwargs:  # parameterised queries go to Spark as they are
            return self._handle.spark.sql(query, args, **kwargs)
        return self._handle.sql.query(query)

    def table(self, name: str) -> DataFrame:
        return self._handle.sql.query(f"SELECT * FROM {name}")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handle.spark, name)


def run_python_model(
    handle: LakeHandle, model: dict[str, Any], compiled_code: str, project_root: str | None
) -> str:
    """Run the model and register its result; returns the temporary view's name."""
    name = f"{model['schema']}.{model['alias']}"
    path = model.get("original_file_path") or f"{name}.py"
    session = ModelSession(handle)
    label_jobs(handle.spark, handle.job_group, f"python model {name}")
    namespace: dict[str, Any] = {"__name__": f"dbt_python_model_{model['alias']}"}
    try:
        # dbt's compiled code is the model's file followed by dbt's helpers: compiled
        # under the file's path, tracebacks point at the user's own lines
        code = _aligned(compiled_code, _source(project_root, path) or model.get("raw_code") or "")
        exec(compile(code, path, "exec"), namespace)
        dbt = namespace["dbtObj"](session.table)
        result = namespace["model"](dbt, session)
    except Exception as exc:
        raise DbtRuntimeError(
            f"Python model {name} failed at {_where(exc, path)}: {type(exc).__name__}: "
            f"{_first_line(exc)}"
        ) from exc
    frame = _as_spark_frame(result, handle.spark, name, path)
    view = python_view(model["schema"], model["alias"])
    frame.createOrReplaceTempView(view)
    return view


def _aligned(compiled: str, raw: str) -> str:
    """dbt strips the file's leading blank lines; put back, line numbers are the file's."""
    missing = _leading_newlines(raw) - _leading_newlines(compiled)
    return "\n" * max(missing, 0) + compiled


def _source(project_root: str | None, path: str) -> str | None:
    try:
        return Path(project_root or ".", path).read_text(encoding="utf-8")
    except OSError:  # a package's model, or a file gone since parsing
        return None


def _leading_newlines(text: str) -> int:
    return text[: len(text) - len(text.lstrip())].count("\n")


def _as_spark_frame(result: Any, spark: SparkSession, name: str, path: str) -> DataFrame:
    if isinstance(result, DataFrame):
        return result
    kind = f"{type(result).__module__}.{type(result).__qualname__}"
    if kind.startswith("pandas.") and kind.endswith("DataFrame"):
        return spark.createDataFrame(result)
    if kind.startswith("pyspark.pandas.") and hasattr(result, "to_spark"):
        frame: DataFrame = result.to_spark()
        return frame
    raise DbtRuntimeError(
        f"Python model {name} ({path}) returned {kind}; model(dbt, session) must return a "
        "Spark DataFrame, a pandas DataFrame or a pandas-on-Spark DataFrame"
    )


def _where(exc: BaseException, path: str) -> str:
    """The deepest line of the model's file in the traceback, as `file:line`."""
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == path]
    return f"{path}:{lines[-1]}" if lines else path


def _first_line(exc: BaseException) -> str:
    if type(exc).__module__.startswith("pyspark"):  # analysis errors: Spark's one line
        return spark_error_text(exc)
    text = str(exc).strip()
    return text.splitlines()[0] if text else "(no message)"
