# A dbt Python model: it runs on the same SparkSession as the SQL models, and its
# DataFrame is written to the lake by the same engine, as one snapshot.
from pyspark.sql import functions as F


def model(dbt, session):
    dbt.config(materialized="table", commit_message="customer segments, from Python")
    revenue = dbt.ref("customer_revenue")
    segment = (
        F.when(F.col("revenue") >= 100, "high")
        .when(F.col("revenue") > 0, "regular")
        .otherwise("dormant")
    )
    return revenue.select("customer_id", "country", "revenue", segment.alias("segment"))
