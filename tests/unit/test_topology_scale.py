"""The topology core on 1,000 locations and 100,000 changes: correct verdicts (timing: benchmarks)."""

from __future__ import annotations

import random

from replctl.core.model import Change, ChangeKind, Role
from replctl.core.topology import fold
from replctl.core.topology_plans import plan_connection_add, plan_filter, validate

F = "key = 'e3'"
LOCATIONS = 1000
CHANGES = 100_000


def parent(index: int) -> int:
    return (index - 1) // 2


def filtered(index: int) -> bool:
    return index % 3 == 0


def name(index: int) -> str:
    return f"L{index}"


def large_history() -> list[Change]:
    """A binary tree of bi-directional connections, every third one filtered; unfiltered chords close
    triangles away from the filters; then churn (reconnects, filter changes) up to 100,000 changes.

    Changes carry no id (recording order is the list order), and the churn reuses one change object per
    kind and edge: building 100,000 distinct dataclasses would dominate the test's time.
    """
    rng = random.Random(3)
    changes = [
        Change(kind=ChangeKind.LOCATION_ADDED, location=name(index), role=Role.READ_WRITE)
        for index in range(LOCATIONS)
    ]

    def connect(a: int, b: int, expression: str | None) -> None:
        changes.append(
            Change(kind=ChangeKind.CONNECTION_ADDED, source=name(a), target=name(b), filter=expression)
        )
        changes.append(
            Change(kind=ChangeKind.CONNECTION_ADDED, source=name(b), target=name(a), filter=expression)
        )

    for index in range(1, LOCATIONS):
        connect(index, parent(index), F if filtered(index) else None)
    for index in range(3, LOCATIONS):
        if not filtered(index) and not filtered(parent(index)) and parent(index) > 0:
            connect(index, parent(parent(index)), None)
    churn: dict[int, tuple[Change, Change]] = {}
    for index in range(1, LOCATIONS):
        a, b = name(index), name(parent(index))
        if filtered(index):
            first = Change(kind=ChangeKind.FILTER_CLEARED, source=a, target=b)
            second = Change(kind=ChangeKind.FILTER_SET, source=a, target=b, filter=F)
        else:
            first = Change(kind=ChangeKind.CONNECTION_REMOVED, source=a, target=b)
            second = Change(kind=ChangeKind.CONNECTION_ADDED, source=a, target=b)
        churn[index] = (first, second)
    while len(changes) < CHANGES:
        changes.extend(churn[rng.randrange(1, LOCATIONS)])
    return changes


def test_thousand_locations_and_hundred_thousand_changes_validate_clean_and_refuse_one_cycle() -> None:
    history = large_history()
    assert len(history) == CHANGES
    state = fold(history)
    assert len(state.locations) == LOCATIONS
    assert validate(state) == ()
    # L6's tree edge to L2 is filtered; a chord L6–L0 closes the triangle L6–L2–L0 through it (F1, F2).
    decision = plan_connection_add(state, "L6", "L0")
    assert [violation.code for violation in decision.violations] == ["F1"]
    assert decision.violations[0].cycle == ("L2", "L6", "L0")
    # A filter on a chord's triangle is refused; one on a tree edge that closes no cycle is accepted.
    assert [violation.code for violation in plan_filter(state, "L4", "L1", F).violations] == ["F1"]
    assert plan_filter(state, "L999", "L499", F).ok
