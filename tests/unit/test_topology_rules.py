"""The filter and topology rules on the networks of the seed documents (rules.md H2–H4, F1, F2, RET1, M1)."""

from __future__ import annotations

import pytest

from replctl.core.model import Change, ChangeKind, Role
from replctl.core.topology import fold
from replctl.core.topology_plans import (
    Decision,
    plan_connection_add,
    plan_connection_remove,
    plan_filter,
    plan_location_add,
    plan_retire,
    validate,
)
from unit.topology_net import Net, codes

F = "key = 'e3'"


def seed_network() -> Net:
    """The seed's cycle A–B–C, with D attached to C and E attached to B (all bi-directional)."""
    net = Net("ABCDE")
    net.connect("A", "B")
    net.connect("B", "C")
    net.connect("C", "A")
    net.connect("C", "D")
    net.connect("B", "E")
    return net


@pytest.mark.parametrize(("src", "dst"), [("C", "D"), ("D", "C"), ("B", "E"), ("E", "B")])
def test_seed_network_allows_filters_on_the_attached_locations(src: str, dst: str) -> None:
    net = seed_network()
    decision = plan_filter(net.state, src, dst, F)
    assert decision.ok
    assert decision.changes == (Change(kind=ChangeKind.FILTER_SET, source=src, target=dst, filter=F),)


@pytest.mark.parametrize(("src", "dst"), [tuple(pair) for pair in ("AB", "BA", "BC", "CB", "CA", "AC")])
def test_seed_network_refuses_filters_on_the_abc_cycle_f1(src: str, dst: str) -> None:
    net = seed_network()
    decision = plan_filter(net.state, src, dst, F)
    assert codes(decision) == ["F1"]
    violation = decision.violations[0]
    assert violation.cycle is not None
    assert set(violation.cycle) == {"A", "B", "C"}
    assert violation.cycle[:2] == (src, dst)
    rendered = violation.render_cycle()
    assert rendered is not None
    assert rendered in violation.message
    assert not decision.changes


def xyz_network(*, with_yz: bool = True) -> Net:
    """The seed network with E replaced by the cyclic sub-network X–Y–Z, attached at X to B."""
    net = Net("ABCDXYZ")
    for src, dst in [("A", "B"), ("B", "C"), ("C", "A"), ("C", "D"), ("B", "X"), ("X", "Y"), ("Z", "X")]:
        net.connect(src, dst)
    if with_yz:
        net.connect("Y", "Z")
    return net


def test_xyz_allows_a_filter_between_b_and_x() -> None:
    net = xyz_network()
    assert plan_filter(net.state, "B", "X", F).ok
    assert plan_filter(net.state, "X", "B", F).ok


def test_xyz_refuses_a_filter_between_x_and_y_once_y_z_existed() -> None:
    decision = plan_filter(xyz_network().state, "X", "Y", F)
    assert codes(decision) == ["F1"]
    assert decision.violations[0].render_cycle() == "X–Y–Z"


def test_xyz_removing_y_z_does_not_lift_the_refusal_h2() -> None:
    net = xyz_network()
    net.disconnect("Y", "Z")
    assert ("Y", "Z") not in net.state.current
    assert ("Y", "Z") in net.state.edges
    assert codes(plan_filter(net.state, "X", "Y", F)) == ["F1"]


def test_xyz_retiring_z_lifts_the_refusal_ret1() -> None:
    net = xyz_network()
    net.disconnect("Y", "Z")
    net.disconnect("Z", "X")
    net.retire("Z")
    assert "Z" not in net.state.locations
    assert not any("Z" in edge for edge in net.state.edges)
    assert plan_filter(net.state, "X", "Y", F).ok


def test_xyz_where_y_z_never_existed_allows_filters_on_x_y_and_x_z() -> None:
    net = xyz_network(with_yz=False)
    assert plan_filter(net.state, "X", "Y", F).ok
    assert plan_filter(net.state, "X", "Z", F).ok


def test_network_acyclic_at_t1_and_t2_is_cyclic_in_its_history() -> None:
    net = Net("ABC")
    net.connect("A", "B")
    net.connect("B", "C")  # t1: A–B–C, a path
    net.disconnect("B", "C")
    net.connect("A", "C")  # t2: B–A–C, a path again
    current = {frozenset(pair) for pair in net.state.current}
    assert current == {frozenset("AB"), frozenset("AC")}
    decision = plan_filter(net.state, "A", "B", F)
    assert codes(decision) == ["F1"]
    assert set(decision.violations[0].cycle or ()) == {"A", "B", "C"}


def test_cleared_filter_still_counts_h3() -> None:
    net = Net("ABC")
    net.connect("A", "B", filter=F)
    net.set_filter("A", "B", None)
    net.set_filter("B", "A", None)
    assert net.state.current[("A", "B")] is None
    assert ("A", "B") in net.state.ever_filtered
    net.connect("B", "C")
    decision = plan_connection_add(net.state, "C", "A", both=True)
    assert codes(decision) == ["F1"]
    assert decision.violations[0].cycle == ("A", "B", "C")


def test_clearing_a_filter_is_never_refused_by_f1() -> None:
    net = Net("ABC")
    net.connect("A", "B", filter=F)
    assert plan_filter(net.state, "A", "B", None).ok


def test_clearing_a_filter_never_set_records_no_change() -> None:
    net = Net("ABC")
    net.connect("A", "B", filter=F)
    net.connect("B", "C")
    assert plan_filter(net.state, "B", "C", None) == Decision()
    # Of a group of connections, only those with a filter record its clearing.
    assert plan_filter(net.state, "A", "B", None).changes == (
        Change(kind=ChangeKind.FILTER_CLEARED, source="A", target="B"),
    )


def test_bidirectional_pair_is_no_cycle_h4() -> None:
    net = Net("AB")
    net.connect("A", "B", filter=F)  # both directions filtered
    assert net.state.ever_filtered == {("A", "B"), ("B", "A")}
    assert validate(net.state) == ()


def test_undirected_cycle_without_directed_cycle_refuses_the_filter_and_names_it() -> None:
    net = Net("ABC")
    net.connect("A", "B", both=False)
    net.connect("C", "B", both=False)
    decision = plan_connection_add(net.state, "A", "C", filter=F)
    assert codes(decision) == ["F1"]
    violation = decision.violations[0]
    assert violation.cycle == ("A", "C", "B")
    assert "A–C–B" in violation.message
    assert "A→C" in violation.message
    assert violation.hint is not None
    assert "replctl topology add A C" in violation.hint


def test_adding_the_connection_that_closes_a_cycle_through_a_filter_is_refused_f2() -> None:
    net = Net("ABC")
    net.connect("A", "B", both=False)
    net.connect("A", "C", both=False, filter=F)
    decision = plan_connection_add(net.state, "C", "B")
    assert codes(decision) == ["F1"]
    assert decision.violations[0].cycle == ("A", "C", "B")


def test_reconnect_of_a_removed_connection_is_allowed_and_checked_again() -> None:
    net = Net("AB")
    net.connect("A", "B", both=False, filter=F)
    net.disconnect("A", "B", both=False)
    assert ("A", "B") not in net.state.current
    net.connect("A", "B", both=False)
    assert net.state.current[("A", "B")] is None
    assert ("A", "B") in net.state.ever_filtered


def test_removing_a_connection_is_never_refused_by_f1() -> None:
    net = seed_network()
    decision = plan_connection_remove(net.state, "A", "B", both=True)
    assert decision.ok
    assert [(c.source, c.target) for c in decision.changes] == [("A", "B"), ("B", "A")]


def test_retired_location_id_cannot_be_added_again_m1() -> None:
    net = Net("AB")
    net.retire("B")
    decision = plan_location_add(net.state, "B", Role.READ_WRITE)
    assert codes(decision) == ["M1"]
    assert "retired" in decision.violations[0].message


def test_adding_an_existing_location_with_its_role_changes_nothing_and_with_another_is_refused() -> None:
    net = Net("AB")
    # cli.md: re-running a done change is nothing to do (exit 0); M1 refuses only an id already retired.
    again = plan_location_add(net.state, "A", Role.READ_WRITE)
    assert again.ok and again.changes == ()
    other = plan_location_add(net.state, "A", Role.HUB)
    assert codes(other) == ["location-exists"]
    assert other.violations[0].message == (
        "location A exists as read-write; a location's role is set when it is added (M1)"
    )


def test_retiring_a_connected_location_is_refused_with_the_remove_commands_ret1() -> None:
    net = Net("ABC")
    net.connect("A", "B")
    net.connect("C", "A", both=False)
    decision = plan_retire(net.state, "A")
    assert codes(decision) == ["RET1"]
    hint = decision.violations[0].hint or ""
    assert "replctl topology remove A B --both" in hint
    assert "replctl topology remove C A" in hint


def test_retiring_twice_records_nothing_the_second_time() -> None:
    net = Net("A")
    net.retire("A")
    decision = plan_retire(net.state, "A")
    assert decision.ok
    assert decision.changes == ()


def test_connecting_a_retired_location_is_refused() -> None:
    net = Net("AB")
    net.retire("B")
    assert codes(plan_connection_add(net.state, "A", "B")) == ["RET1"]


def test_retiring_can_only_lift_f1_refusals() -> None:
    changes = [
        Change(kind=ChangeKind.LOCATION_ADDED, location=name, role=Role.READ_WRITE) for name in "ABC"
    ] + [
        Change(kind=ChangeKind.CONNECTION_ADDED, source="A", target="B", filter=F),
        Change(kind=ChangeKind.CONNECTION_ADDED, source="B", target="C"),
        Change(kind=ChangeKind.CONNECTION_ADDED, source="C", target="A"),
        Change(kind=ChangeKind.CONNECTION_REMOVED, source="B", target="C"),
        Change(kind=ChangeKind.CONNECTION_REMOVED, source="C", target="A"),
    ]
    assert [v.code for v in validate(fold(changes)) if not v.warning] == ["F1"]
    retired = fold([*changes, Change(kind=ChangeKind.LOCATION_RETIRED, location="C")])
    assert [v.code for v in validate(retired) if not v.warning] == []


def test_unknown_names_and_bad_requests_have_their_own_codes() -> None:
    net = Net("AB")
    net.connect("A", "B", both=False)
    assert codes(plan_connection_add(net.state, "A", "Q")) == ["unknown-location"]
    assert codes(plan_connection_add(net.state, "A", "A")) == ["bad-connection"]
    assert codes(plan_connection_add(net.state, "A", "B")) == ["connection-exists"]
    assert codes(plan_connection_remove(net.state, "B", "A")) == ["unknown-connection"]
    assert codes(plan_filter(net.state, "B", "A", F)) == ["unknown-connection"]
    assert codes(plan_filter(net.state, "A", "Q", F)) == ["unknown-location"]
    assert codes(plan_retire(net.state, "Q")) == ["unknown-location"]


def test_adding_both_directions_when_one_exists_names_the_missing_one() -> None:
    net = Net("AB")
    net.connect("A", "B", both=False)
    decision = plan_connection_add(net.state, "A", "B", both=True)
    assert codes(decision) == ["connection-exists"]
    assert decision.violations[0].hint == "replctl topology add B A"
