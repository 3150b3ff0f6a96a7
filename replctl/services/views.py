"""JSON views of core values that several documents share (status, location list, topology show, ops): one
per concept, so that a location, a connection or an operation reads the same in every document."""

from __future__ import annotations

from typing import Any

from replctl.core.damage import SegmentDamage
from replctl.core.journal import Operation
from replctl.core.model import Change, Connection, Location, LocationState


def location_json(loc: Location, damage: list[SegmentDamage] | None = None) -> dict[str, Any]:
    """A location as in `status --json`; with `damage` found by the census, an active one shows `damaged`
    (DR0) and `damage` lists the segments concerned."""
    doc: dict[str, Any] = {
        "name": loc.name,
        "role": loc.role.value,
        "state": "damaged" if damage and loc.state is LocationState.ACTIVE else loc.state.value,
        "seq": loc.seq,
        "cvv": loc.cvv.to_dict(),
        "dvv": loc.dvv.to_dict(),
        "deleted_upto": loc.deleted_upto,
        "logical_deleted_upto": loc.logical_deleted_upto,
        "clock_pruned": loc.clock_pruned,
    }
    if damage:
        doc["damage"] = [
            {"path": d.segment.path, "seq_lo": d.segment.seq_lo, "reason": d.reason} for d in damage
        ]
    return doc


def connection_json(conn: Connection) -> dict[str, Any]:
    """A connection as `topology show --json` lists it; `status --json` adds its progress, lag and reason."""
    return {
        "source": conn.source,
        "target": conn.target,
        "state": conn.state.value,
        "filter": conn.filter,
        "ever_filtered": conn.ever_filtered,
        "history": conn.history.value,
    }


def change_json(change: Change) -> dict[str, Any]:
    """A recorded topology change, only the fields its kind uses."""
    doc: dict[str, Any] = {"id": change.id, "kind": change.kind.value}
    for name in (
        "location",
        "source",
        "target",
        "filter",
        "group",
        "failover_from",
        "failover_to",
        "at",
        "actor",
        "reason",
        "operation",
    ):
        value = getattr(change, name)
        if value is not None:
            doc[name] = value
    if change.role is not None:
        doc["role"] = change.role.value
    if change.history is not None:
        doc["history"] = change.history.value
    if change.members:
        doc["members"] = list(change.members)
    return doc


def operation_json(op: Operation, *, steps: bool = False) -> dict[str, Any]:
    """One journal entry as `ops list --json` lists it; with `steps`, as `ops show` adds its plan and steps."""
    doc: dict[str, Any] = {
        "id": op.id,
        "command": op.command,
        "args": op.args,
        "actor": op.actor,
        "host": op.host,
        "reason": op.reason,
        "outcome": op.outcome,
        "error": op.error,
        "started_at": op.started_at,
        "ended_at": op.ended_at,
    }
    if steps:
        doc["plan"] = op.plan
        doc["steps"] = [{"index": s.index, "name": s.name, "detail": s.detail, "at": s.at} for s in op.steps]
    return doc
