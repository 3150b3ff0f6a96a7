"""A small driver for topology tests: records what the planners decide, as the service would."""

from __future__ import annotations

from dataclasses import replace

from replctl.core.model import Change, HistoryMode, Role
from replctl.core.topology import TopologyState, fold
from replctl.core.topology_plans import (
    Decision,
    plan_connection_add,
    plan_connection_remove,
    plan_failover,
    plan_filter,
    plan_group_declare,
    plan_location_add,
    plan_retire,
)


class Net:
    """The recorded history and the state folded from it; every request must be accepted."""

    def __init__(self, locations: str = "", role: Role = Role.READ_WRITE) -> None:
        self.changes: list[Change] = []
        self.state = TopologyState()
        for name in locations:
            self.add_location(name, role)

    def record(self, decision: Decision) -> Decision:
        assert decision.ok, [(v.code, v.message) for v in decision.violations]
        first = len(self.changes) + 1
        numbered = [replace(change, id=first + i) for i, change in enumerate(decision.changes)]
        self.changes += numbered
        self.state = self.state.apply(numbered)
        assert self.state == fold(self.changes)  # the planners' what-if continues the fold exactly
        return decision

    def add_location(self, name: str, role: Role = Role.READ_WRITE) -> Decision:
        return self.record(plan_location_add(self.state, name, role))

    def connect(self, src: str, dst: str, *, both: bool = True, filter: str | None = None) -> Decision:
        return self.record(
            plan_connection_add(self.state, src, dst, both=both, filter=filter, history=HistoryMode.COMPLETE)
        )

    def disconnect(self, src: str, dst: str, *, both: bool = True) -> Decision:
        return self.record(plan_connection_remove(self.state, src, dst, both=both))

    def set_filter(self, src: str, dst: str, expression: str | None) -> Decision:
        return self.record(plan_filter(self.state, src, dst, expression))

    def group(self, name: str, *members: str) -> Decision:
        return self.record(plan_group_declare(self.state, name, members))

    def failover(self, location: str, old: str, new: str) -> Decision:
        return self.record(plan_failover(self.state, location, old, new))

    def retire(self, name: str) -> Decision:
        return self.record(plan_retire(self.state, name))


def codes(decision: Decision) -> list[str]:
    """The violation codes of a decision, in order."""
    return [violation.code for violation in decision.violations]
