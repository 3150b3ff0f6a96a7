"""Folding the recorded history (rules.md H1–H5): the projection depends on the set of changes only."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from replctl.core.model import Change, ChangeKind, Role
from replctl.core.topology import TopologyState, fold
from replctl.core.topology_graph import contract
from replctl.core.topology_rules import filter_placement_violations

F = "key = 'e3'"
NAMES = "ABCDE"


def added(*names: str) -> list[Change]:
    return [Change(kind=ChangeKind.LOCATION_ADDED, location=name, role=Role.READ_WRITE) for name in names]


def connection(kind: ChangeKind, source: str, target: str, expression: str | None = None) -> Change:
    return Change(kind=kind, source=source, target=target, filter=expression)


def projection(state: TopologyState) -> tuple[object, ...]:
    return (dict(state.roles), state.retired, state.edges, state.ever_filtered)


def test_fold_follows_change_ids_rather_than_the_order_given() -> None:
    changes = [
        *added("A", "B"),
        connection(ChangeKind.CONNECTION_ADDED, "A", "B"),
        connection(ChangeKind.CONNECTION_REMOVED, "A", "B"),
    ]
    numbered = [replace(change, id=index) for index, change in enumerate(changes, start=1)]
    assert fold(reversed(numbered)).current == {}
    assert fold(numbered).current == {}


def test_fold_without_ids_follows_the_order_given_for_current_connections_only() -> None:
    add = connection(ChangeKind.CONNECTION_ADDED, "A", "B", F)
    remove = connection(ChangeKind.CONNECTION_REMOVED, "A", "B")
    later_removed = fold([*added("A", "B"), add, remove])
    later_added = fold([*added("A", "B"), remove, add])
    assert later_removed.current == {}
    assert later_added.current == {("A", "B"): F}
    assert projection(later_removed) == projection(later_added)


def test_fold_keeps_removed_connections_and_cleared_filters_in_h() -> None:
    state = fold(
        [
            *added("A", "B", "C"),
            connection(ChangeKind.CONNECTION_ADDED, "A", "B", F),
            connection(ChangeKind.FILTER_CLEARED, "A", "B"),
            connection(ChangeKind.CONNECTION_ADDED, "B", "C"),
            connection(ChangeKind.FILTER_SET, "B", "C", F),
            connection(ChangeKind.FILTER_CLEARED, "B", "C"),
            connection(ChangeKind.CONNECTION_REMOVED, "B", "C"),
        ]
    )
    assert state.edges == {("A", "B"), ("B", "C")}
    assert state.ever_filtered == {("A", "B"), ("B", "C")}
    assert state.current == {("A", "B"): None}


def test_retired_location_leaves_h_with_its_edges_but_keeps_its_id() -> None:
    state = fold(
        [
            *added("A", "B", "C"),
            connection(ChangeKind.CONNECTION_ADDED, "A", "B", F),
            connection(ChangeKind.CONNECTION_ADDED, "B", "C"),
            connection(ChangeKind.CONNECTION_REMOVED, "B", "C"),
            Change(kind=ChangeKind.LOCATION_RETIRED, location="C"),
        ]
    )
    assert state.locations == {"A", "B"}
    assert set(state.roles) == {"A", "B", "C"}
    assert state.edges == {("A", "B")}


def test_failover_marker_alone_changes_nothing() -> None:
    before = fold(added("A", "B", "D"))
    marker = Change(kind=ChangeKind.FAILOVER, location="D", failover_from="A", failover_to="B")
    assert fold([*added("A", "B", "D"), marker]) == before


def test_groups_follow_declarations_and_removals() -> None:
    declare = Change(kind=ChangeKind.GROUP_DECLARED, group="G", members=("A", "B"))
    redeclare = Change(kind=ChangeKind.GROUP_DECLARED, group="G", members=("A", "B", "C"))
    state = fold([*added("A", "B", "C"), declare, redeclare])
    assert state.groups == {"G": frozenset("ABC")}
    assert state.group_of("C") == "G"
    assert fold([declare, Change(kind=ChangeKind.GROUP_REMOVED, group="G")]).groups == {}


def test_apply_continues_the_fold_exactly() -> None:
    first = [*added("A", "B", "C"), connection(ChangeKind.CONNECTION_ADDED, "A", "B", F)]
    rest = [
        Change(kind=ChangeKind.LOCATION_RETIRED, location="B"),
        connection(ChangeKind.CONNECTION_ADDED, "A", "C"),
    ]
    assert fold(first).apply(rest) == fold(first + rest)


pairs = st.tuples(st.sampled_from(NAMES), st.sampled_from(NAMES)).filter(lambda pair: pair[0] != pair[1])
changes = st.one_of(
    st.builds(
        lambda pair, expression: connection(ChangeKind.CONNECTION_ADDED, pair[0], pair[1], expression),
        pairs,
        st.sampled_from([None, F]),
    ),
    st.builds(lambda pair: connection(ChangeKind.CONNECTION_REMOVED, pair[0], pair[1]), pairs),
    st.builds(lambda pair: connection(ChangeKind.FILTER_SET, pair[0], pair[1], F), pairs),
    st.builds(lambda pair: connection(ChangeKind.FILTER_CLEARED, pair[0], pair[1]), pairs),
    st.builds(lambda name: Change(kind=ChangeKind.LOCATION_RETIRED, location=name), st.sampled_from(NAMES)),
    st.builds(
        lambda name, role: Change(kind=ChangeKind.LOCATION_ADDED, location=name, role=role),
        st.sampled_from(NAMES),
        st.sampled_from(list(Role)),
    ),
)


@settings(max_examples=25, deadline=None)
@given(st.lists(changes, max_size=20).flatmap(lambda h: st.tuples(st.just(h), st.permutations(h))))
def test_projection_and_f1_verdicts_depend_only_on_the_set_of_changes_h5(
    histories: tuple[list[Change], list[Change]],
) -> None:
    history, permuted = histories
    base = added(*NAMES)
    one, other = fold(base + history), fold(base + list(permuted))
    assert projection(one) == projection(other)
    verdicts = filter_placement_violations(one, contract(one))
    assert verdicts == filter_placement_violations(other, contract(other))
