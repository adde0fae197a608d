"""dbt loads this adapter's macros and project config from here."""

import os

PACKAGE_PATH = os.path.dirname(__file__)

# The optional `ducklake` dbt package (`ducklake.at(...)`, `ducklake.table_changes(...)`):
# point a `local:` entry of packages.yml here and run `dbt deps`.
NAMESPACE_PACKAGE_PATH = os.path.join(PACKAGE_PATH, "dbt_package")
