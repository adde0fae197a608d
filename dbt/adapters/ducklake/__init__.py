"""dbt adapter `type: ducklake`: Spark runs the models, DuckLake 1.0 keeps the tables."""

from dbt.adapters.base import AdapterPlugin

from dbt.include import ducklake

from .credentials import DucklakeCredentials
from .impl import DucklakeAdapter

Plugin = AdapterPlugin(
    adapter=DucklakeAdapter,  # type: ignore[arg-type]
    credentials=DucklakeCredentials,
    include_path=ducklake.PACKAGE_PATH,
    dependencies=["spark"],  # dbt-spark's Spark SQL macros are the fallback
)
