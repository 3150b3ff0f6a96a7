"""Topology stories from the seed, through the CLI, against a real SQLite catalog (issue: foundation).

Every refusal exits 3, names the rule id and the cycle, and leaves the catalog exactly as it was.
"""

from __future__ import annotations

from typing import Any

import pytest
from clitool import Replctl


def add_locations(rc: Replctl, *names: str) -> None:
    for name in names:
        rc("location", "add", name)


def connect(rc: Replctl, a: str, b: str, *extra: str) -> None:
    rc("topology", "add", a, b, "--both", *extra)


def assert_refused(
    rc: Replctl, args: list[str], code: str, cycle_nodes: set[str] | None = None
) -> dict[str, Any]:
    before = rc.snapshot()
    doc = rc.json(*args, expect=3)
    assert doc["ok"] is False
    assert doc["error"]["code"] == code
    assert doc["error"]["message"].startswith(f"refused [{code}]")
    assert doc["error"]["hint"]
    if cycle_nodes is not None:
        cycle = doc["error"]["details"]["cycle"]
        assert set(cycle.split("–")) == cycle_nodes, cycle
        assert cycle in doc["error"]["message"]
    assert rc.snapshot() == before, "a refusal must change nothing"
    text = rc(*args, expect=3)
    assert f"refused [{code}]" in text.stderr
    assert "hint:" in text.stderr
    return doc


def test_abc_cycle_with_leaves_allows_filters_exactly_on_the_leaf_edges(rc: Replctl) -> None:
    add_locations(rc, "A", "B", "C", "D", "E")
    connect(rc, "A", "B")
    connect(rc, "B", "C")
    connect(rc, "C", "A")
    connect(rc, "C", "D")
    connect(rc, "B", "E")
    rc("topology", "filter", "C", "D", "--set", "key = 'x'")
    rc("topology", "filter", "E", "B", "--set", "array_contains(tags, 'ext')")
    for src, dst in [("A", "B"), ("B", "C"), ("C", "A"), ("B", "A")]:
        assert_refused(rc, ["topology", "filter", src, dst, "--set", "key = 'x'"], "F1", {"A", "B", "C"})
    rc("topology", "validate")


def xyz_network(rc: Replctl) -> None:
    add_locations(rc, "A", "B", "C", "X", "Y", "Z")
    connect(rc, "A", "B")
    connect(rc, "B", "C")
    connect(rc, "C", "A")
    connect(rc, "B", "X")
    connect(rc, "X", "Y")
    connect(rc, "X", "Z")


def test_xyz_filter_between_x_and_y_is_allowed_when_y_z_never_existed(rc: Replctl) -> None:
    xyz_network(rc)
    rc("topology", "filter", "B", "X", "--set", "key = 'b'")
    rc("topology", "filter", "X", "Y", "--set", "key = 'y'")
    rc("topology", "filter", "X", "Z", "--set", "key = 'z'")
    rc("topology", "validate")


def test_xyz_removing_y_z_does_not_lift_the_refusal_but_retiring_z_does(rc: Replctl) -> None:
    xyz_network(rc)
    connect(rc, "Y", "Z")
    rc("topology", "filter", "B", "X", "--set", "key = 'b'")  # B–X stays a bridge
    assert_refused(rc, ["topology", "filter", "X", "Y", "--set", "key = 'y'"], "F1", {"X", "Y", "Z"})
    rc("topology", "remove", "Y", "Z", "--both")
    assert_refused(rc, ["topology", "filter", "X", "Y", "--set", "key = 'y'"], "F1", {"X", "Y", "Z"})
    rc("topology", "remove", "X", "Z", "--both")
    rc("location", "retire", "Z")
    rc("topology", "filter", "X", "Y", "--set", "key = 'y'")
    rc("topology", "validate")


def test_a_network_acyclic_at_each_moment_but_cyclic_in_its_history_refuses_filters(rc: Replctl) -> None:
    add_locations(rc, "A", "B", "C")
    connect(rc, "A", "B")
    connect(rc, "B", "C")  # t1: A–B–C, a line
    rc("topology", "remove", "A", "B", "--both")
    connect(rc, "C", "A")  # t2: B–C–A, a line again; the history holds the cycle A–B–C
    assert_refused(rc, ["topology", "filter", "C", "A", "--set", "key = 'x'"], "F1", {"A", "B", "C"})


def test_a_cleared_filter_still_counts(rc: Replctl) -> None:
    add_locations(rc, "A", "B", "C")
    connect(rc, "A", "B")
    connect(rc, "B", "C")
    rc("topology", "filter", "A", "B", "--set", "key = 'x'")
    rc("topology", "filter", "A", "B", "--clear")
    # Closing the cycle would put the once-filtered A–B on it (H3, F2).
    assert_refused(rc, ["topology", "add", "C", "A"], "F1", {"A", "B", "C"})
    show = rc.json("topology", "show")
    ab = next(c for c in show["connections"] if (c["source"], c["target"]) == ("A", "B"))
    assert ab["filter"] is None and ab["ever_filtered"] is True


def test_a_bidirectional_pair_is_no_cycle(rc: Replctl) -> None:
    add_locations(rc, "A", "B")
    connect(rc, "A", "B", "--filter", "key = 'x'")
    rc("topology", "validate")
    status = rc.json("status")
    assert sorted((c["source"], c["target"], c["filter"]) for c in status["connections"]) == [
        ("A", "B", "key = 'x'"),
        ("B", "A", "key = 'x'"),
    ]


def test_filter_on_a_to_c_with_a_second_path_through_b_is_refused(rc: Replctl) -> None:
    add_locations(rc, "A", "B", "C")
    rc("topology", "add", "A", "B")
    rc("topology", "add", "A", "C")
    rc("topology", "add", "C", "B")
    assert_refused(rc, ["topology", "filter", "A", "C", "--set", "key = 'x'"], "F1", {"A", "B", "C"})


def group_network(rc: Replctl) -> None:
    add_locations(rc, "A", "B", "D")
    connect(rc, "A", "B")
    rc("topology", "group", "G", "A", "B")


def test_redundant_filtered_connections_of_a_group_are_accepted_with_identical_filters(rc: Replctl) -> None:
    group_network(rc)
    rc("topology", "add", "D", "A", "--filter", "key = 'd'")
    rc("topology", "add", "D", "B", "--filter", "KEY   =   'd'")  # the same meaning (RFC2)
    rc("topology", "validate")


def test_redundant_filtered_connections_with_different_filters_are_refused(rc: Replctl) -> None:
    group_network(rc)
    rc("topology", "add", "D", "A", "--filter", "key = 'd'")
    assert_refused(rc, ["topology", "add", "D", "B", "--filter", "key = 'other'"], "RFC2")


def test_changing_one_redundant_connection_alone_is_refused_but_the_group_changes_in_one_step(
    rc: Replctl,
) -> None:
    group_network(rc)
    rc("topology", "add", "D", "A", "--filter", "key = 'd'")
    rc("topology", "add", "D", "B", "--filter", "key = 'd'")
    assert_refused(rc, ["topology", "filter", "D", "A", "--set", "key = 'e'"], "RFC2")
    rc("topology", "filter", "D", "G", "--set", "key = 'e'")
    filters = {(c["source"], c["target"]): c["filter"] for c in rc.json("status")["connections"]}
    assert filters[("D", "A")] == filters[("D", "B")] == "key = 'e'"


def test_failover_moves_the_connections_to_another_group_member(rc: Replctl) -> None:
    group_network(rc)
    rc("topology", "add", "D", "A", "--filter", "key = 'd'")
    rc("topology", "add", "A", "D")
    rc("topology", "failover", "D", "--from", "A", "--to", "B")
    conns = {(c["source"], c["target"]): (c["state"], c["filter"]) for c in rc.json("status")["connections"]}
    assert conns[("D", "B")] == ("active", "key = 'd'")
    assert conns[("B", "D")][1] is None
    assert conns[("D", "A")][0] == "removed" and conns[("A", "D")][0] == "removed"
    kinds = [c["kind"] for c in rc.json("topology", "history")["changes"]]
    assert "failover" in kinds
    rc("topology", "validate")


def test_failover_outside_a_declared_group_is_refused_with_a_hint_to_declare_it(rc: Replctl) -> None:
    add_locations(rc, "A", "B", "D")
    connect(rc, "A", "B")
    rc("topology", "add", "D", "A")
    doc = assert_refused(rc, ["topology", "failover", "D", "--from", "A", "--to", "B"], "FO1")
    assert "topology group" in doc["error"]["hint"]


def test_a_retired_id_cannot_be_added_again(rc: Replctl) -> None:
    add_locations(rc, "A")
    rc("location", "retire", "A")
    assert_refused(rc, ["location", "add", "A"], "M1")


def test_retiring_a_location_with_a_current_connection_is_refused_with_the_commands_to_run(
    rc: Replctl,
) -> None:
    add_locations(rc, "A", "B")
    connect(rc, "A", "B")
    doc = assert_refused(rc, ["location", "retire", "A"], "RET1")
    assert "replctl topology remove" in doc["error"]["hint"]


def test_unknown_names_exit_2(rc: Replctl) -> None:
    add_locations(rc, "A")
    doc = rc.json("topology", "add", "A", "NOPE", expect=2)
    assert doc["error"]["code"] == "unknown-location"


def test_a_bad_filter_exits_2_with_the_position_of_the_error(rc: Replctl) -> None:
    add_locations(rc, "A", "B")
    doc = rc.json("topology", "add", "A", "B", "--filter", "key = = 'x'", expect=2)
    assert doc["error"]["code"] == "bad-filter"
    assert "column" in doc["error"]["message"].lower()
    assert rc.json("status")["connections"] == []


def test_dry_run_changes_nothing_but_reports_what_would_happen(rc: Replctl) -> None:
    add_locations(rc, "A", "B")
    before = rc.snapshot()
    doc = rc.json("topology", "add", "A", "B", "--dry-run")
    assert doc["dry_run"] is True
    assert [c["kind"] for c in doc["changes"]] == ["connection-added"]
    assert doc["connections"][0]["state"] == "active"
    assert rc.snapshot() == before


def test_the_reason_is_kept_in_the_journal(rc: Replctl) -> None:
    rc("location", "add", "A", "--reason", "new region")
    ops = rc.json("ops", "list")["operations"]
    assert ops[0]["command"] == "location add" and ops[0]["reason"] == "new region"
    assert ops[0]["outcome"] == "succeeded"
    shown = rc.json("ops", "show", ops[0]["id"])["operation"]
    assert shown["steps"][0]["name"] == "record-changes"


def test_following_the_f1_refusals_group_hint_step_by_step_is_accepted_rfc1_rfc2(rc: Replctl) -> None:
    # A→B, A→C, C→B: a filter on A→C lies on the cycle A–C–B (F1). The hint's group alone would lead into
    # RFC2 (A→C filtered, A→B not, across one contracted bridge); its second command filters both alike.
    for name in "ABC":
        rc("location", "add", name)
    rc("topology", "add", "A", "B")
    rc("topology", "add", "A", "C")
    rc("topology", "add", "C", "B")
    error = rc.json("topology", "filter", "A", "C", "--set", "key = 'k'", expect=3)["error"]
    assert error["code"] == "F1"
    assert error["hint"] == (
        "if C, B are redundant replicas, declare them as a group first (RFC1): replctl topology group NAME C B, "
        "then: replctl topology filter A NAME --set EXPR (RFC2: every connection alike)"
    )
    for step in error["hint"].split(": ", 1)[1].split(", then: "):
        command = step.split(" (RFC2")[0].replace("NAME", "G").split()[1:]
        if "EXPR" in command:
            command[command.index("EXPR")] = "key = 'k'"
        rc(*command)
    assert {(c["source"], c["target"]): c["filter"] for c in rc.json("status")["connections"]} == {
        ("A", "B"): "key = 'k'",
        ("A", "C"): "key = 'k'",
        ("C", "B"): None,
    }


@pytest.mark.parametrize("twin_state", ["active", "retired"])
def test_a_location_id_that_differs_only_in_case_is_refused(rc: Replctl, twin_state: str) -> None:
    # On a store whose file system ignores case `eu` and `EU` would share one folder, and `log compact eu
    # --gc` would collect EU's segments as orphans (M1: an id is unique, in more than case).
    rc("location", "add", "eu")
    if twin_state == "retired":
        rc("location", "retire", "eu")
    twin = "eu (retired)" if twin_state == "retired" else "eu"
    message = (
        f"location id EU differs only in case from location {twin}; on a store whose file system ignores "
        "case (macOS and Windows defaults, SMB and NAS mounts) both logs would share one folder, so an id "
        "must differ from every other in more than case (M1)"
    )
    hint = "choose a location id that differs in more than case: replctl location add NEW-NAME"
    before = rc.snapshot()
    doc = rc.json("location", "add", "EU", expect=2)
    assert doc["ok"] is False
    assert doc["error"] == {
        "code": "name-taken",
        "message": message,
        "hint": hint,
        "details": {
            "twin": "eu",
            "violations": [{"code": "name-taken", "message": message, "hint": hint, "warning": False}],
        },
    }
    text = rc("location", "add", "EU", expect=2)
    assert message in " ".join(text.stderr.split()) and f"hint: {hint}" in " ".join(text.stderr.split())
    assert rc.snapshot() == before, "a refusal must change nothing"
