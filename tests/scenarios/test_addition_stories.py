"""Location addition stories through the CLI (rules.md ADD1–ADD3) and the fast bootstrap."""

from __future__ import annotations

import pytest
from clitool import Replctl, a_between_b_and_c

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


def test_a_current_history_copy_after_an_accepted_loss_receives_what_the_source_still_stores_add3(
    rc: Replctl,
) -> None:
    # A keeps a1 through a disaster and accepts the loss of what B deleted (DR5: DVV-B = {A:2} joins DVV-A),
    # so A stores a1 although its DVV covers it. C joins from A with `current` history (ADD3: C receives
    # every event A still stores): C holds the entry A:2 back as A does, so the first pass does not skip a1
    # (CF1), and C counts the entry once a1 is there. A joiner from C takes the same entry the same way.
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
    joined = rc.json("topology", "add", "A", "C", "--history", "current")["connections"]
    assert [(c["state"], c["baseline"]) for c in joined] == [("active", {"A": 2})]
    assert (rc.location("C")["cvv"], rc.location("C")["dvv"]) == ({}, {"A": 2})
    dry = rc.json("replicate", "A", "C", "--dry-run")["passes"]
    done = rc.json("replicate", "A", "C")["passes"]
    assert [p["action"] for p in dry] == ["would-run"]
    assert [(p["action"], p["written"], p["skipped_causal"]) for p in done] == [("ran", 2, 0)]
    assert rc.stored("C") == [("A", 1, "a1"), ("A", 3, "a3")]
    assert (rc.location("C")["cvv"], rc.location("C")["dvv"]) == ({"A": 3}, {"A": 2})
    rc("location", "add", "D")
    rc("topology", "add", "C", "D", "--history", "current")
    rc("replicate", "C", "D")
    assert rc.stored("D") == [("A", 1, "a1"), ("A", 3, "a3")]
    assert rc.json("log", "verify", "A", "C", "D")["ok"]


def test_a_current_history_joiner_receives_the_foreign_events_an_accepted_entry_covers_at_its_source(
    rc: Replctl,
) -> None:
    # A accepts the loss of C:4, which B and C deleted, while it still stores c2 and c3 under that entry
    # (DR5: DVV-A = {C:4}). E joins from A with `current` history. Merged into CVV-E at once, C:4 made CF1
    # skip c2 and c3 for good although A stores them (ADD3); E now holds it back until they are there, and
    # until then A may not delete them (DEL3).
    a_between_b_and_c(rc, "c1", "c2", "c3", "c4")
    rc("delete", "A", "--upto", "1")
    rc("delete", "B", "--upto", "4")
    rc("delete", "C", "--upto", "4")
    rc("drill", "disaster", "A", "--from", "4")  # A loses c4
    rc("recover", "location", "A", "--accept-loss")
    assert rc.stored("A") == [("C", 2, "c2"), ("C", 3, "c3")]
    assert (rc.location("A")["cvv"], rc.location("A")["dvv"]) == ({"C": 4}, {"C": 4})
    rc("location", "add", "E")
    rc("topology", "add", "A", "E", "--history", "current")
    assert (rc.location("E")["cvv"], rc.location("E")["dvv"]) == ({}, {"C": 4})
    held = rc("delete", "A", "--upto", "4", expect=5)
    assert "waits [DEL3]: E still needs seq 2" in held.stdout
    assert rc.location("A")["deleted_upto"] == 1
    rc("replicate", "A", "E")
    assert rc.stored("E") == [("C", 2, "c2"), ("C", 3, "c3")]
    assert (rc.location("E")["cvv"], rc.location("E")["dvv"]) == ({"C": 4}, {"C": 4})
    assert rc.location("A")["deleted_upto"] == 4  # the pending deletion went on once E held them (DEL4)
    assert rc.json("log", "verify", "A", "E")["ok"]


def test_a_source_that_deleted_events_a_held_entry_waits_for_starts_only_once_the_entry_counts_add1(
    rc: Replctl,
) -> None:
    # E holds C:4 back until X's c2 and c3 are there (ADD3 `current` after X accepted a loss). D deleted c1
    # and c2 itself (DVV-D = {C:2}) and still stores c3 and c4. Had D→E started at once, its pass (sorted
    # before X→E) would raise CVV-E to C:4, the entry would count, X→E would skip c2, and X could then delete
    # the last copy of c2. ADD1 keeps D→E pending until E counts the entry.
    for name in "BCDX":
        rc("location", "add", name)
    rc("topology", "add", "X", "B", "--both")
    rc("topology", "add", "X", "C", "--both")
    rc("topology", "add", "C", "D")
    rc.append("C", "c1", "c2", "c3", "c4")
    rc("replicate")
    rc("delete", "D", "--upto", "2")
    rc("delete", "X", "--upto", "1")
    rc("delete", "B", "--upto", "4")
    rc("delete", "C", "--upto", "4")
    rc("drill", "disaster", "X", "--from", "4")
    rc("recover", "location", "X", "--accept-loss")
    assert rc.stored("X") == [("C", 2, "c2"), ("C", 3, "c3")]
    rc("location", "add", "E")
    rc("topology", "add", "X", "E", "--history", "current")
    waiting = rc.json("topology", "add", "D", "E")["connections"]
    assert [(c["state"], c["reason"]) for c in waiting] == [
        (
            "pending",
            "waits [ADD1]: the source deleted events the target lacks (C: deleted up to 2, target has 0)",
        )
    ]
    rc("replicate")
    assert rc.stored("E") == [("C", 2, "c2"), ("C", 3, "c3")]
    assert rc.location("E")["cvv"] == {"C": 4}
    assert rc.connections()[("D", "E")]["state"] == "active"
    assert rc.json("log", "verify", "D", "E", "X")["ok"]
