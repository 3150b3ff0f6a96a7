"""Spark and the store at fault: a clear line and exit 6 (exit 2 for a mistyped master), never a hang.

Issue 14 item 5 and issue 19 item 9: a Spark Connect address where nothing answers, or where something that is
not Spark Connect listens, fails within ten seconds; a master URL Spark would not accept says so; a store on a
full or read-only file system says so, instead of py4j's "An error occurred while calling oNNN.parquet".
The file systems are real: a small tmpfs mounted for the test (skipped where mounting is not allowed).
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from clitool import Replctl
from pg import free_port
from spark_session import HOME

from replctl.adapters.spark.session import driver_log

REMOTE_HINT = (
    "check --spark-remote / REPLCTL_SPARK_REMOTE and that the Spark Connect server runs and is reachable"
)
STORE_HINT = "check that the log store has free space and is writable (--store / REPLCTL_STORE)"


@pytest.fixture
def rc(tmp_path: Path) -> Replctl:
    """An initialised catalog with one location A and nothing appended."""
    tool = Replctl(tmp_path)
    tool("init")
    tool("location", "add", "A")
    return tool


def test_a_spark_connect_port_that_is_closed_fails_at_once_with_the_token_masked(rc: Replctl) -> None:
    port = free_port()
    started = time.monotonic()
    doc = rc.json(
        "--spark-remote",
        f"sc://127.0.0.1:{port}/;token=tk-98765",
        "log",
        "append",
        "A",
        "--generate",
        "3",
        expect=6,
    )
    assert time.monotonic() - started < 10
    assert doc["error"] == {
        "code": "spark-unreachable",
        "message": f"Spark Connect at sc://127.0.0.1:{port}/;token=*** does not answer: Connection refused",
        "hint": REMOTE_HINT,
    }
    assert rc.location("A")["seq"] == 0


def test_a_spark_connect_address_where_nothing_speaks_fails_within_ten_seconds(rc: Replctl) -> None:
    with socket.socket() as silent:  # accepts connections (the kernel does) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        started = time.monotonic()
        out = rc(
            "--spark-remote", f"sc://127.0.0.1:{port}", "log", "append", "A", "--generate", "3", expect=6
        )
        elapsed = time.monotonic() - started
    assert elapsed < 10
    assert out.stderr == (
        f"error: Spark Connect at sc://127.0.0.1:{port} does not answer: nothing spoke Spark Connect within 6 s\n"
        f"hint: {REMOTE_HINT}\n"
    )


def test_a_master_url_spark_would_not_accept_exits_2_saying_so(rc: Replctl) -> None:
    out = rc("--spark-master", "locl[2]", "log", "append", "A", "--generate", "3", expect=2)
    assert out.stderr == (
        "error: not a Spark master URL: 'locl[2]'\n"
        "hint: use local[*], local[N], spark://HOST:PORT, yarn or k8s://https://HOST:PORT (--spark-master)\n"
    )
    assert rc.location("A")["seq"] == 0


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs mounted for the test, unmounted after it."""
    mount = tmp_path / "fs"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], capture_output=True, check=False
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.mark.spark
def test_a_full_store_exits_6_naming_the_cause_and_appends_nothing(tmp_path: Path, small_fs: Path) -> None:
    rc = Replctl(tmp_path)
    rc.env["REPLCTL_STORE"] = str(small_fs / "logs")
    rc("init")
    rc("location", "add", "A")
    filler = os.open(small_fs / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        with pytest.raises(OSError, match="No space left"):
            while True:
                os.write(filler, b"\0" * 4096)
    finally:
        os.close(filler)
    doc = rc.json("log", "append", "A", "--generate", "50", expect=6)
    assert doc["error"] == {
        "code": "store",
        "message": "append to A failed in the store: java.io.IOException: No space left on device"
        f" (Spark's log: {driver_log(HOME)})",
        "hint": STORE_HINT,
    }
    assert rc.location("A")["seq"] == 0


@pytest.mark.spark
def test_a_read_only_store_exits_6_naming_the_cause_and_appends_nothing(
    tmp_path: Path, small_fs: Path
) -> None:
    rc = Replctl(tmp_path)
    rc.env["REPLCTL_STORE"] = str(small_fs / "logs")
    rc("init")
    rc("location", "add", "A")
    subprocess.run(["mount", "-o", "remount,ro", str(small_fs)], check=True)
    doc = rc.json("log", "append", "A", "--generate", "50", expect=6)
    assert doc["error"]["code"] == "store"
    assert doc["error"]["message"].startswith(
        f"append to A failed in the store: java.io.IOException: Mkdirs failed to create file:{small_fs}/logs/A/"
    )
    assert doc["error"]["hint"] == STORE_HINT
    assert rc.location("A")["seq"] == 0
