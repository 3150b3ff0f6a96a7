"""Reconnects, repeated deletion requests and the clock after a loss, through the CLI (rules.md ADD3, ADD4,
DEL4, DR1, DR2). Each story is one numbered case of issue 20, with the exact contents of every log as
(origin, origin_time, key) in seq order and the exit code of every command that could end otherwise.
"""

from __future__ import annotations

import pytest
from clitool import Replctl

pytestmark = pytest.mark.spark


def test_add4_dr2_a_reconnect_after_a_removal_and_a_loss_starts_at_zero_in_both_directions(
    rc: Replctl,
) -> None:
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("B", "b1", "b2", "b3")
    rc("replicate")
    assert rc.stored("A") == [("B", 1, "b1"), ("B", 2, "b2"), ("B", 3, "b3")]
    rc("topology", "remove", "A", "B", "--both")
    rc("drill", "disaster", "A", "--from", "1")
    doc = rc.json("recover", "location", "A")
    # DR2: removed connections are reset too; DR1: A's clock stays at the seq the catalog recorded.
    assert doc["progress_resets"] == [
        {"source": "A", "target": "B", "from": 3, "to": 0},
        {"source": "B", "target": "A", "from": 3, "to": 0},
    ]
    assert doc["clock"] == {"before": 3, "after": 3, "floor": 3}
    assert rc.json("log", "verify")["ok"]
    rc.append("A", "a1", "a2")
    rc("topology", "add", "A", "B", "--both")
    conns = rc.connections()
    assert (conns[("A", "B")]["progress"], conns[("B", "A")]["progress"]) == (0, 0)  # ADD4
    rc("replicate")
    assert rc.stored("A") == [("A", 4, "a1"), ("A", 5, "a2"), ("B", 1, "b1"), ("B", 2, "b2"), ("B", 3, "b3")]
    assert rc.stored("B") == [("B", 1, "b1"), ("B", 2, "b2"), ("B", 3, "b3"), ("A", 4, "a1"), ("A", 5, "a2")]
    assert rc.json("log", "verify")["ok"]


def test_add4_a_reconnect_delivers_what_the_removed_connections_filter_skipped(rc: Replctl) -> None:
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc("topology", "filter", "B", "A", "--set", "key = 'k1'")
    rc.append("B", "k2", "k2")
    rc("topology", "remove", "A", "B")
    rc("replicate")
    assert rc.stored("A") == []
    assert rc.connection("B", "A")["progress"] == 2  # REP2: progress passes over filtered events
    rc("topology", "remove", "B", "A")
    rc("topology", "add", "B", "A", "--both")
    again = rc.connection("B", "A")
    assert (again["progress"], again["filter"], again["ever_filtered"]) == (0, None, True)  # ADD4, H3
    rc("replicate")
    assert rc.stored("A") == [("B", 1, "k2"), ("B", 2, "k2")]
    assert rc.stored("B") == [("B", 1, "k2"), ("B", 2, "k2")]
    assert rc.json("log", "verify")["ok"]


def test_del4_a_smaller_deletion_request_keeps_the_larger_pending_one(rc: Replctl) -> None:
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "u1")
    rc("replicate")
    rc.append("A", "u2", "u3")
    first = rc("delete", "A", "--upto", "3", "--json", expect=5).doc
    assert (first["deleted_upto"], first["logical_deleted_upto"], first["pending"]) == (1, 3, True)
    second = rc("delete", "A", "--upto", "2", "--json", expect=5).doc
    assert rc.json("status")["pending_deletions"] == [
        {"location": "A", "requested_upto": 3, "blocked_by": [{"target": "B", "first_blocked_seq": None}]}
    ]
    assert (second["requested_upto"], second["pending_upto"], second["deleted_upto"]) == (2, 3, 1)
    assert second["blocked_by"] == [{"target": "B", "first_blocked_seq": 2}]
    assert rc.stored("A") == [("A", 2, "u2"), ("A", 3, "u3")]
    rc("replicate")
    assert rc.stored("A") == []
    assert rc.stored("B") == [("A", 1, "u1"), ("A", 2, "u2"), ("A", 3, "u3")]
    state = rc.location("A")
    assert (state["deleted_upto"], state["logical_deleted_upto"], state["dvv"]) == (3, 3, {"A": 3})
    assert rc.json("status")["pending_deletions"] == []
    assert rc.json("log", "verify")["ok"]


def test_del1_del4_a_pending_request_beyond_the_log_end_never_reaches_events_appended_later(
    rc: Replctl,
) -> None:
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B")
    rc.append("A", "a1")
    doc = rc("delete", "A", "--upto", "5", "--json", expect=5).doc
    assert rc.json("status")["pending_deletions"] == [
        {"location": "A", "requested_upto": 1, "blocked_by": [{"target": "B", "first_blocked_seq": None}]}
    ]
    assert (doc["requested_upto"], doc["pending_upto"], doc["logical_deleted_upto"]) == (5, 1, 1)
    rc.append("A", "a2", "a3")  # appended after the request: not part of it (DEL1: min(N, X.seq))
    rc("replicate")
    assert rc.stored("A") == [("A", 2, "a2"), ("A", 3, "a3")]
    assert rc.stored("B") == [("A", 1, "a1"), ("A", 2, "a2"), ("A", 3, "a3")]
    state = rc.location("A")
    assert (state["deleted_upto"], state["logical_deleted_upto"], state["dvv"]) == (1, 1, {"A": 1})
    assert rc.json("status")["pending_deletions"] == []
    assert rc.json("log", "verify")["ok"]


def test_del4_a_pending_deletion_is_retried_after_replicating_a_pair_it_is_not_part_of(rc: Replctl) -> None:
    for name in "ABC":
        rc("location", "add", name)
    rc("topology", "add", "A", "B")
    rc("topology", "add", "A", "C")
    rc("topology", "add", "B", "C")
    rc.append("A", "a1")
    rc("replicate", "A", "B")
    held = rc("delete", "A", "--upto", "1", "--json", expect=5).doc
    assert held["blocked_by"] == [{"target": "C", "first_blocked_seq": 1}]
    doc = rc.json("replicate", "B", "C")  # C receives a1 through B, so A's deletion may now proceed
    assert [(d["location"], d["pending"], d["deleted_upto"]) for d in doc["deletions"]] == [("A", False, 1)]
    assert rc.stored("A") == []
    assert rc.stored("B") == [("A", 1, "a1")]
    assert rc.stored("C") == [("A", 1, "a1")]
    assert rc.json("status")["pending_deletions"] == []
    assert rc.json("log", "verify")["ok"]


def test_a_logical_deletion_says_that_an_earlier_physical_request_still_waits_and_exits_0(
    rc: Replctl,
) -> None:
    # DEL1/DEL4: `delete --logical` answered `pending: false` while A's physical request up to 2 still waited
    # for B; it is done at once (exit 0), and it now says that the earlier request waits, and up to where.
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B")
    rc.append("A", "a1", "a2", "a3")
    rc("delete", "A", "--upto", "2", expect=5)  # B holds none of them: the whole request waits
    doc = rc.json("delete", "A", "--upto", "3", "--logical")
    assert doc == {
        "ok": True,
        "location": "A",
        "requested_upto": 3,
        "logical": True,
        "dry_run": False,
        "logical_deleted_upto": 3,
        "deleted_upto": 0,
        "dvv": {},
        "pending": True,
        "pending_upto": 2,
        "blocked_by": [],
        "would_delete": None,
    }
    out = rc("delete", "A", "--upto", "3", "--logical")
    assert out.stdout.splitlines() == [
        "A: logically deleted up to 3, physically up to 0; DVV {}",
        "an earlier physical deletion up to 2 still waits (DEL4); it is retried after every replicate run "
        "(hint: replctl replicate, then replctl delete A --upto 2)",
    ]
    # The logical request neither joined nor cleared the waiting one, and was journalled as done.
    assert rc.json("status")["pending_deletions"] == [
        {"location": "A", "requested_upto": 2, "blocked_by": [{"target": "B", "first_blocked_seq": None}]}
    ]
    assert [op["outcome"] for op in rc.json("ops", "list")["operations"][:2]] == ["succeeded", "succeeded"]
    assert rc.stored("A") == [("A", 1, "a1"), ("A", 2, "a2"), ("A", 3, "a3")]
    rc("replicate")
    assert rc.stored("A") == [("A", 3, "a3")]
    assert rc.json("delete", "A", "--upto", "3", "--logical")["pending"] is False


def test_dr1_after_a_loss_a_new_event_never_takes_the_seq_of_a_pending_deletion(rc: Replctl) -> None:
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "a1")
    rc("delete", "A", "--upto", "1", expect=5)  # B lacks a1: pending, logically deleted at once
    rc("drill", "disaster", "A", "--from", "1")
    doc = rc.json("recover", "location", "A")
    assert doc["rounds"] == [{"round": 1, "sources": ["B"], "written": 0}]
    assert doc["clock"] == {"before": 1, "after": 1, "floor": 1}
    rc.append("A", "a2")
    shown = rc.json("log", "show", "A")
    assert [(e["seq"], e["origin"], e["origin_time"], e["key"]) for e in shown["events"]] == [
        (2, "A", 2, "a2")
    ]
    assert shown["logical_deleted_upto"] == 1  # a2 is not hidden
    rc("replicate")
    assert rc.stored("A") == [("A", 2, "a2")]
    assert rc.stored("B") == [("A", 2, "a2")]
    state = rc.location("A")
    assert (state["deleted_upto"], state["dvv"]) == (1, {})
    assert rc.json("status")["pending_deletions"] == []
    assert rc.json("log", "verify")["ok"]


def test_dr1_events_recovered_after_a_loss_are_numbered_past_a_pending_deletion(rc: Replctl) -> None:
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("B", "b1")
    rc("replicate", "B", "A")
    rc.append("A", "a1")
    rc.append("B", "b2")
    rc("replicate", "B", "A")
    assert rc.stored("A") == [("B", 1, "b1"), ("A", 2, "a1"), ("B", 2, "b2")]
    doc = rc("delete", "A", "--upto", "3", "--json", expect=5).doc
    assert (doc["deleted_upto"], doc["blocked_by"]) == (1, [{"target": "B", "first_blocked_seq": 2}])
    rc("drill", "disaster", "A", "--from", "2")  # a1 never left A: lost for good
    doc = rc.json("recover", "location", "A")
    assert doc["rounds"] == [{"round": 1, "sources": ["B"], "written": 1}]
    assert doc["clock"] == {"before": 3, "after": 5, "floor": 3}
    shown = rc.json("log", "show", "A")
    # b2 comes back past the pending request up to 3 (after T, in B's spacing): no deletion reaches it.
    assert [(e["seq"], e["origin"], e["origin_time"], e["key"]) for e in shown["events"]] == [
        (5, "B", 2, "b2")
    ]
    rc("replicate")
    assert rc.stored("A") == [("B", 2, "b2")]
    assert rc.stored("B") == [("B", 1, "b1"), ("B", 2, "b2")]
    state = rc.location("A")
    assert (state["deleted_upto"], state["logical_deleted_upto"], state["dvv"]) == (3, 3, {"B": 1})
    assert rc.json("status")["pending_deletions"] == []
    assert rc.json("log", "verify")["ok"]


def test_add3_history_mode_of_a_both_ways_connection_applies_to_both_directions(rc: Replctl) -> None:
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc.append("A", "a1")
    rc.append("B", "b1")
    added = rc.json("topology", "add", "A", "B", "--both", "--history", "none")
    starts = {
        (c["source"], c["target"]): (c["history"], c["baseline"], c["state"]) for c in added["connections"]
    }
    assert starts == {("A", "B"): ("none", {"A": 1}, "active"), ("B", "A"): ("none", {"B": 1}, "active")}
    rc.append("A", "a2")
    rc.append("B", "b2")
    rc("replicate")
    assert rc.stored("A") == [("A", 1, "a1"), ("A", 2, "a2"), ("B", 2, "b2")]
    assert rc.stored("B") == [("B", 1, "b1"), ("B", 2, "b2"), ("A", 2, "a2")]
    assert rc.json("log", "verify")["ok"]
