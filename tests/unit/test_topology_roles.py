"""Roles in the topology (rules.md ROLE1, ROLE2)."""

from __future__ import annotations

from replctl.core.model import Change, ChangeKind, Role
from replctl.core.topology import fold
from replctl.core.topology_plans import Decision, plan_connection_add, plan_failover, validate
from unit.topology_net import Net, codes


def test_read_only_location_cannot_get_an_outgoing_connection_role1() -> None:
    net = Net("A")
    net.add_location("R", Role.READ_ONLY)
    assert codes(plan_connection_add(net.state, "R", "A")) == ["ROLE1"]
    assert codes(plan_connection_add(net.state, "A", "R", both=True)) == ["ROLE1"]
    assert plan_connection_add(net.state, "A", "R").ok


def test_failover_to_a_read_only_member_that_would_send_is_refused_role1() -> None:
    net = Net("AD")
    net.add_location("R", Role.READ_ONLY)
    net.connect("A", "R", both=False)
    net.group("G", "A", "R")
    net.connect("A", "D")
    assert codes(plan_failover(net.state, "D", "A", "R")) == ["ROLE1"]


def test_validate_reports_a_recorded_outgoing_connection_of_a_read_only_location_role1() -> None:
    state = fold(
        [
            Change(kind=ChangeKind.LOCATION_ADDED, location="R", role=Role.READ_ONLY),
            Change(kind=ChangeKind.LOCATION_ADDED, location="A", role=Role.READ_WRITE),
            Change(kind=ChangeKind.CONNECTION_ADDED, source="R", target="A"),
        ]
    )
    errors = [violation for violation in validate(state) if not violation.warning]
    assert [violation.code for violation in errors] == ["ROLE1"]
    assert errors[0].hint == "replctl topology remove R A"


def test_writers_that_only_meet_at_a_hub_get_a_warning_each_role2() -> None:
    net = Net()
    net.add_location("RW1")
    net.add_location("RW2")
    net.add_location("HUB", Role.HUB)
    net.connect("RW1", "HUB", both=False)
    net.connect("RW2", "HUB", both=False)
    warnings = validate(net.state)
    assert [(w.code, w.warning, w.details["location"], w.details["unreached"]) for w in warnings] == [
        ("ROLE2", True, "RW1", ["RW2"]),
        ("ROLE2", True, "RW2", ["RW1"]),
    ]
    assert Decision(violations=warnings).ok


def test_writers_that_reach_each_other_through_a_hub_get_no_warning_role2() -> None:
    net = Net()
    net.add_location("RW1")
    net.add_location("RW2")
    net.add_location("HUB", Role.HUB)
    net.connect("RW1", "HUB")
    net.connect("RW2", "HUB")
    net.add_location("R", Role.READ_ONLY)  # unreached read-only locations do not count
    assert validate(net.state) == ()


def test_one_way_chain_warns_only_the_writers_that_cannot_reach_the_others_role2() -> None:
    net = Net("ABC")
    net.connect("A", "B", both=False)
    net.connect("B", "C", both=False)
    warned = {w.details["location"]: w.details["unreached"] for w in validate(net.state)}
    assert warned == {"B": ["A"], "C": ["A", "B"]}
