"""Location addition stories through the CLI (rules.md ADD1–ADD3) and the fast bootstrap."""

from __future__ import annotations

import pytest
from clitool import Replctl

pytestmark = pytest.mark.spark


def test_the_seeds_location_addition_example_leaves_no_location_missing_events(rc: Replctl) -> None:
    for name in "ABC":
        rc("location", "add", name)
    rc("topology", "add", "A", "B", "--both")
    rc("topology", "add", "B", "C", "--both")
    rc.append("A", "e1", "e2", "e3")
    rc("replicate", "A", "B")  # B has e1..e3, C not yet
    rc("delete", "A", "--upto", "2")  # allowed: A's only target B has them
    rc("location", "add", "D")
    dry = rc.json("topology", "add", "A", "D", "--both", "--dry-run")
    assert {(c["source"], c["target"]): c["state"] for c in dry["connections"]} == {
        ("A", "D"): "pending",
        ("D", "A"): "active",
    }
    rc("topology", "add", "A", "D", "--both")
    rc("topology", "add", "C", "D", "--both")
    state = rc.connections()
    assert state[("A", "D")]["state"] == "pending" and "ADD1" in state[("A", "D")]["reason"]
    assert state[("D", "A")]["state"] == "active"
    assert state[("C", "D")]["state"] == "active" and state[("D", "C")]["state"] == "active"
    rc("replicate")
    assert rc.connections()[("A", "D")]["state"] == "active"
    for name in "BCD":
        assert rc.keys(name) == ["e1", "e2", "e3"], name
    assert rc.keys("A") == ["e3"]
    assert rc.json("log", "verify")["ok"]


def test_a_location_asking_for_only_new_events_gets_only_those_while_other_connections_wait(
    rc: Replctl,
) -> None:
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "a1", "a2")
    rc.append("B", "b1")
    rc("replicate")
    rc("delete", "B", "--upto", "1")  # B deleted b1: DVV-B = {B:1}
    rc("location", "add", "D")
    waiting = rc.json("topology", "add", "B", "D")
    assert waiting["connections"][0]["state"] == "pending"  # ADD1: D lacks b1, which B deleted
    joined = rc.json("topology", "add", "A", "D", "--history", "none")
    assert joined["connections"][0]["baseline"] == {"A": 2, "B": 1}
    rc.append("A", "a3")
    rc.append("B", "b2")
    rc("replicate")
    assert rc.connections()[("B", "D")]["state"] == "active"  # D's baseline now covers b1
    assert sorted(rc.keys("D")) == ["a3", "b2"]
    assert rc.json("log", "verify")["ok"]


def test_a_location_that_joined_with_current_history_passes_its_deletion_knowledge_to_a_later_joiner(
    rc: Replctl,
) -> None:
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "a1", "a2", "a3")
    rc("replicate")
    rc("delete", "A", "--upto", "2")
    rc("location", "add", "C")
    rc("topology", "add", "A", "C", "--history", "current")
    rc("replicate")
    assert rc.keys("C") == ["a3"]
    assert (rc.location("C")["cvv"], rc.location("C")["dvv"]) == ({"A": 3}, {"A": 2})
    rc("location", "add", "D")
    later = rc.json("topology", "add", "C", "D")
    assert later["connections"][0]["state"] == "pending"  # C passes on what it never had
    rc("topology", "add", "B", "D")
    rc("replicate")
    assert rc.keys("D") == ["a1", "a2", "a3"]
    assert rc.connections()[("C", "D")]["state"] == "active"
    assert rc.json("log", "verify")["ok"]


def test_the_fast_bootstrap_copies_segments_and_ends_exactly_as_an_ordinary_pass(rc: Replctl) -> None:
    rc("location", "add", "A")
    rc.append("A", "a1", "a2")
    rc.append("A", "a3")
    for name in ("FAST", "SLOW"):
        rc("location", "add", name)
    rc("topology", "add", "A", "FAST")
    # "true" admits everything but is a filter, so this connection takes the ordinary pass.
    rc("topology", "add", "A", "SLOW", "--filter", "true")
    fast = rc.json("replicate", "A", "FAST")["passes"][0]
    slow = rc.json("replicate", "A", "SLOW")["passes"][0]
    assert (fast["action"], slow["action"]) == ("copied", "ran")
    assert (fast["written"], fast["progress"]) == (slow["written"], slow["progress"]) == (3, 3)
    strip = [
        {k: e[k] for k in ("seq", "origin", "origin_time", "vt", "key")}
        for e in rc.json("log", "show", "FAST")["events"]
    ]
    assert strip == [
        {k: e[k] for k in ("seq", "origin", "origin_time", "vt", "key")}
        for e in rc.json("log", "show", "SLOW")["events"]
    ]
    assert [e["key"] for e in rc.json("log", "show", "FAST")["events"]] == ["a1", "a2", "a3"]
    assert (rc.location("FAST")["cvv"], rc.location("FAST")["seq"]) == (
        rc.location("SLOW")["cvv"],
        rc.location("SLOW")["seq"],
    )
    rc.append("A", "a4")  # later passes are ordinary ones
    rc("replicate")
    assert rc.keys("FAST") == rc.keys("SLOW") == ["a1", "a2", "a3", "a4"]
    assert rc.json("log", "verify")["ok"]


def test_a_current_history_copy_after_an_accepted_loss_holds_nothing_its_baseline_covers_add3_cf1(
    rc: Replctl,
) -> None:
    # A keeps a1 through a disaster and accepts the loss of what B deleted (DR5: DVV-B = {A:2} joins DVV-A),
    # so A stores a1 although its DVV covers it. C joins from A with `current` history (ADD3): its baseline
    # covers a1, so the first pass skips it (CF1) and the file copy, which would hold a1, is not taken.
    for name in "AB":
        rc("location", "add", name)
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "a1", "a2", "a3")
    rc("replicate")
    rc("delete", "B", "--upto", "2")
    rc("drill", "disaster", "A", "--from", "2")
    rc("recover", "location", "A", "--accept-loss")
    rc("replicate")
    assert rc.stored("A") == [("A", 1, "a1"), ("A", 3, "a3")]
    rc("location", "add", "C")
    rc("topology", "add", "A", "C", "--history", "current")
    dry = rc.json("replicate", "A", "C", "--dry-run")["passes"]
    done = rc.json("replicate", "A", "C")["passes"]
    assert [(p["action"], p["skipped_causal"]) for p in dry] == [("would-run", None)]
    assert [(p["action"], p["written"], p["skipped_causal"]) for p in done] == [("ran", 1, 1)]
    assert rc.stored("C") == [("A", 3, "a3")]
    assert rc.json("log", "verify", "A", "C")["ok"]
