"""A dry run decides exactly as the run: the same JSON decisions, or the same refusal, on the same state."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from clitool import Replctl, chain_a_b_c_d, chain_z_y_x, lose_what_the_neighbour_deleted

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


def _pass(
    round_number: int,
    connection: str,
    action: str,
    counts: tuple[int, int, int, int] | None,
    progress: int | None,
    *,
    reason: str | None = None,
) -> dict[str, Any]:
    """One pass of `replicate --json` over `connection` ("X→Y"); `counts` (examined, written, skipped_causal,
    skipped_filter) None for a dry run's pass that only running decides."""
    examined, written, causal, filtered = counts or (None, None, None, None)
    source, target = connection.split("→")
    return {
        "round": round_number,
        "source": source,
        "target": target,
        "state": "active",
        "action": action,
        "examined": examined,
        "written": written,
        "skipped_causal": causal,
        "skipped_filter": filtered,
        "blocked_at": None,
        "progress": progress,
        "reason": reason,
    }


# The dry run's plan of each chain, and the passes the run then makes.
Z_Y_X_PLAN = [
    _pass(1, "Y→X", "would-copy", (1, 1, 0, 0), 1),
    _pass(1, "Z→Y", "would-run", None, 2),
    _pass(2, "Y→X", "depends", None, None, reason="decided once Z→Y has run"),
]
Z_Y_X_RUN = [
    _pass(1, "Y→X", "copied", (1, 1, 0, 0), 1),
    _pass(1, "Z→Y", "ran", (2, 2, 0, 0), 2),
    _pass(2, "Y→X", "ran", (2, 2, 0, 0), 3),
]
A_B_C_D_PLAN = [
    _pass(1, "A→B", "would-run", None, 2),
    _pass(1, "B→C", "depends", None, None, reason="decided once A→B has run"),
    _pass(1, "C→D", "depends", None, None, reason="decided once B→C has run"),
]
A_B_C_D_RUN = [
    _pass(1, "A→B", "ran", (2, 2, 0, 0), 2),
    _pass(1, "B→C", "copied", (5, 5, 0, 0), 5),
    _pass(1, "C→D", "ran", (5, 4, 0, 1), 5),
]


def test_a_replicate_dry_run_plans_the_later_round_a_pass_earlier_in_the_order_takes(rc: Replctl) -> None:
    """REP1/REP2, issue 14: the dry run stopped at round 1 and stated Y→X's copy (written 1, progress 1) as all
    it does; the run then went on with a round 2 that wrote z1, z2 into X. Round 1 is exactly the run's round 1;
    Y→X's round 2 is listed as `depends` on Z→Y, its counts and progress unknown."""
    chain_z_y_x(rc)
    planned = rc.json("replicate", "--dry-run")
    assert planned == {"ok": True, "dry_run": True, "passes": Z_Y_X_PLAN, "deletions": []}
    text = rc("replicate", "--dry-run").stdout
    rows = [line.split() for line in text.splitlines() if line[:1].isdigit()]
    assert rows == [
        ["1", "Y→X", "active", "would-copy", "1", "1", "0/0", "1"],
        ["1", "Z→Y", "active", "would-run", "?", "?", "?/?", "2"],
        ["2", "Y→X", "active", "depends", "?", "?", "?/?", "?", "[1]"],
    ]
    assert "[1] Y→X: decided once Z→Y has run" in text.splitlines()
    ran = rc.json("replicate")
    assert ran["passes"] == Z_Y_X_RUN
    assert rc.stored("Y") == [("Y", 1, "y1"), ("Z", 1, "z1"), ("Z", 2, "z2")]
    assert rc.stored("X") == [("Y", 1, "y1"), ("Z", 1, "z1"), ("Z", 2, "z2")]


def test_a_replicate_dry_run_lists_every_pass_downstream_of_one_that_depends(rc: Replctl) -> None:
    """REP1, issue 14: A→B feeds B→C, which feeds C→D; the dry run left C→D out (only a pass right after one
    that reads was marked `depends`, not one after a `depends`), and the run then wrote four events into D."""
    chain_a_b_c_d(rc)
    planned = rc.json("replicate", "--dry-run")
    assert planned == {"ok": True, "dry_run": True, "passes": A_B_C_D_PLAN, "deletions": []}
    ran = rc.json("replicate")
    assert ran["passes"] == A_B_C_D_RUN
    assert rc.keys("C") == ["b1", "b2", "b3", "a1", "a2"]
    assert rc.keys("D") == ["b1", "b2", "a1", "a2"]


@pytest.mark.parametrize(
    ("chain", "plan", "run"),
    [(chain_z_y_x, Z_Y_X_PLAN, Z_Y_X_RUN), (chain_a_b_c_d, A_B_C_D_PLAN, A_B_C_D_RUN)],
    ids=["Z→Y→X", "A→B→C→D"],
)
def test_apply_runs_a_replicate_plan_of_every_round_and_refuses_it_once_the_catalog_moved(
    rc: Replctl,
    tmp_path: Path,
    chain: Callable[[Replctl], None],
    plan: list[dict[str, Any]],
    run: list[dict[str, Any]],
) -> None:
    """A reviewed plan (`--plan-out`) lists every pass the run may make, in the run's rounds; `apply` runs it
    while the catalog is as it was (a dry run made again gives the same plan), and refuses the same plan as
    stale (exit 3) once that run has moved the catalog."""
    chain(rc)
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    written = rc.json("replicate", "--plan-out", str(first))
    assert written["plan"]["passes"] == plan
    rc("replicate", "--plan-out", str(second))
    assert json.loads(second.read_text())["plan"] == written["plan"]
    assert rc.json("apply", str(first))["passes"] == run
    refused = rc.json("apply", str(second), expect=3)
    assert (refused["error"]["code"], refused["error"]["hint"]) == (
        "stale-plan",
        f"replctl replicate --plan-out {second}",
    )
