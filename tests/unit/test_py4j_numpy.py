"""pyspark's py4j converters of numpy values are asked about numpy values only
(`session._NumpyValuesOnly`): their own check imports `pyspark.testing.utils` (pandas,
scipy, …; up to 1.2 s) at the first py4j call of every process."""

from __future__ import annotations

import subprocess
import sys

CHILD = """
import sys
import pyspark.sql.types
from py4j import protocol
from dbt.adapters.ducklake.spark import session

session._numpy_converters_ask_numpy_values_only()
session._numpy_converters_ask_numpy_values_only()  # twice: wrapped once
wrapped = [type(c).__name__ for c in protocol.INPUT_CONVERTER]
assert wrapped.count("_NumpyValuesOnly") == 2, wrapped
for value in ("text", 1, 2.5, [1, 2], {"a": 1}, None):  # what our py4j calls pass
    for converter in protocol.INPUT_CONVERTER:
        converter.can_convert(value)
assert "pyspark.testing.utils" not in sys.modules
import numpy
numpy_ones = [c for c in protocol.INPUT_CONVERTER if type(c).__name__ == "_NumpyValuesOnly"]
assert any(c.can_convert(numpy.int64(3)) for c in numpy_ones)
assert any(c.can_convert(numpy.array([1, 2])) for c in numpy_ones)
assert not any(c.can_convert(numpy.array([[1], [2]])) for c in numpy_ones)  # 2-D: as pyspark
print("ok")
"""


def test_the_first_py4j_arguments_do_not_import_pysparks_test_utilities() -> None:
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "ok"


def test_numpy_mid_import_on_another_thread_is_no_numpy_value(monkeypatch) -> None:
    """numpy's module is in sys.modules before its types while another thread imports it
    (the warm-up imports pandas beside the prestart's py4j calls): the check says no,
    where reading `numpy.ndarray` raised and failed the background start."""
    import types

    from dbt.adapters.ducklake.spark.session import _NumpyValuesOnly

    class Inner:
        def can_convert(self, obj: object) -> bool:
            return True

    monkeypatch.setitem(sys.modules, "numpy", types.ModuleType("numpy"))  # no types yet
    assert _NumpyValuesOnly(Inner()).can_convert("text") is False
