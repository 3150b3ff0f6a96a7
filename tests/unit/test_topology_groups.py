"""Redundant filtered connections, admission projection and fail-over (rules.md RFC1, RFC2, FO1)."""

from __future__ import annotations

from replctl.core.model import ChangeKind
from replctl.core.topology_plans import (
    plan_connection_add,
    plan_failover,
    plan_filter,
    plan_group_declare,
    plan_group_remove,
    validate,
)
from replctl.core.topology_rules import admission_projection
from unit.topology_net import Net, codes

F = "key = 'e3'"
G = "array_contains(tags, 'ext')"


def group_network() -> Net:
    """Group G = {A, B} (A<->B), C attached to A on the group's side, D outside connected to A."""
    net = Net("ABCD")
    net.connect("A", "B")
    net.connect("A", "C")
    net.group("G", "A", "B")
    net.connect("D", "A", both=False, filter=F)
    net.connect("A", "D", both=False)
    return net


def test_redundant_filtered_connections_with_identical_filters_are_accepted_rfc1() -> None:
    net = group_network()
    net.connect("D", "B", both=False, filter=F)
    net.connect("B", "D", both=False)
    assert validate(net.state) == ()


def test_redundant_filtered_connection_with_a_different_filter_is_refused_rfc2() -> None:
    net = group_network()
    decision = plan_connection_add(net.state, "D", "B", filter=G)
    assert codes(decision) == ["RFC2"]
    violation = decision.violations[0]
    assert F in violation.message and G in violation.message
    assert violation.hint is not None and "replctl topology filter D G" in violation.hint


def test_unfiltered_redundant_connection_beside_a_filtered_one_is_refused_rfc2() -> None:
    assert codes(plan_connection_add(group_network().state, "D", "B")) == ["RFC2"]


def test_redundant_filtered_connection_without_a_group_is_refused_f1() -> None:
    net = Net("ABD")
    net.connect("A", "B")
    net.connect("D", "A", both=False, filter=F)
    decision = plan_connection_add(net.state, "D", "B", filter=F)
    assert codes(decision) == ["F1", "F1"]  # both filtered edges lie on the cycle D–A–B
    assert {violation.render_cycle() for violation in decision.violations} == {"D–A–B", "D–B–A"}
    new_edge = next(v for v in decision.violations if v.cycle == ("D", "B", "A"))
    assert new_edge.hint is not None
    assert "replctl topology add D B" in new_edge.hint
    assert "replctl topology group NAME B A" in new_edge.hint


def test_changing_one_redundant_connection_alone_is_refused_rfc2() -> None:
    net = group_network()
    net.connect("D", "B", both=False, filter=F)
    assert codes(plan_filter(net.state, "D", "A", G)) == ["RFC2"]
    assert codes(plan_filter(net.state, "D", "B", None)) == ["RFC2"]


def test_filter_naming_the_group_changes_every_redundant_connection_in_one_step() -> None:
    net = group_network()
    net.connect("D", "B", both=False, filter=F)
    decision = net.set_filter("D", "G", G)
    assert [(c.kind, c.source, c.target, c.filter) for c in decision.changes] == [
        (ChangeKind.FILTER_SET, "D", "A", G),
        (ChangeKind.FILTER_SET, "D", "B", G),
    ]
    net.set_filter("D", "G", None)
    assert net.state.current[("D", "A")] is None
    assert net.state.current[("D", "B")] is None
    assert validate(net.state) == ()


def test_other_direction_of_a_redundant_bridge_may_carry_another_filter_rfc2() -> None:
    net = group_network()
    net.connect("D", "B", both=False, filter=F)
    net.set_filter("G", "D", G)  # only A→D exists: one connection, the direction G→D
    assert net.state.current[("A", "D")] == G
    assert validate(net.state) == ()


def test_filtered_connection_inside_a_group_is_refused_rfc1() -> None:
    net = group_network()
    assert codes(plan_filter(net.state, "A", "B", F)) == ["RFC1"]


def test_declaring_a_group_over_an_ever_filtered_connection_is_refused_rfc1() -> None:
    net = Net("AB")
    net.connect("A", "B", filter=F)
    net.set_filter("A", "B", None)
    net.set_filter("B", "A", None)
    assert codes(plan_group_declare(net.state, "G", ["A", "B"])) == ["RFC1"]


def test_removing_a_group_that_redundant_filters_need_is_refused_f1() -> None:
    net = group_network()
    net.connect("D", "B", both=False, filter=F)
    decision = plan_group_remove(net.state, "G")
    assert "F1" in codes(decision)


def test_removing_an_unneeded_group_is_accepted() -> None:
    net = group_network()
    assert plan_group_remove(net.state, "G").ok
    assert codes(plan_group_remove(net.state, "H")) == ["unknown-group"]


def test_group_members_must_exist_and_belong_to_one_group() -> None:
    net = group_network()
    assert codes(plan_group_declare(net.state, "H", ["A", "Q"])) == ["unknown-location"]
    assert codes(plan_group_declare(net.state, "H", ["B", "C"])) == ["bad-group"]
    assert codes(plan_group_declare(net.state, "H", ["C"])) == ["bad-group"]
    assert codes(plan_group_declare(net.state, "A", ["C", "D"])) == ["name-taken"]
    assert plan_group_declare(net.state, "G", ["A", "B", "C"]).ok  # changing a group


def test_admission_projection_is_the_group_side_of_the_bridge_rfc2() -> None:
    net = group_network()
    assert admission_projection(net.state, "D", "A") == {"A", "B", "C"}
    assert admission_projection(net.state, "D", "B") == {"A", "B", "C"}  # also for a connection not yet added


def test_admission_projection_is_empty_outside_groups_and_inside_one() -> None:
    net = group_network()
    assert admission_projection(net.state, "A", "D") == frozenset()  # D is in no group
    assert admission_projection(net.state, "A", "B") == frozenset()  # inside G
    assert admission_projection(net.state, "B", "C") == frozenset()  # C is in no group


def test_admission_projection_leaves_out_retired_locations() -> None:
    net = group_network()
    net.disconnect("A", "C")
    net.retire("C")
    assert admission_projection(net.state, "D", "A") == {"A", "B"}


def test_failover_moves_both_directions_with_identical_filters_fo1() -> None:
    net = group_network()
    net.set_filter("A", "D", G)
    decision = net.failover("D", "A", "B")
    kinds = [(c.kind, c.source, c.target, c.filter) for c in decision.changes]
    assert kinds[0][0] is ChangeKind.FAILOVER
    assert decision.changes[0].failover_from == "A"
    assert decision.changes[0].failover_to == "B"
    assert set(kinds[1:]) == {
        (ChangeKind.CONNECTION_REMOVED, "A", "D", None),
        (ChangeKind.CONNECTION_REMOVED, "D", "A", None),
        (ChangeKind.CONNECTION_ADDED, "D", "B", F),
        (ChangeKind.CONNECTION_ADDED, "B", "D", G),
    }
    assert {pair: f for pair, f in net.state.current.items() if "D" in pair} == {("D", "B"): F, ("B", "D"): G}
    assert admission_projection(net.state, "D", "B") == {"A", "B", "C"}
    assert validate(net.state) == ()


def test_failover_between_locations_of_no_common_group_is_refused_with_a_hint_fo1() -> None:
    net = group_network()
    decision = plan_failover(net.state, "D", "A", "C")
    assert codes(decision) == ["FO1"]
    assert decision.violations[0].hint == "declare it first: replctl topology group NAME A C"


def test_failover_of_a_group_member_or_without_a_connection_is_refused() -> None:
    net = group_network()
    inside = Net("ABC")
    inside.connect("A", "B")
    inside.group("G", "A", "B", "C")
    assert codes(plan_failover(inside.state, "A", "B", "C")) == ["FO1"]  # A is no outsider: it is in G
    assert codes(plan_failover(net.state, "D", "B", "A")) == ["unknown-connection"]
    assert codes(plan_failover(net.state, "A", "A", "B")) == ["FO1"]
    assert codes(plan_failover(net.state, "D", "A", "Q")) == ["unknown-location"]
