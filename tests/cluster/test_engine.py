"""The managed engine (`replctl engine start|status|stop`, issue 17): one server however often it is started,
used by every Spark command while it is up, and an engine stopped in the middle of a `replicate` loses and
duplicates nothing once the command is run again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from cluster.spark_services import free_port, spark_env

pytestmark = [pytest.mark.slow, pytest.mark.spark]


class Tool:
    """`replctl` as separate processes on one catalog, store and home, with no Spark flag: the engine decides."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.env = spark_env(
            REPLCTL_DB=f"sqlite:///{root / 'catalog.db'}",
            REPLCTL_STORE=str(root / "logs"),
            REPLCTL_HOME=str(self.home),
            NO_COLOR="1",
            COLUMNS="160",
        )

    def run(
        self, *args: str, expect: int = 0, extra: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "replctl", *args],
            env={**self.env, **(extra or {})},
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == expect, f"replctl {' '.join(args)} exited {done.returncode}\n{done.stderr}"
        return done

    def json(self, *args: str, expect: int = 0) -> dict[str, Any]:
        doc: dict[str, Any] = json.loads(self.run(*args, "--json", expect=expect).stdout)
        return doc

    def events(self, location: str) -> list[tuple[int, str, int, str]]:
        return [
            (e["seq"], e["origin"], e["origin_time"], e["key"])
            for e in self.json("log", "show", location)["events"]
        ]


@pytest.fixture
def tool(tmp_path: Path) -> Iterator[Tool]:
    t = Tool(tmp_path)
    yield t
    t.run("engine", "stop")  # whatever the test did, no server outlives it


def test_engine_start_twice_starts_one_server_and_stop_ends_it(tool: Tool) -> None:
    port = str(free_port())
    with ThreadPoolExecutor(2) as pool:
        first, second = pool.map(lambda _: tool.json("engine", "start", "--port", port), range(2))
    assert sorted([first["started"], second["started"]]) == [False, True]
    assert first["pid"] == second["pid"]
    assert first["address"] == f"sc://127.0.0.1:{port}"
    again = tool.json("engine", "start", "--port", port)
    assert (again["started"], again["pid"]) == (False, first["pid"])

    status = tool.json("engine", "status")
    assert (status["state"], status["address"], status["pid"]) == ("up", first["address"], first["pid"])
    assert status["log"] == str(tool.home / "engine.log")
    shown = tool.json("config", "show")["settings"]["spark"]
    assert shown == {"value": first["address"], "source": "managed engine (replctl engine start)"}

    assert tool.json("engine", "stop") == {"ok": True, "stopped": True, "address": first["address"]}
    assert (
        not Path(f"/proc/{first['pid']}").exists()
        or b"SparkConnectServer" not in Path(f"/proc/{first['pid']}/cmdline").read_bytes()
    )
    assert tool.json("engine", "status")["state"] == "down"
    assert tool.json("config", "show")["settings"]["spark"] == {
        "value": "local[*]",
        "source": "no managed engine: local Spark",
    }


def test_a_dead_engine_is_one_line_on_stderr_and_the_command_runs_on_local_spark(tool: Tool) -> None:
    tool.run("init")
    tool.run("location", "add", "A")
    tool.run("log", "append", "A", "--event", '{"key": "e1"}')
    _record_a_dead_engine(tool)
    done = tool.run("log", "verify", "A")
    warnings = [line for line in done.stderr.splitlines() if "engine" in line]
    assert warnings == [
        "warning: the managed Spark engine at sc://127.0.0.1:1 is down (its process is gone); running on local "
        "Spark (replctl engine start restarts it)"
    ]
    assert done.stdout.strip() == "A: ok (I1–I7)"


def test_a_dead_engine_is_one_line_however_many_data_planes_the_command_opens(tool: Tool) -> None:
    """A restore's dry run reads the live log and the backup's copies, each with a data plane of its own: each
    printed the warning, so an engine killed with `kill -9` was the same line twice."""
    tool.run("init")
    tool.run("location", "add", "A")
    tool.run("log", "append", "A", "--event", '{"key": "e1"}')
    tool.run("backup", "create", "A")
    _record_a_dead_engine(tool)
    done = tool.run("recover", "location", "A", "--from-backup", "latest", "--dry-run")
    warnings = [line for line in done.stderr.splitlines() if "engine" in line]
    assert warnings == [
        "warning: the managed Spark engine at sc://127.0.0.1:1 is down (its process is gone); running on local "
        "Spark (replctl engine start restarts it)"
    ]
    assert "A: would restore backup A-" in done.stdout


def _record_a_dead_engine(tool: Tool) -> None:
    """An engine record whose process is gone, as `kill -9` of the engine leaves it."""
    tool.home.mkdir(parents=True, exist_ok=True)
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], check=False, capture_output=True, text=True
    )
    record = {
        "address": "sc://127.0.0.1:1",
        "pid": int(gone.stdout),
        "version": "4.3.0",
        "started_at": "2026-01-01T00:00:00+00:00",
        "master": "local[*]",
        "log": str(tool.home / "engine.log"),
    }
    (tool.home / "engine.json").write_text(json.dumps(record))


def test_a_version_mismatch_exits_6_with_the_fix(tool: Tool) -> None:
    tool.run("init")
    tool.run("location", "add", "A")
    tool.run("log", "append", "A", "--event", '{"key": "e1"}')
    tool.json("engine", "start", "--port", str(free_port()))
    path = tool.home / "engine.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "version": "3.5.0"}))
    doc = tool.json("log", "verify", "A", expect=6)
    assert doc["error"]["code"] == "engine-version"
    assert (
        doc["error"]["hint"]
        == "restart it with this installation: replctl engine stop && replctl engine start"
    )


def _stop_the_engine_during_a_replicate(
    tool: Tool, *, filtered: bool, restart: bool = False
) -> tuple[int, str, str, str]:
    """A, B, C in a chain, a1 and a2 at A; `replicate` on the engine, which is stopped once the first pass has
    committed, so that the next pass (B→C) meets a dead server (with `restart`, a new server started on the same
    port before that pass). Returns its exit code, stdout, stderr and the engine's address."""
    tool.run("init")
    for name in ("A", "B", "C"):
        tool.run("location", "add", name)
    tool.run("topology", "add", "A", "B")
    tool.run("topology", "add", "B", "C")
    if filtered:
        # The filter is checked on the server before the pass's job runs.
        tool.run("topology", "filter", "A", "B", "--set", "key in ('e1', 'e2')")
        tool.run("topology", "filter", "B", "C", "--set", "key in ('e1', 'e2')")
    else:
        # Logs that are not empty: an unfiltered pass into an empty log copies whole segments without a job.
        tool.run("log", "append", "B", "--event", '{"key": "b1"}')
        tool.run("log", "append", "C", "--event", '{"key": "c1"}')
    tool.run("log", "append", "A", "--event", '{"key": "e1"}', "--event", '{"key": "e2"}')
    before = _seq(tool, "B")
    port = free_port()
    tool.json("engine", "start", "--port", str(port))
    # A restart takes longer than a pause can safely wait: the command then waits until the test lets it go on.
    fifo = tool.root / "resume.fifo"
    if restart:
        os.mkfifo(fifo)
    # The first pass (A→B) commits; the command then waits at the failpoint while the engine is stopped.
    replicate = subprocess.Popen(
        [sys.executable, "-m", "replctl", "replicate", "--json"],
        env={
            **tool.env,
            "REPLCTL_FAILPOINT": "replicate.after-commit@1",
            "REPLCTL_FAILPOINT_MODE": f"fifo:{fifo}" if restart else "pause:30",
            # Every pass on the engine: a pass this small would otherwise run without Spark (issue 17).
            "REPLCTL_LOCAL_LIMIT": "0",
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 300
    while _seq(tool, "B") < before + 2:
        assert time.monotonic() < deadline and replicate.poll() is None, replicate.communicate()
        time.sleep(0.5)
    tool.run("engine", "stop")
    if restart:
        tool.json("engine", "start", "--port", str(port))
        with fifo.open("wb"):
            pass  # the command goes on, to the next pass, on the session of the server it first connected to
    out, err = replicate.communicate(timeout=600)
    return replicate.returncode, out, err, f"sc://127.0.0.1:{port}"


ENGINE_LOST_HINT = (
    "check the engine with `replctl engine status` (and its log); re-run the command: it resumes where this "
    "one stopped, on local Spark while the engine is down"
)


def test_engine_stop_during_a_replicate_then_a_rerun_loses_and_duplicates_nothing(tool: Tool) -> None:
    code, out, err, address = _stop_the_engine_during_a_replicate(tool, filtered=True)
    assert code == 6, err
    # The server's absence is the environment's fault (exit 6), never the filter's: B→C is not marked failed.
    assert json.loads(out)["error"] == {
        "code": "spark",
        "message": "checking the filter \"key IN ('e1', 'e2')\" failed: the managed Spark engine at "
        f"{address} stopped answering (Spark's log: {tool.home / 'engine.log'})",
        "hint": ENGINE_LOST_HINT,
    }
    assert err == ""
    assert [c["state"] for c in tool.json("status")["connections"]] == ["active", "active"]

    tool.run("replicate")  # the engine is gone (stopped, forgotten): local Spark
    expected = [(1, "A", 1, "e1"), (2, "A", 2, "e2")]
    assert tool.events("A") == expected
    assert tool.events("B") == expected
    assert tool.events("C") == expected


@pytest.mark.parametrize("restart", [False, True], ids=["stopped", "restarted-on-the-same-port"])
def test_engine_stopped_during_a_pass_is_one_line_naming_it_with_a_hint_never_a_grpc_repr(
    tool: Tool, restart: bool
) -> None:
    # With `restart`, `engine start` on the same port follows the stop before the next pass: that pass met
    # another server, up at the same address, and was reported as "replication pass failed in Spark:
    # [NO_ACTIVE_SESSION] ..." with no hint, the new server taken for the old one (`EngineRecord.same_server`).
    code, out, err, address = _stop_the_engine_during_a_replicate(tool, filtered=False, restart=restart)
    assert code == 6, err
    # It used to be "replication pass failed in Spark: <_InactiveRpcError of RPC that terminated with:".
    assert json.loads(out)["error"] == {
        "code": "spark",
        "message": f"replication pass failed: the managed Spark engine at {address} stopped answering "
        f"(Spark's log: {tool.home / 'engine.log'})",
        "hint": ENGINE_LOST_HINT,
    }
    assert err == ""
    tool.run("replicate")  # local Spark, or the new engine: B→C resumes from its committed progress
    assert [e[3] for e in tool.events("C")] == ["c1", "b1", "e1", "e2"]


def _seq(tool: Tool, location: str) -> int:
    return int(next(loc["seq"] for loc in tool.json("status")["locations"] if loc["name"] == location))
