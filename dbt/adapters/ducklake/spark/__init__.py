"""The Spark engine: scans and writes of DuckLake tables. Imports lake/ and pyspark, never dbt."""
