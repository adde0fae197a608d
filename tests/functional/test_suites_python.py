"""dbt-tests-adapter Python model suites, subclassed unchanged: refs to versioned models
and sources, incremental merge, `dbt.config.meta_get`, and `--empty` / `--sample`
leaving a Python model's refs unfiltered."""

from __future__ import annotations

import pytest
from dbt.tests.adapter.python_model.test_python_model import (
    BasePythonEmptyTests,
    BasePythonIncrementalTests,
    BasePythonMetaGetTests,
    BasePythonModelTests,
    BasePythonSampleTests,
)

pytestmark = pytest.mark.usefixtures("without_json_artifacts")  # reads no dbt JSON artifact


class TestPythonModel(BasePythonModelTests):
    pass


class TestPythonIncremental(BasePythonIncrementalTests):
    pass


class TestPythonMetaGet(BasePythonMetaGetTests):
    pass


class TestPythonEmpty(BasePythonEmptyTests):
    pass


class TestPythonSample(BasePythonSampleTests):
    pass
