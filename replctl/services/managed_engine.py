"""`replctl engine start|status|stop`: the managed Spark engine (a local Spark Connect server) as typed outcomes.

Starting, looking at and stopping the server is the adapter's (`services.ports.ManagedEngine`); what the
operator is told about it, and its uptime, are here. Each outcome's `to_json()` is the command's whole `--json`
document (cli.md), and every one is complete (exit 0): an engine that cannot start is an error (exit 6).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from replctl.core.outcomes import AllOrNothing
from replctl.services.ports import EngineRecord, ManagedEngine


@dataclass(frozen=True)
class RunningEngine:
    """A recorded engine as the commands show it: the record plus how long ago it was started."""

    address: str
    pid: int
    version: str
    master: str
    started_at: str
    uptime_s: int
    log: str

    @classmethod
    def of(cls, record: EngineRecord, now: datetime) -> RunningEngine:
        """`record` seen at `now` (an aware datetime)."""
        started = datetime.fromisoformat(record.started_at)
        return cls(
            address=record.address,
            pid=record.pid,
            version=record.version,
            master=record.master,
            started_at=record.started_at,
            uptime_s=int((now - started).total_seconds()),
            log=record.log,
        )

    def to_json(self) -> dict[str, Any]:
        """The record's keys of the `engine start|status` documents."""
        return {
            "address": self.address,
            "pid": self.pid,
            "version": self.version,
            "master": self.master,
            "started_at": self.started_at,
            "uptime_s": self.uptime_s,
            "log": self.log,
        }


@dataclass(frozen=True)
class EngineStarted(AllOrNothing):
    """`engine start`: the engine that is up, and whether this command started it (else it was up already)."""

    started: bool
    engine: RunningEngine

    def to_json(self) -> dict[str, Any]:
        """`engine start --json`."""
        return {"ok": True, "started": self.started, **self.engine.to_json()}


@dataclass(frozen=True)
class EngineStatus(AllOrNothing):
    """`engine status`: up or down, and the recorded engine if there is one (a down one does not answer)."""

    up: bool
    engine: RunningEngine | None
    log: str  # the recorded engine's log, else where one started from this home would write

    def to_json(self) -> dict[str, Any]:
        """`engine status --json`: the record's keys only when an engine was recorded."""
        doc: dict[str, Any] = {
            "ok": True,
            "state": "up" if self.up else "down",
            "recorded": self.engine is not None,
        }
        if self.engine is not None:
            doc.update(self.engine.to_json())
        else:
            doc["log"] = self.log
        return doc


@dataclass(frozen=True)
class EngineStopped(AllOrNothing):
    """`engine stop`: the address of the engine stopped (and forgotten), None when none was recorded."""

    address: str | None

    @property
    def stopped(self) -> bool:
        """True when an engine was recorded (a stale record is forgotten too)."""
        return self.address is not None

    def to_json(self) -> dict[str, Any]:
        """`engine stop --json`."""
        return {"ok": True, "stopped": self.stopped, "address": self.address}


def start(
    engine: ManagedEngine,
    *,
    master: str,
    port: int,
    conf: tuple[tuple[str, str], ...],
    now: datetime | None = None,
) -> EngineStarted:
    """Start the engine unless one is up, waiting until it answers."""
    record, started = engine.start(master=master, port=port, conf=conf)
    return EngineStarted(started, RunningEngine.of(record, now or datetime.now(UTC)))


def status(engine: ManagedEngine, *, now: datetime | None = None) -> EngineStatus:
    """Whether the engine is up, and what was recorded about it."""
    found = engine.state()
    if found.record is None:
        return EngineStatus(up=found.up, engine=None, log=str(engine.log))
    running = RunningEngine.of(found.record, now or datetime.now(UTC))
    return EngineStatus(up=found.up, engine=running, log=running.log)


def stop(engine: ManagedEngine) -> EngineStopped:
    """Stop the recorded engine, if any; later commands run on local Spark."""
    record = engine.stop()
    return EngineStopped(record.address if record is not None else None)
