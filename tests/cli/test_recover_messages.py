"""What `recover location` says about A's clock (DR1) and about each neighbour accepted with --accept-loss (DR5):
no move of the clock that does not happen, no loss that was not given up, and the text agrees with --json."""

from __future__ import annotations

from pathlib import Path

import pytest
from clitool import Replctl


@pytest.fixture
def rc(tmp_path: Path) -> Replctl:
    tool = Replctl(tmp_path)
    tool("init")
    return tool


def test_accepting_a_dr3_refused_neighbour_that_deleted_nothing_claims_no_loss(rc: Replctl) -> None:
    for name in ("A", "B", "D"):
        rc("location", "add", name)
    rc("topology", "add", "A", "B", "--both")
    rc("topology", "add", "D", "A")  # no A→D: D is refused by DR3, and it deleted nothing
    rc.append("A", "a1", "a2")
    rc.append("D", "d1")
    rc("replicate")
    rc("drill", "disaster", "A", "--from", "2", "--yes")
    accepted = (
        "  accepted D's refusal without giving anything up (A lacked nothing D deleted); D→A unblocked (DR5)"
    )
    planned = rc("recover", "location", "A", "--accept-loss", "--dry-run").stdout.splitlines()
    assert planned[-3:] == [
        "  round 1: from B (DR4)",
        accepted,
        # T is the clock A had (3): the events recovered take the seqs after it; no move is promised.
        "A: clock 3 (the events recovered take the seqs after it), CVV {A:2,D:1}",
    ]
    doc = rc.json("recover", "location", "A", "--accept-loss", "--dry-run")
    assert (doc["accepted"], doc["given_up"], doc["lost"]) == (["D"], {"D": {}}, {})
    ran = rc("recover", "location", "A", "--accept-loss", "--yes").stdout.splitlines()
    assert ran[-3:] == [
        "  round 1: from B, 2 event(s) written (DR4)",
        accepted,
        "A: clock 3 → 6, CVV {A:2,D:1}",
    ]


def test_accepting_a_neighbour_that_deleted_what_a_lacks_names_what_was_given_up(rc: Replctl) -> None:
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "a1", "a2", "a3")
    rc("replicate")
    rc("delete", "B", "--upto", "3", "--yes")
    rc("drill", "disaster", "A", "--from", "1", "--yes")
    refused = rc("recover", "location", "A", "--yes", expect=5).stdout.splitlines()
    # DR1: T = CVV-B[A] = 3, the clock A had; it does not move.
    assert refused[-3] == "A: clock unchanged at 3, CVV {}"
    ran = rc("recover", "location", "A", "--accept-loss", "--yes").stdout.splitlines()
    assert ran[-3:] == [
        "  accepted the loss of what B deleted (A: 1..3); B→A unblocked (DR5)",
        "A: clock unchanged at 3, CVV {A:3}",
        "A: events A: 1..3 are lost for good",
    ]


@pytest.mark.parametrize(
    ("clock", "text"),
    [
        ({"before": 3, "after": 6, "floor": 3}, "clock 3 → 6"),
        ({"before": 3, "after": 3, "floor": 3}, "clock unchanged at 3"),
        ({"before": 3, "after": None, "floor": 3}, "clock 3 (the events recovered take the seqs after it)"),
        (
            {"before": 3, "after": None, "floor": 5},
            "clock 3 → 5 (the events recovered take the seqs after it)",
        ),
        ({"before": 3, "after": None}, "clock 3 (the events recovered take the seqs after it)"),
    ],
)
def test_the_clock_line_reads_right_in_every_case(clock: dict[str, int | None], text: str) -> None:
    from replctl.cli.recover import clock_text

    assert clock_text(clock) == text
