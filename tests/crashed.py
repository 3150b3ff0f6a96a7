"""What an in-process crash (`REPLCTL_FAILPOINT_MODE=raise`) must leave, and the death that follows it (REP3).

A `FailpointCrash` unwinds the command like an exception but, as a SIGKILL, journals no outcome and releases
no lease (`services.operations.operation`). What it cannot do is end the process: the test goes on, so the
leases name a holder that still runs and a re-run would wait for it (exit 4). `died` checks the state a kill
leaves and then ends that hold as the process's exit would: the leases now name a process that cannot exist
(a pid above the kernel's limit), so the re-run takes them over from a dead holder, exactly as after a real
kill, and journals the crashed operation as failed (`holder-died`).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from clitool import Replctl
from sqlalchemy import create_engine, text

from replctl.failpoints import FailpointCrash


def _pid_that_cannot_exist() -> int:
    # Linux never hands out a pid at or above pid_max: kill(pid, 0) answers "no such process".
    return int(Path("/proc/sys/kernel/pid_max").read_text()) + 1


def died(db_url: str) -> list[str]:
    """After an in-process crash: assert that each lease left held belongs to an operation journalled as still
    running and names this process; then make its holder a dead process.

    Returns the ids of the operations left running: the crashed one, or none when the crash came between two
    operations (a point such as `retire.before-prune`); the caller asserts which it expects.
    """
    engine = create_engine(db_url)
    try:
        with engine.begin() as conn:
            running = {
                op for (op,) in conn.execute(text("SELECT id FROM operations WHERE outcome = 'running'"))
            }
            held = list(
                conn.execute(
                    text("SELECT resource, holder, operation_id FROM leases WHERE released_at IS NULL")
                )
            )
            mine = f" pid {os.getpid()}"
            for resource, holder, operation in held:
                ours = holder.endswith(mine) or f"{mine} pidns " in holder
                assert operation in running and ours, (resource, holder, operation, running)
            conn.execute(
                text("UPDATE leases SET holder = replace(holder, :mine, :gone) WHERE released_at IS NULL"),
                {"mine": mine, "gone": f" pid {_pid_that_cannot_exist()}"},
            )
    finally:
        engine.dispose()
    return sorted(running)


def killed(rc: Replctl, monkeypatch: pytest.MonkeyPatch, point: str, *args: str) -> list[str]:
    """Run `replctl ARGS` killed at failpoint `point`, as a power cut there would, then `died`: what the next
    command meets. Returns `died`'s operations left running."""
    with monkeypatch.context() as env:
        env.setenv("REPLCTL_FAILPOINT", point)
        env.setenv("REPLCTL_FAILPOINT_MODE", "raise")
        with pytest.raises(FailpointCrash):
            rc(*args, expect=None)
    return died(rc.db_url)
