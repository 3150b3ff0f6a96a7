"""A Spark command's stderr holds only what replctl itself writes (issue 17): the driver JVM's own lines go to
the driver log under the home, which every Spark failure names."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from replctl.adapters.spark.session import driver_log, spark_failures
from replctl.errors import EnvironmentFailure

pytestmark = pytest.mark.spark


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "replctl", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_a_spark_command_writes_no_line_of_its_own_jvm_on_stderr(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("REPLCTL_")},
        "REPLCTL_DB": f"sqlite:///{tmp_path / 'catalog.db'}",
        "REPLCTL_STORE": str(tmp_path / "logs"),
        "REPLCTL_SPARK_MASTER": "local[1]",
        "REPLCTL_HOME": str(home),
    }
    for args in (("init",), ("location", "add", "A"), ("log", "append", "A", "--event", '{"key": "e1"}')):
        assert _run(env, *args).returncode == 0
    # `log verify` reads the segments with a Spark job: a driver JVM starts in this process.
    done = _run(env, "log", "verify", "A", "--json")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert json.loads(done.stdout)["logs"] == [{"location": "A", "ok": True, "violations": []}]
    lines = driver_log(home).read_text().splitlines()
    assert lines[0].startswith("--- replctl pid ") and lines[0].endswith(": driver JVM for local[1]")
    assert any("Setting default log level" in line for line in lines[1:])


def test_a_spark_failure_names_the_driver_log(spark: Any) -> None:
    from spark_session import HOME

    with pytest.raises(EnvironmentFailure) as caught, spark_failures("probe"):
        spark.sql("select no_such_column").collect()
    assert caught.value.code == "spark"
    message = str(caught.value)
    assert message.startswith("probe failed in Spark: [UNRESOLVED_COLUMN")
    assert message.endswith(f" (Spark's log: {(HOME / 'driver.log').resolve()})")
