"""dbt loads this adapter's macros and project config from here."""

import os

PACKAGE_PATH = os.path.dirname(__file__)
