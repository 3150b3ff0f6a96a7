"""A dry run decides exactly as the run: the same JSON decisions, or the same refusal, on the same state."""

from __future__ import annotations

from typing import Any

import pytest
from clitool import Replctl, lose_what_the_neighbour_deleted

pytestmark = pytest.mark.spark


def _decisions(doc: dict[str, Any]) -> dict[str, Any]:
    """What a recovery decided: the loss, the progress resets, which sources each round used, the refusals."""
    return {
        "lost_from": doc["lost_from"],
        "progress_resets": doc["progress_resets"],
        "sources": [r["sources"] for r in doc["rounds"]],
        "refused": doc["refused"],
        "cvv": doc["cvv"],
    }


def test_recover_dry_run_refuses_the_source_the_run_refuses_dr4(rc: Replctl) -> None:
    # issue 14, case 3: the dry run planned round 1 from B against A's CVV before the loss and exited 0;
    # the run recomputes the CVV from the survivors first (DR1) and refuses B [DR4].
    lose_what_the_neighbour_deleted(rc, lost_from=1)
    planned = rc.json("recover", "location", "A", "--dry-run")
    assert planned["dry_run"] is True
    assert planned["rounds"] == []
    assert [(r["source"], r["rule"], r["missing"]) for r in planned["refused"]] == [
        ("B", "DR4", {"A": [1, 3]})
    ]
    ran = rc("recover", "location", "A", "--json", expect=5).doc
    assert _decisions(planned) == _decisions(ran)


def test_recover_dry_run_plans_the_rounds_the_run_takes(rc: Replctl) -> None:
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "a1")
    rc.append("A", "a2")  # a segment of its own: the loss below starts on a segment boundary
    rc("replicate")
    rc.append("A", "a3")
    rc("drill", "disaster", "A", "--from", "2")
    planned = rc.json("recover", "location", "A", "--dry-run")
    ran = rc.json("recover", "location", "A")
    assert _decisions(planned) == {
        "lost_from": 2,
        "progress_resets": [
            {"source": "A", "target": "B", "from": 2, "to": 1},
            {"source": "B", "target": "A", "from": 2, "to": 0},
        ],
        "sources": [["B"]],
        "refused": [],
        "cvv": {"A": 2},  # the CVV after round 1 (a2 comes back from B), planned on paper (DR4)
    }
    assert _decisions(ran) == _decisions(planned)


@pytest.mark.parametrize(
    "args",
    [
        ("log", "append", "B", "--event", '{"key": "b1"}'),
        ("delete", "B", "--upto", "1"),
        ("log", "compact", "B"),
        ("replicate", "A", "B"),
    ],
)
def test_a_dry_run_at_a_damaged_location_is_refused_as_the_run_is(rc: Replctl, args: tuple[str, ...]) -> None:
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "a1")
    rc("replicate")
    rc("drill", "disaster", "B", "--from", "1")
    planned = rc.json(*args, "--dry-run", expect=4)
    ran = rc.json(*args, expect=4)
    assert planned == ran
    assert ran["error"]["code"] == "damaged"
