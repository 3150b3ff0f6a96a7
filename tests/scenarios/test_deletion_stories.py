"""Deletion stories through the CLI with exact log contents (rules.md DEL1–DEL4, ADD1, ADD2)."""

from __future__ import annotations

import pytest
from clitool import Replctl

pytestmark = pytest.mark.spark


def test_logical_and_physical_deletion_and_the_deleted_upto_arithmetic(rc: Replctl) -> None:
    rc("location", "add", "A")
    rc.append("A", "e1", "e2", "e3")
    doc = rc.json("delete", "A", "--upto", "2", "--logical")
    assert (doc["logical_deleted_upto"], doc["deleted_upto"], doc["pending"]) == (2, 0, False)
    assert rc.keys("A") == ["e1", "e2", "e3"]  # logically deleted events stay stored
    doc = rc.json("delete", "A", "--upto", "1")
    assert (doc["logical_deleted_upto"], doc["deleted_upto"], doc["dvv"]) == (2, 1, {"A": 1})
    assert rc.keys("A") == ["e2", "e3"]
    # max(previous, min(N, seq)): a request beyond the log stops at its end, a smaller one changes nothing.
    doc = rc.json("delete", "A", "--upto", "99")
    assert (doc["deleted_upto"], doc["logical_deleted_upto"], doc["dvv"]) == (3, 3, {"A": 3})
    doc = rc.json("delete", "A", "--upto", "1")
    assert doc["deleted_upto"] == 3
    assert rc.keys("A") == []
    state = rc.location("A")
    assert (state["deleted_upto"], state["dvv"], state["cvv"]) == (3, {"A": 3}, {"A": 3})
    rc.append("A", "e4")
    assert rc.json("log", "show", "A")["events"][0]["seq"] == 4
    assert rc.json("log", "verify")["ok"]


def test_deletion_waits_for_a_target_that_lacks_the_events_and_completes_after_replication(
    rc: Replctl,
) -> None:
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B")
    rc.append("A", "e1", "e2", "e3")
    rc("replicate", "A", "B")
    rc.append("A", "e4")
    dry = rc.json("delete", "A", "--upto", "4", "--dry-run")
    assert dry["would_delete"] == {"from": 1, "upto": 3}
    assert dry["blocked_by"] == [{"target": "B", "first_blocked_seq": 4}]
    assert rc.keys("A") == ["e1", "e2", "e3", "e4"]
    out = rc("delete", "A", "--upto", "4", "--json", expect=5)
    doc = out.doc
    assert (doc["deleted_upto"], doc["pending"]) == (3, True)
    assert doc["blocked_by"] == [{"target": "B", "first_blocked_seq": 4}]
    assert rc.keys("A") == ["e4"]
    pending = rc.json("status")["pending_deletions"]
    assert pending == [
        {"location": "A", "requested_upto": 4, "blocked_by": [{"target": "B", "first_blocked_seq": None}]}
    ]
    rc("replicate")
    assert rc.keys("A") == []
    assert rc.json("status")["pending_deletions"] == []
    assert rc.keys("B") == ["e1", "e2", "e3", "e4"]
    assert rc.location("A")["dvv"] == {"A": 4}
    matrix = rc.json("status")["matrix"]
    assert matrix["origins"] == ["A"]
    assert matrix["rows"] == {"A": {"A": {"max": 4, "deleted": 4}}, "B": {"A": {"max": 4, "deleted": 0}}}
    assert rc.json("log", "verify")["ok"]


def test_deletion_against_a_filtered_target_that_never_receives_some_events(rc: Replctl) -> None:
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--filter", "key <> 'private'")
    rc.append("A", "e1", "private", "e3")
    doc = rc("delete", "A", "--upto", "3", "--json", expect=5).doc
    assert doc["blocked_by"] == [{"target": "B", "first_blocked_seq": 1}]
    rc("replicate")
    # B never gets 'private', but its progress passed it (DEL3's progress form): all three may go.
    assert rc.keys("B") == ["e1", "e3"]
    assert rc.keys("A") == []
    assert rc.location("A")["deleted_upto"] == 3
    assert rc.json("log", "verify")["ok"]


def test_anomaly_2_deletion_in_a_cycle_waits_until_the_third_location_has_the_events(rc: Replctl) -> None:
    for name in "ABC":
        rc("location", "add", name)
    rc("topology", "add", "A", "B", "--both")
    rc("topology", "add", "B", "C", "--both")
    rc("topology", "add", "C", "A", "--both")
    rc.append("A", "e1", "e2")
    rc("replicate", "A", "B")
    # C lacks e1, e2; deleting them at A would let C receive later events of A first (anomaly 2).
    doc = rc("delete", "A", "--upto", "2", "--json", expect=5).doc
    assert doc["deleted_upto"] == 0 and doc["blocked_by"] == [{"target": "C", "first_blocked_seq": 1}]
    rc("replicate")
    assert rc.json("status")["pending_deletions"] == []
    assert rc.keys("A") == []
    assert rc.keys("B") == ["e1", "e2"] and rc.keys("C") == ["e1", "e2"]
    assert rc.json("log", "verify")["ok"]


def test_a_new_connection_waits_while_its_source_has_deleted_what_the_target_lacks_then_starts(
    rc: Replctl,
) -> None:
    for name in "ABC":
        rc("location", "add", name)
    rc("topology", "add", "A", "B")
    rc.append("A", "e1", "e2", "e3")
    rc("replicate")
    rc("delete", "A", "--upto", "2")
    rc("topology", "add", "B", "C")
    dry = rc.json("topology", "add", "A", "C", "--dry-run")
    assert dry["connections"][0]["state"] == "pending"
    added = rc.json("topology", "add", "A", "C")
    assert added["connections"][0]["state"] == "pending"
    assert "ADD1" in added["connections"][0]["reason"]
    first = {(p["source"], p["target"]): p for p in rc.json("replicate", "A", "C")["passes"]}
    assert first[("A", "C")]["state"] == "pending" and first[("A", "C")]["action"] == "wait"
    assert rc.keys("C") == []
    rc("replicate")
    assert rc.keys("C") == ["e1", "e2", "e3"]
    conns = {(c["source"], c["target"]): c["state"] for c in rc.json("status")["connections"]}
    assert conns[("A", "C")] == "active"
    assert rc.json("log", "verify")["ok"]


def test_deletion_requested_right_after_a_connect_waits_for_the_new_target(rc: Replctl) -> None:
    rc("location", "add", "A")
    rc.append("A", "e1", "e2")
    rc("location", "add", "N")
    rc("topology", "add", "A", "N")
    doc = rc("delete", "A", "--upto", "2", "--json", expect=5).doc
    assert doc["blocked_by"] == [{"target": "N", "first_blocked_seq": 1}]
    rc("replicate")
    assert rc.keys("N") == ["e1", "e2"] and rc.keys("A") == []
    assert rc.json("log", "verify")["ok"]


def test_status_names_who_holds_a_pending_deletion_back_after_a_failover_not_the_removed_target(
    rc: Replctl,
) -> None:
    # Operator trial: after `topology failover` the pending deletion's record still named A, whose connection
    # from D the failover removed; the dry run (DEL3/DEL4) names B. `status` reports the holders now.
    for name in ("A", "B", "D"):
        rc("location", "add", name)
    rc("topology", "add", "A", "B", "--both")
    rc("topology", "group", "G", "A", "B")
    rc("topology", "add", "A", "D", "--both", "--filter", "key like 'x%'")
    rc.append("D", "x1", "y1", "x2")
    rc("replicate", "D", "A")
    rc.append("D", "x3", "y2")
    assert rc("delete", "D", "--upto", "5", "--json", expect=5).doc["blocked_by"] == [
        {"target": "A", "first_blocked_seq": 4}
    ]
    rc("topology", "failover", "D", "--from", "A", "--to", "B")
    dry = rc.json("delete", "D", "--upto", "5", "--dry-run")
    assert dry["blocked_by"] == [{"target": "B", "first_blocked_seq": 4}]
    assert rc.json("status")["pending_deletions"] == [
        {"location": "D", "requested_upto": 5, "blocked_by": [{"target": "B", "first_blocked_seq": None}]}
    ]
    assert "pending deletion at D up to 5, held back by B\n" in rc("status").stdout
