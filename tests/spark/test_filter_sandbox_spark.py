"""The filter sandbox against the running Spark (issue 19 item 6): the function list, the examples, and
variable substitution switched off in the session replctl builds."""

from __future__ import annotations

from typing import Any

import pytest
from filter_examples import EXAMPLES, SPARK_FUNCTIONS
from pyspark.sql import functions as F

from replctl.adapters.spark.jobs import validate_filter
from replctl.adapters.spark.schema import FILTER_DDL
from replctl.filterexpr import parse_filter

pytestmark = pytest.mark.spark


def test_the_checked_in_function_list_is_what_this_spark_registers(spark: Any) -> None:
    live = sorted({row[0] for row in spark.sql("SHOW SYSTEM FUNCTIONS").collect()})
    assert live == SPARK_FUNCTIONS  # a new Spark: regenerate the list and classify each new name


def test_every_allowed_example_normalises_to_a_boolean_spark_resolves(spark: Any) -> None:
    for name, text in sorted(EXAMPLES.items()):
        normalised = parse_filter(text).normalised
        try:
            validate_filter(spark, normalised)
        except Exception as exc:  # name the example that Spark does not take
            raise AssertionError(f"{name}: {normalised!r}: {exc}") from exc


def test_issue19_6_variable_substitution_is_off_in_the_session(spark: Any, monkeypatch: Any) -> None:
    monkeypatch.setenv("REPLCTL_DB", "postgresql://u:planted-secret@h/db")
    assert spark.conf.get("spark.sql.variable.substitute") == "false"
    row = spark.createDataFrame([], FILTER_DDL).select(F.expr("'${env:REPLCTL_DB}'").alias("v")).schema
    assert row["v"].dataType.simpleString() == "string"
    value = spark.range(1).select(F.expr("'${env:REPLCTL_DB}'").alias("v")).first()
    assert value is not None and value["v"] == "${env:REPLCTL_DB}"
