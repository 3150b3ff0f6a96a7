"""`engine status|stop` as outcomes (issue 15): the service over the real adapter of a replctl home.

No server is started: a record whose process has exited is what a crashed or rebooted engine leaves, and it is
what `status` must call down (with its record) and `stop` must forget. Starting one is tests/cluster's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from replctl.adapters.spark.server import ManagedServer
from replctl.core.outcomes import Completion
from replctl.services import managed_engine

STARTED = datetime(2026, 1, 1, tzinfo=UTC)


def _exited_pid() -> int:
    """The pid of a process that has exited and been reaped (not a server, whatever runs now)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _record(home: Path, pid: int) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "engine.json").write_text(
        json.dumps(
            {
                "address": "sc://127.0.0.1:15093",
                "pid": pid,
                "version": "4.0.0",
                "started_at": STARTED.isoformat(),
                "master": "local[2]",
                "log": str(home / "engine.log"),
            }
        )
    )


def test_a_home_without_an_engine_is_down_and_names_where_its_log_would_be(tmp_path: Path) -> None:
    found = managed_engine.status(ManagedServer(tmp_path / "home"))
    assert found.completion is Completion.COMPLETE
    assert found.to_json() == {
        "ok": True,
        "state": "down",
        "recorded": False,
        "log": str(tmp_path / "home" / "engine.log"),
    }


def test_a_recorded_engine_whose_process_is_gone_is_down_with_its_record_and_uptime(tmp_path: Path) -> None:
    home = tmp_path / "home"
    pid = _exited_pid()
    _record(home, pid)
    found = managed_engine.status(ManagedServer(home), now=STARTED + timedelta(seconds=90, milliseconds=700))
    assert found.to_json() == {
        "ok": True,
        "state": "down",
        "recorded": True,
        "address": "sc://127.0.0.1:15093",
        "pid": pid,
        "version": "4.0.0",
        "master": "local[2]",
        "started_at": "2026-01-01T00:00:00+00:00",
        "uptime_s": 90,
        "log": str(home / "engine.log"),
    }


def test_stop_forgets_a_stale_record_once_then_finds_no_engine(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _record(home, _exited_pid())
    adapter = ManagedServer(home)
    first = managed_engine.stop(adapter)
    assert first.to_json() == {"ok": True, "stopped": True, "address": "sc://127.0.0.1:15093"}
    assert not (home / "engine.json").exists()
    again = managed_engine.stop(adapter)
    assert (again.completion, again.to_json()) == (
        Completion.COMPLETE,
        {"ok": True, "stopped": False, "address": None},
    )
