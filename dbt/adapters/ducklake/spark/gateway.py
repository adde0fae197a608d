"""A py4j connection to a driver JVM that is already running (one launched early, or a
kept JVM), made without touching the process's environment.

pyspark connects to a running gateway only when `PYSPARK_GATEWAY_PORT` and
`PYSPARK_GATEWAY_SECRET` are in `os.environ`. Setting and deleting them from the
prestart's thread raced with dbt's main thread, which walks `os.environ` while it
builds an error (a key deleted mid-walk raised `KeyError: 'PYSPARK_GATEWAY_PORT'`
from dbt's parse). So the connection is made here, the way pyspark makes it: a pinned
thread client unless `PYSPARK_PIN_THREAD` is false, then the same class imports pyspark
gives the JVM view (its Python code looks classes up by short name).
"""

from __future__ import annotations

import os
from typing import Any

from .versions import client_is_spark_4

# the JVM view's imports pyspark's own launch makes, per client line (3.5 imports all of
# `org.apache.spark.sql`; 4.x the classic session's package and three names)
_COMMON_IMPORTS = (
    "org.apache.spark.SparkConf",
    "org.apache.spark.api.java.*",
    "org.apache.spark.api.python.*",
    "org.apache.spark.ml.python.*",
    "org.apache.spark.mllib.api.python.*",
    "org.apache.spark.resource.*",
)
_SQL_IMPORTS_3 = ("org.apache.spark.sql.*",)
_SQL_IMPORTS_4 = (
    "org.apache.spark.sql.Encoders",
    "org.apache.spark.sql.OnSuccessCall",
    "org.apache.spark.sql.functions",
    "org.apache.spark.sql.classic.*",
)
_TAIL_IMPORTS = (
    "org.apache.spark.sql.api.python.*",
    "org.apache.spark.sql.hive.*",
    "scala.Tuple2",
)


def view_imports(spark_4: bool) -> tuple[str, ...]:
    """The class imports pyspark's launch gives the gateway's JVM view."""
    sql = _SQL_IMPORTS_4 if spark_4 else _SQL_IMPORTS_3
    return _COMMON_IMPORTS + sql + _TAIL_IMPORTS


def connect_gateway(port: int, secret: str, process: Any = None) -> Any:
    """A py4j gateway to the JVM listening on `port`, as pyspark's launch returns it;
    `process` is the JVM's, when this process started it (pyspark keeps it as `proc`)."""
    from py4j.clientserver import ClientServer, JavaParameters, PythonParameters
    from py4j.java_gateway import GatewayParameters, JavaGateway, java_import

    gateway: Any
    if os.environ.get("PYSPARK_PIN_THREAD", "true").lower() == "true":
        gateway = ClientServer(
            java_parameters=JavaParameters(port=port, auth_token=secret, auto_convert=True),
            python_parameters=PythonParameters(port=0, eager_load=False),
        )
    else:
        gateway = JavaGateway(
            gateway_parameters=GatewayParameters(port=port, auth_token=secret, auto_convert=True)
        )
    gateway.proc = process
    for name in view_imports(client_is_spark_4()):
        java_import(gateway.jvm, name)
    return gateway
