"""Knowledge merged without events (an accepted loss, DR5) never covers events a later loss takes (DR1).

An accepted loss merges a neighbour's DVV into CVV-A: A gives up the origin times it lacked. The entry merged
also covers, by its number alone, the events of that origin A did hold then. A later loss of those events must
not find them "known": a neighbour that still stores them has to bring them back, or the recovery names them
lost. Each story asserts the exact log contents a second disaster leaves.
"""

from __future__ import annotations

import pytest
from clitool import Replctl

pytestmark = pytest.mark.spark


def accepted_loss_with_d_holding_b1_b2(rc: Replctl) -> None:
    """A↔B and A↔D; A holds b1..b4, D only b1, b2; B deletes b1..b4; A loses b3, b4 and accepts that
    loss (nobody stores them any more): A's CVV[B] = 4 covers b1, b2, which A still stores."""
    for name in ("A", "B", "D"):
        rc("location", "add", name)
    rc("topology", "add", "A", "B", "--both")
    rc("topology", "add", "A", "D", "--both")
    rc.append("B", "b1", "b2")
    rc("replicate", "B", "A")
    rc("replicate", "A", "D")
    rc.append("B", "b3", "b4")
    rc("replicate", "B", "A")
    rc("delete", "B", "--upto", "4")  # A holds them all (DEL3): B may delete them
    assert (rc.keys("A"), rc.keys("B"), rc.keys("D")) == (["b1", "b2", "b3", "b4"], [], ["b1", "b2"])
    rc("drill", "disaster", "A", "--from", "3")
    refused = rc.json("recover", "location", "A", expect=5)
    assert [(r["source"], r["rule"], r["missing"]) for r in refused["refused"]] == [
        ("B", "DR4", {"B": [3, 4]})
    ]
    accepted = rc.json("recover", "location", "A", "--accept-loss")
    assert (accepted["accepted"], accepted["given_up"], accepted["lost"]) == (
        ["B"],
        {"B": {"B": [3, 4]}},
        {"B": [3, 4]},
    )
    assert rc.keys("A") == ["b1", "b2"]
    # DVV-A takes the entry too (DR5): a location that relies on A for B's events sees that A lacks b3, b4
    # (ADD1, DR4). Only A's own later recovery has to tell it from a deletion (DR1).
    assert (rc.location("A")["cvv"], rc.location("A")["dvv"]) == ({"B": 4}, {"B": 4})


def test_events_a_held_when_it_accepted_a_loss_come_back_from_a_neighbour_after_a_total_loss(
    rc: Replctl,
) -> None:
    accepted_loss_with_d_holding_b1_b2(rc)
    rc.append("B", "b5")
    rc("replicate")
    assert rc.keys("A") == ["b1", "b2", "b5"]
    rc("drill", "disaster", "A", "--from", "1")
    plan = rc.json("recover", "location", "A", "--dry-run")
    doc = rc.json("recover", "location", "A")
    # D still stores b1, b2: the entry B:4 merged by the accepted loss must not hide them (CF1). D serves
    # first; once A holds again what it held when it accepted, the given-up range b3, b4 is known again and
    # B (DVV B:4) serves b5 (DR4).
    assert [r["sources"] for r in doc["rounds"]] == [["D"], ["B"]]
    assert [r["sources"] for r in plan["rounds"]] == [["D"], ["B"]]
    assert (doc["refused"], doc["lost"]) == ([], {})
    assert (plan["refused"], plan["lost"]) == ([], {})
    assert rc.keys("A") == ["b1", "b2", "b5"]
    assert (rc.location("A")["cvv"], rc.location("A")["dvv"]) == ({"B": 5}, {"B": 4})
    assert rc.json("log", "verify")["ok"]


def test_events_nobody_else_stores_are_named_lost_after_a_total_loss_not_hidden_by_the_accepted_entry(
    rc: Replctl,
) -> None:
    accepted_loss_with_d_holding_b1_b2(rc)
    rc("delete", "D", "--upto", "2")  # A holds b1, b2: D may delete them, and now only A stores them
    rc("drill", "disaster", "A", "--from", "1")
    plan = rc.json("recover", "location", "A", "--accept-loss", "--dry-run")
    doc = rc.json("recover", "location", "A", "--accept-loss")
    # b1, b2 were A's alone: lost now, and said so (before the fix the entry B:4 covered them: no word).
    # D gives up least and is accepted first; then A's vector counts the old entry B:4 again and B serves.
    for report in (plan, doc):
        assert (report["accepted"], report["given_up"]) == (["D"], {"D": {"B": [1, 2]}})
        assert [r["sources"] for r in report["rounds"]] == [["B", "D"]]
        assert (report["refused"], report["lost"]) == ([], {"B": [1, 2]})
    assert rc.keys("A") == []
    assert rc.location("A")["cvv"] == {"B": 4}
    assert rc.json("log", "verify")["ok"]


def c_accepted_the_loss_of_b1_b2(rc: Replctl) -> None:
    """A↔B, B↔C, A↔D; b1, b2 everywhere; B deletes them; C loses them and accepts: C's CVV covers b1, b2,
    which C does not hold, and its DVV says so (DR5)."""
    for name in "ABCD":
        rc("location", "add", name)
    rc("topology", "add", "A", "B", "--both")
    rc("topology", "add", "B", "C", "--both")
    rc("topology", "add", "A", "D", "--both")
    rc.append("B", "b1", "b2")
    rc("replicate")
    rc("replicate")
    rc("delete", "B", "--upto", "2")
    rc("drill", "disaster", "C", "--from", "1")
    rc.json("recover", "location", "C", expect=5)
    accepted = rc.json("recover", "location", "C", "--accept-loss")
    assert (accepted["accepted"], accepted["lost"]) == (["B"], {"B": [1, 2]})
    assert (rc.location("C")["cvv"], rc.location("C")["dvv"]) == ({"B": 2}, {"B": 2})


def test_a_source_that_accepted_a_loss_waits_until_the_events_it_lacks_came_from_another_source(
    rc: Replctl,
) -> None:
    c_accepted_the_loss_of_b1_b2(rc)
    rc("topology", "add", "A", "C", "--both")
    rc("replicate")
    rc.append("B", "b3")
    rc("replicate")
    rc("replicate")
    assert (rc.keys("A"), rc.keys("C"), rc.keys("D")) == (["b1", "b2", "b3"], ["b3"], ["b1", "b2", "b3"])
    rc("drill", "disaster", "A", "--from", "1")
    plan = rc.json("recover", "location", "A", "--dry-run")
    doc = rc.json("recover", "location", "A")
    # DVV-C = {B:2}: C would bring b3 first and CF1 would then skip b1, b2 at D (DR4). D serves first.
    for report in (plan, doc):
        assert [r["sources"] for r in report["rounds"]] == [["D"], ["B", "C"]]
        assert (report["refused"], report["lost"]) == ([], {})
    assert rc.keys("A") == ["b1", "b2", "b3"]


def test_a_new_connection_out_of_a_location_that_accepted_a_loss_waits_for_what_it_lacks_add1(
    rc: Replctl,
) -> None:
    c_accepted_the_loss_of_b1_b2(rc)
    rc.append("B", "b3")
    rc("replicate")
    rc("replicate")
    rc("location", "add", "Y")
    rc("topology", "add", "C", "Y")
    rc("topology", "add", "D", "Y")
    assert rc.connection("C", "Y")["state"] == "pending"  # DVV-C = {B:2} ≰ CVV-Y (ADD1)
    rc("replicate")
    rc("replicate")
    assert rc.keys("Y") == ["b1", "b2", "b3"]
    assert rc.connection("C", "Y")["state"] == "active"


def test_recoverability_and_the_dry_run_do_not_count_an_accepted_entry_as_events_a_source_brings(
    rc: Replctl,
) -> None:
    c_accepted_the_loss_of_b1_b2(rc)
    rc("topology", "remove", "A", "D", "--both")
    rc("topology", "add", "A", "C", "--both")
    rc("replicate")
    rc("delete", "D", "--upto", "2")
    recoverable = rc.location("A")["recoverable"]
    assert (recoverable["state"], recoverable["shortfall"]) == ("no", {"B": [1, 2]})
    rc("drill", "disaster", "A", "--from", "1")
    plan = rc.json("recover", "location", "A", "--dry-run")
    doc = rc.json("recover", "location", "A", expect=5)
    # C's CVV covers b1, b2 through the accepted entry, yet C stores neither: it serves nothing A lacks
    # (DR4), on paper as in the run; only an accepted loss gives b1, b2 up.
    for report in (plan, doc):
        assert report["rounds"] == []
        assert [(r["source"], r["rule"], r["missing"]) for r in report["refused"]] == [
            ("B", "DR4", {"B": [1, 2]}),
            ("C", "DR4", {"B": [1, 2]}),
        ]
    assert rc.keys("A") == []
    accepted = rc.json("recover", "location", "A", "--accept-loss")
    # Both give up b1, b2: B first (by name); then neither DVV exceeds A's CVV and both serve (DR4).
    assert (accepted["accepted"], accepted["lost"]) == (["B"], {"B": [1, 2]})
    assert [r["sources"] for r in accepted["rounds"]] == [["B", "C"]]
