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
