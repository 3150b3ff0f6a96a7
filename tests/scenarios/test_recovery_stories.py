"""Disaster recovery stories through the CLI with exact log contents (rules.md DR0–DR5)."""

from __future__ import annotations

from pathlib import Path

import pytest
from clitool import Replctl, a_between_b_and_c, terminal_once_unfiltered, y_between_b_and_n
from crashed import died, killed

pytestmark = pytest.mark.spark


def own_times(rc: Replctl, location: str) -> list[int]:
    return [e["origin_time"] for e in rc.json("log", "show", location)["events"] if e["origin"] == location]


def test_a_partial_loss_is_found_recovered_and_new_events_continue_past_the_seqs_assigned_before_it(
    rc: Replctl,
) -> None:
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "a1")
    rc("replicate")
    rc.append("A", "a2", "a3")  # never reached B: lost for good below
    rc("drill", "disaster", "A", "--from", "2")
    damaged = rc.json("log", "show", "A", expect=6)
    assert damaged["error"]["code"] == "store-damaged"
    assert damaged["error"]["hint"] == "replctl recover location A"
    plan = rc.json("recover", "location", "A", "--dry-run")
    assert plan["lost_from"] == 2 and plan["rounds"] == [{"round": 1, "sources": ["B"], "written": None}]
    assert rc.json("status")["locations"][0]["state"] == "damaged"  # the dry run changed nothing (DR0)
    # Appends wait while A recovers (checked inside the run); the run itself:
    doc = rc.json("recover", "location", "A")
    assert doc["lost_from"] == 2
    # progress(B,A) = 1 already (B read only a1); A re-reads B from the start (DR2, safe by CF1).
    assert doc["progress_resets"] == [{"source": "B", "target": "A", "from": 1, "to": 0}]
    # DR1: T is the seq the catalog recorded before the loss, so a2 and a3's seqs and times are never reused.
    assert doc["clock"] == {"before": 3, "after": 3, "floor": 3}
    # No source holds a2, a3: the recovery says they are lost for good (BK3's shape: origin times).
    assert (doc["lost"], doc["discarded"]) == ({"A": [2, 3]}, {})
    rc.append("A", "a4")
    events = rc.json("log", "show", "A")["events"]
    assert [(e["seq"], e["key"], e["origin_time"]) for e in events] == [(1, "a1", 1), (4, "a4", 4)]
    rc("replicate")
    assert rc.keys("B") == ["a1", "a4"]  # B read from A's last survivor on and found a4 past the gap
    assert rc.json("log", "verify")["ok"]


def test_a_location_whose_own_events_were_deleted_at_its_only_neighbour_continues_its_clock_and_waits(
    rc: Replctl,
) -> None:
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "a1", "a2", "a3")
    rc("replicate")
    rc("delete", "B", "--upto", "3")  # A has them, so B may delete them
    assert rc.keys("B") == []
    rc("drill", "disaster", "A", "--from", "1")
    out = rc("recover", "location", "A", "--json", expect=5).doc
    assert out["rounds"] == []
    assert [(r["source"], r["rule"]) for r in out["refused"]] == [("B", "DR4")]
    assert out["refused"][0]["missing"] == {"A": [1, 3]}
    assert rc.connection("B", "A")["state"] == "blocked"
    assert rc.keys("A") == []
    assert out["clock"]["after"] == 3  # T = CVV-B[A]: B deleted a1..a3 but its CVV still counts them
    rc("replicate", expect=5)  # A is still recovering: the pass into it waits (DR0), the run is incomplete
    assert rc.keys("A") == []  # B→A stays blocked: no event recovery in disguise
    accepted = rc.json("recover", "location", "A", "--accept-loss")
    assert accepted["accepted"] == ["B"] and accepted["refused"] == []
    assert rc.connection("B", "A")["state"] == "active"
    assert (rc.location("A")["dvv"], rc.location("A")["cvv"]) == ({"A": 3}, {"A": 3})
    # The clock continues after the old events: the next own entry is higher than any before the disaster.
    rc.append("A", "a4")
    assert rc.json("log", "show", "A")["events"][0]["vt"] == {"A": 4}
    rc("replicate")
    assert rc.keys("B") == ["a4"]
    assert rc.json("log", "verify")["ok"]


def test_anomaly_3_recovery_of_a_non_terminal_location_over_filtered_connections_is_refused(
    rc: Replctl,
) -> None:
    for name in "ABC":
        rc("location", "add", name)
    rc("topology", "add", "A", "B", "--both", "--filter", "key <> 'secret'")
    rc("topology", "add", "A", "C", "--both", "--filter", "key <> 'secret'")
    rc.append("A", "a1", "a2")
    rc("replicate")
    rc("drill", "disaster", "A", "--from", "1")
    out = rc("recover", "location", "A", "--json", expect=5).doc
    assert out["rounds"] == []
    assert sorted((r["source"], r["rule"]) for r in out["refused"]) == [("B", "DR3"), ("C", "DR3")]
    assert rc.keys("A") == []  # nothing written
    assert rc.connection("B", "A")["state"] == "blocked" and rc.connection("C", "A")["state"] == "blocked"
    assert rc.json("log", "verify")["ok"]


def test_a_terminal_location_recovers_its_own_events_and_the_filtered_ones_over_its_filtered_connection(
    rc: Replctl,
) -> None:
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B")
    rc("topology", "add", "B", "A", "--filter", "key = 'x'")
    rc.append("A", "a1", "a2")
    rc.append("B", "x", "y")
    rc("replicate")
    assert rc.keys("A") == ["a1", "a2", "x"]
    rc("drill", "disaster", "A", "--from", "1")
    doc = rc.json("recover", "location", "A")
    assert doc["rounds"] == [{"round": 1, "sources": ["B"], "written": 3}]
    # In B's order (REP1): B stored its own x, y before a1, a2; y stays filtered out.
    assert rc.keys("A") == ["x", "a1", "a2"]
    assert rc.json("log", "verify")["ok"]


def test_recovery_runs_in_two_rounds_when_the_second_source_qualifies_only_after_the_first(
    rc: Replctl,
) -> None:
    for name in "ABC":
        rc("location", "add", name)
    rc("topology", "add", "A", "B", "--both")
    rc("topology", "add", "A", "C", "--both")
    rc("topology", "add", "B", "C", "--both")
    rc.append("A", "a1")
    rc.append("B", "b1")
    rc.append("C", "c1")
    rc("replicate")
    rc("delete", "C", "--upto", "1")  # C deleted c1 (everyone has it): DVV-C = {C:1}
    rc("drill", "disaster", "A", "--from", "1")
    doc = rc.json("recover", "location", "A")
    assert doc["rounds"] == [
        {"round": 1, "sources": ["B"], "written": 3},
        {"round": 2, "sources": ["C"], "written": 0},
    ]
    assert sorted(rc.keys("A")) == ["a1", "b1", "c1"]
    assert doc["refused"] == []
    assert rc.json("log", "verify")["ok"]


def test_appends_to_a_recovering_location_are_refused_with_exit_4(
    rc: Replctl, monkeypatch: pytest.MonkeyPatch
) -> None:
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "a1", "a2")
    rc("replicate")
    rc("drill", "disaster", "A", "--from", "2")
    killed(rc, monkeypatch, "recover.after-metadata", "recover", "location", "A")
    assert rc.location("A")["state"] == "recovering"
    doc = rc.json("log", "append", "A", "--event", '{"key": "no"}', expect=4)
    assert doc["error"]["code"] == "recovering"
    rc("recover", "location", "A")  # resumes and finishes
    assert rc.location("A")["state"] == "active"
    assert rc.keys("A") == ["a1", "a2"]
    assert rc.json("log", "verify")["ok"]


@pytest.mark.parametrize("lost_from", ["4", "999", "0"])
def test_a_lost_from_outside_the_log_is_bad_input_and_changes_and_journals_nothing(
    rc: Replctl, lost_from: str
) -> None:
    """DR0, finding 7: A assigned seqs 1..3, so `--lost-from 999` is a typo, not a loss past the end: exit 2
    (`bad-number`) with the valid range, as a dry run and as a run; no recovery ran and none is journalled."""
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "a1", "a2", "a3")
    rc("replicate")
    before, journal = rc.snapshot(), rc.json("ops", "list")["operations"]
    for dry in (("--dry-run",), ()):
        doc = rc.json("recover", "location", "A", "--lost-from", lost_from, *dry, expect=2)
        assert doc["error"] == {
            "code": "bad-number",
            "message": f"--lost-from {lost_from} is outside A's log (seqs 1..3) (DR0)",
            "hint": "give a seq from 1 to 3, the last seq A assigned (replctl log show A)",
        }
    assert rc.snapshot() == before
    assert rc.json("ops", "list")["operations"] == journal
    assert rc.stored("A") == [("A", 1, "a1"), ("A", 2, "a2"), ("A", 3, "a3")]


def never_replicated_own_events(rc: Replctl) -> None:
    """M↔N; m1, m2 replicated to N; m3, m4 stored intact at M only (finding 1)."""
    rc("location", "add", "M")
    rc("location", "add", "N")
    rc("topology", "add", "M", "N", "--both")
    rc.append("M", "m1", "m2")
    rc("replicate")
    rc.append("M", "m3", "m4")


def test_a_declared_loss_over_intact_events_only_the_location_holds_is_refused_dry_run_and_run(
    rc: Replctl,
) -> None:
    # DR0: --lost-from 3 on a healthy log would discard m3, m4, which exist nowhere else: consent first.
    never_replicated_own_events(rc)
    before = rc.snapshot()
    refusal = {
        "code": "DR0",
        "message": "refused [DR0]: recover location M --lost-from 3 would discard M:3..4, which M still stores "
        "intact and no other location stores; nothing was changed",
        "hint": "replctl recover location M --lost-from 3 --accept-loss",
    }
    planned = rc.json("recover", "location", "M", "--lost-from", "3", "--dry-run", expect=3)
    assert planned["error"] == refusal
    ran = rc.json("recover", "location", "M", "--lost-from", "3", expect=3)
    assert ran["error"] == refusal
    assert rc.snapshot() == before
    assert rc.stored("M") == [("M", 1, "m1"), ("M", 2, "m2"), ("M", 3, "m3"), ("M", 4, "m4")]


def test_a_declared_loss_with_accept_loss_names_what_it_discards_and_the_log_keeps_the_rest(
    rc: Replctl,
) -> None:
    never_replicated_own_events(rc)
    planned = rc.json("recover", "location", "M", "--lost-from", "3", "--accept-loss", "--dry-run")
    doc = rc.json("recover", "location", "M", "--lost-from", "3", "--accept-loss")
    for out in (planned, doc):
        assert (out["discarded"], out["lost"]) == ({"M": [3, 4]}, {"M": [3, 4]})
    assert doc["cvv"] == {"M": 2} and doc["refused"] == []
    assert rc.stored("M") == [("M", 1, "m1"), ("M", 2, "m2")]
    assert rc.stored("N") == [("M", 1, "m1"), ("M", 2, "m2")]
    # DR1: the clock never runs in the past; the next own event takes origin time 5, not 3.
    rc.append("M", "m5")
    assert rc.stored("M")[-1] == ("M", 5, "m5")
    assert rc.json("log", "verify")["ok"]


def test_a_declared_loss_of_events_another_location_holds_needs_no_consent_and_loses_nothing(
    rc: Replctl,
) -> None:
    # DR0: m3, m4 reached N, so cutting them at M discards no only copy; N gives them back.
    never_replicated_own_events(rc)
    rc("replicate")
    doc = rc.json("recover", "location", "M", "--lost-from", "3")
    assert (doc["discarded"], doc["lost"], doc["refused"]) == ({}, {}, [])
    assert [e[2] for e in rc.stored("M")] == ["m1", "m2", "m3", "m4"]


def test_a_declared_loss_over_own_events_the_neighbour_deleted_is_refused_its_cvv_still_covers_them(
    rc: Replctl,
) -> None:
    # DR0: B's CVV covers a2 (EM2) but B deleted it physically: A stores the only copy.
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "a1", "a2")
    rc("replicate")
    rc("delete", "B", "--upto", "2")
    before = rc.snapshot()
    refusal = {
        "code": "DR0",
        "message": "refused [DR0]: recover location A --lost-from 2 would discard A:2, which A still stores "
        "intact and no other location stores; nothing was changed",
        "hint": "replctl recover location A --lost-from 2 --accept-loss",
    }
    assert rc.json("recover", "location", "A", "--lost-from", "2", "--dry-run", expect=3)["error"] == refusal
    assert rc.json("recover", "location", "A", "--lost-from", "2", expect=3)["error"] == refusal
    assert rc.snapshot() == before
    assert rc.stored("A") == [("A", 1, "a1"), ("A", 2, "a2")]
    doc = rc.json("recover", "location", "A", "--lost-from", "2", "--accept-loss")
    assert (doc["discarded"], doc["lost"]) == ({"A": [2, 2]}, {"A": [2, 2]})


def test_a_declared_loss_over_foreign_events_their_origin_deleted_is_refused_naming_them(rc: Replctl) -> None:
    # DR0 for any origin: b1, b2 are stored at A only once B deleted them; A's CVV-B entry is no copy.
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "a1")
    rc.append("B", "b1", "b2")
    rc("replicate")
    rc("delete", "B", "--upto", "3")
    assert [e[2] for e in rc.stored("A")] == ["a1", "b1", "b2"]
    before = rc.snapshot()
    refusal = {
        "code": "DR0",
        "message": "refused [DR0]: recover location A --lost-from 2 would discard B:1..2, which A still "
        "stores intact and no other location stores; nothing was changed",
        "hint": "replctl recover location A --lost-from 2 --accept-loss",
    }
    assert rc.json("recover", "location", "A", "--lost-from", "2", "--dry-run", expect=3)["error"] == refusal
    assert rc.json("recover", "location", "A", "--lost-from", "2", expect=3)["error"] == refusal
    assert rc.snapshot() == before
    planned = rc.json("recover", "location", "A", "--lost-from", "2", "--accept-loss", "--dry-run")
    doc = rc.json("recover", "location", "A", "--lost-from", "2", "--accept-loss")
    for out in (planned, doc):
        assert out["discarded"] == {"B": [1, 2]}
    assert rc.stored("A") == [("A", 1, "a1")]


def test_a_filtered_terminal_recovery_names_the_own_events_no_one_stored_dry_run_and_run(rc: Replctl) -> None:
    # DR3: A↔N filtered on x%, so y1 (A:2) never left A; after a total loss N gives back x1, x2 (A:1, A:3)
    # and N's CVV, which covers A:2 by causality, is no copy of y1: it is lost for good and named.
    rc("location", "add", "A")
    rc("location", "add", "N")
    rc("topology", "add", "A", "N", "--filter", "key like 'x%'")
    rc("topology", "add", "N", "A", "--filter", "key like 'x%'")
    rc.append("A", "x1", "y1", "x2")
    rc.append("N", "xn", "yn")
    rc("replicate")
    rc("drill", "disaster", "A", "--from", "1")
    planned = rc.json("recover", "location", "A", "--dry-run")
    doc = rc.json("recover", "location", "A")
    # What N's filter passes of N's events depends on their contents: the dry run says only the run knows.
    assert (planned["lost"], doc["lost"]) == ({"A": [2, 2], "N": None}, {"A": [2, 2]})
    assert rc.stored("A") == [("N", 1, "xn"), ("A", 1, "x1"), ("A", 3, "x2")]


def test_a_recovery_after_a_drill_that_a_neighbour_covers_loses_nothing(rc: Replctl) -> None:
    never_replicated_own_events(rc)
    rc("replicate")
    rc("drill", "disaster", "M", "--from", "1")
    out = rc("recover", "location", "M")
    assert out.code == 0 and "lost for good" not in out.stdout
    doc = rc.json("log", "show", "M")
    assert [e["key"] for e in doc["events"]] == ["m1", "m2", "m3", "m4"]
    assert rc.json("recover", "location", "M")["lost"] == {}  # nothing left to do, nothing lost


def test_after_a_recovery_status_shows_no_lag_for_events_the_neighbour_already_holds(rc: Replctl) -> None:
    """Issue 18: the events A got back from B are held by B (CF1 skips them), so A→B has no lag to show; before,
    `status` showed them as lag that the next `replicate` cleared without reading an event."""
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "a1", "a2", "a3", "a4")
    rc("replicate")
    rc("drill", "disaster", "A", "--from", "2")
    rc("recover", "location", "A")
    assert rc.keys("A") == ["a1", "a2", "a3", "a4"]
    lags = {(c["source"], c["target"]): c["lag"] for c in rc.json("status")["connections"]}
    assert lags == {("A", "B"): 0, ("B", "A"): 0}
    [ran] = [p for p in rc.json("replicate")["passes"] if (p["source"], p["target"]) == ("A", "B")]
    assert ran["written"] == 0
    rc.append("A", "a5")
    lags = {(c["source"], c["target"]): c["lag"] for c in rc.json("status")["connections"]}
    assert lags == {("A", "B"): 1, ("B", "A"): 0}


@pytest.mark.parametrize("point", ["recover.after-metadata", "recover.before-end"])
def test_a_recovery_resumed_after_a_kill_still_names_everything_lost_for_good_dr0(
    rc: Replctl, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    # a2, a3 never reached B and are lost with A's store. The killed run committed A's recomputed CVV (DR1);
    # the re-run resumes from there, but what is lost is still measured against A's CVV before the loss.
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "a1")
    rc("replicate")
    rc.append("A", "a2", "a3")
    rc("drill", "disaster", "A", "--from", "2")
    killed(rc, monkeypatch, point, "recover", "location", "A")
    planned = rc.json("recover", "location", "A", "--dry-run")
    doc = rc.json("recover", "location", "A")
    assert (planned["lost"], doc["lost"]) == ({"A": [2, 3]}, {"A": [2, 3]})
    assert doc["clock"]["before"] == 3
    assert rc.keys("A") == ["a1"] and rc.location("A")["state"] == "active"


def test_a_recovery_that_gets_everything_back_reports_nothing_lost_though_own_origin_times_have_gaps(
    rc: Replctl,
) -> None:
    # EM1: A's origin times are its seqs at the append, and A's seq also counts what it received (b1 at 2).
    # The lost report took A's own origin times as dense and named A:2, which never existed, lost for good.
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "a1")
    rc.append("B", "b1")
    rc("replicate")
    rc.append("A", "a2")
    rc("replicate")
    assert rc.stored("A") == [("A", 1, "a1"), ("B", 1, "b1"), ("A", 3, "a2")]
    rc("drill", "disaster", "A", "--from", "1")
    plan = rc.json("recover", "location", "A", "--dry-run")
    done = rc.json("recover", "location", "A")
    assert (plan["lost"], done["lost"]) == ({}, {})
    assert sorted(rc.stored("A")) == [("A", 1, "a1"), ("A", 3, "a2"), ("B", 1, "b1")]


KEYS = ["a1", "a2", "a3", "a4", "a5", "a6"]


@pytest.mark.parametrize(
    "connect",
    [
        ("X", "Y", "--history", "current"),
        ("X", "Y", "--history", "none"),
        ("Y", "X", "--both", "--history", "current"),
    ],
)
def test_a_history_merge_into_a_recovering_location_is_refused_dr0_so_recovery_gets_everything_back(
    rc: Replctl, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, connect: tuple[str, ...]
) -> None:
    # Y held a1..a6 of A and lost its whole log; the recovery was killed after its metadata step, so Y is
    # recovering with CVV {} (DR1). X deleted a1..a3 (DVV-X {A:3}). Merged then, ADD3 took origin A for
    # foreign and gave up a1..a3 at Y (CF1 dropped them from B), with `"lost": {}`. Refused (DR0), the
    # recovery brings a1..a6 back from B, and the connection added afterwards merges nothing.
    for name in "ABYX":
        rc("location", "add", name)
    rc("topology", "add", "A", "B", "--both")
    rc("topology", "add", "B", "Y", "--both")
    rc("topology", "add", "A", "X")
    rc.append("A", *KEYS)
    rc("replicate")
    rc("delete", "X", "--upto", "3")
    rc("drill", "disaster", "Y", "--from", "1")
    killed(rc, monkeypatch, "recover.after-metadata", "recover", "location", "Y")
    assert (rc.location("Y")["state"], rc.location("Y")["cvv"]) == ("recovering", {})
    before = rc.snapshot()

    planned = rc.json("topology", "add", *connect, "--dry-run", expect=4)
    refused = rc.json("topology", "add", *connect, expect=4)
    plan = tmp_path / "plan.json"
    rc("--plan-out", str(plan), "topology", "add", *connect, expect=4)
    mode = connect[-1]
    vector = "DVV" if mode == "current" else "CVV"
    assert planned["error"] == refused["error"]
    assert refused["error"] == {
        "code": "recovering",
        "message": (
            f"Y is recovering; --history {mode} would merge the entries of {vector}-X that Y's CVV lacks, "
            "but until the recovery ends that CVV holds only what survived the loss, so events Y held before "
            "it would be given up unreported; nothing is merged into it until recovery ends (DR0, DR1, ADD3)"
        ),
        "hint": "finish it: replctl recover location Y; then add the connection again",
        "details": {"location": "Y", "source": "X", "history": mode},
    }
    assert not plan.exists()
    text = rc("topology", "add", *connect, expect=4)
    assert "DR0" in text.stdout + text.stderr
    assert "hint: finish it: replctl recover location Y" in text.stdout + text.stderr
    after = rc.snapshot()
    assert after["status"]["locations"] == before["status"]["locations"]
    assert after["status"]["connections"] == before["status"]["connections"]
    assert after["history"] == before["history"]

    doc = rc.json("recover", "location", "Y")
    assert doc["rounds"] == [{"round": 1, "sources": ["B"], "written": 6}]
    assert (doc["refused"], doc["lost"]) == ([], {})
    assert rc.stored("Y") == [("A", t, k) for t, k in enumerate(KEYS, start=1)]
    assert rc.location("Y")["state"] == "active"
    assert (rc.location("Y")["cvv"], rc.location("Y")["dvv"]) == ({"A": 6}, {})

    # Recovered, Y's knowledge of A is its own again: A is not foreign (ADD3), so nothing is merged.
    added = rc.json("topology", "add", *connect)
    assert {(c["source"], c["target"]): (c["state"], c["baseline"]) for c in added["connections"]} == {
        **({("Y", "X"): ("active", {})} if "--both" in connect else {}),
        ("X", "Y"): ("active", {}),
    }
    rc("replicate")
    assert rc.stored("Y") == [("A", t, k) for t, k in enumerate(KEYS, start=1)]
    assert rc.location("Y")["dvv"] == {}
    assert rc.json("log", "verify")["ok"]


A3_TO_A6 = [("A", 3, "a3"), ("A", 4, "a4"), ("A", 5, "a5"), ("A", 6, "a6")]


def test_an_incomplete_recovery_names_lost_what_the_refused_neighbour_deleted_dry_run_and_run(
    rc: Replctl,
) -> None:
    """DR5: B, refused by DR4, deleted A:1..2, which Y held: no later `recover` gets them from B, and no other
    neighbour of Y holds them, so they are lost for good before any loss is accepted. Before, `lost` counted
    B's whole CVV as held and said `{}`."""
    y_between_b_and_n(rc, with_n=False)
    planned = rc.json("recover", "location", "Y", "--dry-run")
    doc = rc("recover", "location", "Y", "--json", expect=5).doc
    assert (planned["lost"], doc["lost"]) == ({"A": [1, 2]}, {"A": [1, 2]})
    assert [(r["source"], r["rule"]) for r in doc["refused"]] == [("B", "DR4")]


def test_lost_runs_leave_out_what_the_refused_neighbour_still_holds_between_two_gaps(rc: Replctl) -> None:
    """DR5: N, refused by DR3, still holds A:3..6 (it deleted a1, a2 and was cut off from A before a7, a8);
    B, refused by DR4, deleted all eight. Lost for good are A:1..2 and A:7..8, not A:3..6: `lost` names the
    first and last ([1, 8]), `lost_runs` and the text exactly which, in the dry run as in the run. Before,
    the text said A: 1..8."""
    for name in "ABNY":
        rc("location", "add", name)
    rc("topology", "add", "A", "B", "--both")
    rc("topology", "add", "B", "Y", "--both")
    rc("topology", "add", "A", "N")
    rc("topology", "add", "N", "Y")
    rc.append("A", "a1", "a2", "a3", "a4", "a5", "a6")
    rc("replicate")
    rc("delete", "N", "--upto", "2")
    rc("topology", "remove", "A", "N")
    rc.append("A", "a7", "a8")
    rc("replicate")
    rc("delete", "B", "--upto", "8")
    assert (rc.keys("N"), rc.keys("B"), rc.location("Y")["cvv"]) == (["a3", "a4", "a5", "a6"], [], {"A": 8})
    rc("drill", "disaster", "Y", "--from", "1")
    planned = rc.json("recover", "location", "Y", "--dry-run")
    run = rc("recover", "location", "Y", "--json", expect=5).doc
    for doc in (planned, run):
        assert (doc["lost"], doc["lost_runs"]) == ({"A": [1, 8]}, {"A": [[1, 2], [7, 8]]})
        assert [(r["source"], r["rule"]) for r in doc["refused"]] == [("N", "DR3"), ("B", "DR4")]
    text = rc("recover", "location", "Y", "--dry-run").stdout
    assert "Y: events A: 1..2 and 7..8 would be lost for good" in text


def test_an_event_a_round_brings_back_between_two_accepted_losses_is_not_named_lost(rc: Replctl) -> None:
    """DR5 round by round: accepting B's loss gives up c2, c3; B's round then writes c4 back; accepting C's
    gives up c5, c6. `lost_runs` names the two given-up runs, not c4, in the dry run as in the run. Before,
    the given-up ranges were kept as one span per origin and the report said C: 2..6."""
    a_between_b_and_c(rc, "c1", "c2", "c3", "c4")
    rc.append("C", "c5", "c6")
    rc("replicate", "C", "A")
    rc("delete", "A", "--upto", "1")
    rc("delete", "B", "--upto", "3")
    rc("delete", "C", "--upto", "6")
    rc("drill", "disaster", "A", "--from", "1")
    planned = rc.json("recover", "location", "A", "--accept-loss", "--dry-run")
    run = rc.json("recover", "location", "A", "--accept-loss")
    for doc in (planned, run):
        assert (doc["given_up"], doc["lost"], doc["lost_runs"]) == (
            {"B": {"C": [2, 3]}, "C": {"C": [5, 6]}},
            {"C": [2, 6]},
            {"C": [[2, 3], [5, 6]]},
        )
    assert rc.stored("A") == [("C", 4, "c4")]


@pytest.mark.parametrize("with_n", [True, False], ids=["N refused by DR3 too", "B alone"])
def test_accepting_a_loss_gives_up_only_what_the_eligible_source_deleted_and_names_it_lost(
    rc: Replctl, with_n: bool
) -> None:
    """DR5 round by round: `--accept-loss` merges DVV-B ({A:2}, what B deleted) and runs DR4's rounds again in
    the same run, so B gives back A:3..6; what N deleted ({A:6}) is then covered by real events and N→Y is
    unblocked with nothing more given up. Before, DVV-N was merged first and B's pass skipped A:3..6 as held
    already: Y ended empty with `"lost": {}`. A:1..2, which Y held before the disaster, are named lost."""
    y_between_b_and_n(rc, with_n=with_n)
    first = rc("recover", "location", "Y", "--json", expect=5).doc
    dr3 = {
        "source": "N",
        "rule": "DR3",
        "reason": "Y is not terminal and the connection between it and N has no connection Y→N; "
        "recovery over it would lose events (anomaly 3)",
        "missing": {},
    }
    dr4 = {
        "source": "B",
        "rule": "DR4",
        "reason": "B has deleted events Y lacks (A: deleted up to 2, Y has 0)",
        "missing": {"A": [1, 2]},
    }
    assert (first["rounds"], first["refused"]) == ([], [dr3, dr4] if with_n else [dr4])
    accepted = ["B", "N"] if with_n else ["B"]
    planned = rc.json("recover", "location", "Y", "--accept-loss", "--dry-run")
    doc = rc.json("recover", "location", "Y", "--accept-loss", "--yes")
    assert {k: planned[k] for k in ("rounds", "refused", "accepted", "cvv", "lost")} == {
        "rounds": [{"round": 1, "sources": ["B"], "written": None}],
        "refused": [],
        "accepted": accepted,
        "cvv": {"A": 6},
        "lost": {"A": [1, 2]},
    }
    assert {k: doc[k] for k in ("rounds", "refused", "accepted", "cvv", "lost", "discarded")} == {
        "rounds": [{"round": 1, "sources": ["B"], "written": 4}],
        "refused": [],
        "accepted": accepted,
        "cvv": {"A": 6},
        "lost": {"A": [1, 2]},
        "discarded": {},
    }
    assert rc.stored("Y") == A3_TO_A6  # written by the accepting run itself, not by a later replicate
    y = rc.location("Y")
    assert (y["state"], y["cvv"], y["dvv"], y["recoverable"]["state"]) == (
        "active",
        {"A": 6},
        {"A": 2},
        "yes",
    )
    into_y = {s: c["state"] for (s, t), c in rc.connections().items() if t == "Y"}
    assert into_y == ({"B": "active", "N": "active"} if with_n else {"B": "active"})
    rc("replicate")
    assert rc.stored("Y") == A3_TO_A6
    assert rc.stored("B") == A3_TO_A6
    assert rc.json("log", "verify")["ok"]


def test_an_accepting_run_killed_before_its_end_is_resumed_and_still_names_what_it_gave_up(
    rc: Replctl, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DR5, DR0: the killed run merged DVV-B ({A:2}) and let B serve; the re-run merges nothing more, but it
    reads the journal of the run it resumes, so A:1..2 are still named lost, in the dry run as in the run."""
    from replctl.failpoints import FailpointCrash

    y_between_b_and_n(rc, with_n=True)
    monkeypatch.setenv("REPLCTL_FAILPOINT", "recover.before-end")
    monkeypatch.setenv("REPLCTL_FAILPOINT_MODE", "raise")
    with pytest.raises(FailpointCrash):
        rc("recover", "location", "Y", "--accept-loss", "--yes", expect=None)
    died(rc.db_url)
    monkeypatch.delenv("REPLCTL_FAILPOINT")
    assert rc.location("Y")["state"] == "recovering"
    planned = rc.json("recover", "location", "Y", "--accept-loss", "--dry-run")
    doc = rc.json("recover", "location", "Y", "--accept-loss", "--yes")
    assert (planned["lost"], doc["lost"]) == ({"A": [1, 2]}, {"A": [1, 2]})
    assert (doc["rounds"], doc["accepted"]) == ([{"round": 1, "sources": ["B"], "written": 0}], ["N"])
    assert rc.stored("Y") == A3_TO_A6 and rc.location("Y")["state"] == "active"


def test_accepting_a_loss_waits_while_an_eligible_source_is_damaged_dr0_before_dr5(rc: Replctl) -> None:
    # B still stores a1..a4 but its log is damaged; C deleted a1..a5. Accepting C's loss now would merge {A:5}
    # into A's clock, and once B is recovered CF1 would skip a1..a4 at B as held: a loss nobody named. So
    # nothing is accepted while B cannot serve (exit 5), dry run and run alike.
    for name in "ABC":
        rc("location", "add", name)
    rc("topology", "add", "A", "B", "--both")
    rc("topology", "add", "A", "C", "--both")
    rc.append("A", "a1", "a2", "a3", "a4", "a5")
    rc("replicate")
    rc("delete", "C", "--upto", "5")
    rc("drill", "disaster", "A", "--from", "1")
    rc("drill", "disaster", "B", "--from", "5")
    planned = rc.json("recover", "location", "A", "--accept-loss", "--dry-run")
    run = rc.json("recover", "location", "A", "--accept-loss", expect=5)
    for doc in (planned, run):
        assert doc["accepted"] == []
        assert sorted((r["source"], r["rule"]) for r in doc["refused"]) == [("B", "DR0"), ("C", "DR4")]
        assert [r["reason"] for r in doc["refused"] if r["source"] == "B"] == [
            "waits: B's log is damaged (DR0); run: replctl recover location B"
        ]
    assert rc.location("A")["state"] == "recovering"
    assert (rc.location("A")["cvv"], rc.location("A")["dvv"]) == ({}, {})
    assert rc.keys("A") == []


def a_lost_what_b_deleted(rc: Replctl) -> None:
    """A↔B with a1..a4 everywhere; B deletes a1, a2 (A's own); A loses its whole log."""
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "a1", "a2", "a3", "a4")
    rc("replicate")
    rc("delete", "B", "--upto", "2")
    rc("drill", "disaster", "A", "--from", "1")


@pytest.mark.parametrize("killed_first", [False, True])
def test_own_events_an_accepted_loss_gave_up_are_named_lost_also_after_a_resumed_run(
    rc: Replctl, monkeypatch: pytest.MonkeyPatch, killed_first: bool
) -> None:
    # DR5: B deleted a1, a2 (A's own), A loses its log; accepting B's loss gives them up. A run killed after the
    # merge left DVV-A[A] = 2 in the catalog; its re-run must still name a1, a2 lost, as one run does.
    a_lost_what_b_deleted(rc)
    if killed_first:
        killed(rc, monkeypatch, "recover.before-end", "recover", "location", "A", "--accept-loss", "--yes")
        assert rc.location("A")["state"] == "recovering"
    planned = rc.json("recover", "location", "A", "--accept-loss", "--dry-run")
    doc = rc.json("recover", "location", "A", "--accept-loss", "--yes")
    assert (planned["lost"], doc["lost"]) == ({"A": [1, 2]}, {"A": [1, 2]})
    assert rc.keys("A") == ["a3", "a4"]


def test_what_an_accepted_loss_gave_up_is_named_lost_after_a_second_disaster_during_the_recovery(
    rc: Replctl, monkeypatch: pytest.MonkeyPatch
) -> None:
    # DR5, DR0: the first run accepted B's deletion of a1, a2 (given up) and was killed; A then lost its log a
    # second time while recovering, and the next run, killed too, journalled the loss again. The run that ends
    # the recovery must still name a1, a2 lost: every run since A's last completed recovery counts, not only
    # those back to the newest loss.
    a_lost_what_b_deleted(rc)
    killed(rc, monkeypatch, "recover.before-end", "recover", "location", "A", "--accept-loss", "--yes")
    assert rc.keys("A") == ["a3", "a4"] and rc.location("A")["state"] == "recovering"
    rc("drill", "disaster", "A", "--from", "1")
    killed(rc, monkeypatch, "recover.before-end", "recover", "location", "A", "--yes")
    planned = rc.json("recover", "location", "A", "--accept-loss", "--dry-run")
    doc = rc.json("recover", "location", "A", "--accept-loss", "--yes")
    assert (planned["lost"], doc["lost"]) == ({"A": [1, 2]}, {"A": [1, 2]})
    assert rc.keys("A") == ["a3", "a4"] and rc.location("A")["state"] == "active"


def test_a_recovery_that_made_the_location_active_ends_what_later_runs_name_lost(
    rc: Replctl, monkeypatch: pytest.MonkeyPatch
) -> None:
    # DR5, DR1: the first recovery accepted B's deletion of a1, a2 and made A active (its `end` step), then was
    # stopped before the operation's own end. A second loss later is a new one: its recovery brings a3, a4
    # back from B and names nothing lost (a1, a2 were given up, and named, by the first recovery).
    a_lost_what_b_deleted(rc)
    killed(rc, monkeypatch, "operation.before-finish", "recover", "location", "A", "--accept-loss", "--yes")
    assert rc.location("A")["state"] == "active"
    rc("drill", "disaster", "A", "--from", "1")
    planned = rc.json("recover", "location", "A", "--dry-run")
    doc = rc.json("recover", "location", "A", "--yes")
    assert (planned["lost"], doc["lost"]) == ({}, {})
    assert rc.keys("A") == ["a3", "a4"] and rc.location("A")["state"] == "active"


def test_a_terminal_location_gets_back_what_it_held_through_a_filter_since_changed_dr3(rc: Replctl) -> None:
    # DR3 through every filter N→A ever had: x1 came in under `x%`; after the change to `y%`, y2's vt covers
    # it, so a recovery through `y%` alone never brought it back and said nothing was lost.
    rc("location", "add", "A")
    rc("location", "add", "N")
    rc("topology", "add", "A", "N")
    rc("topology", "add", "N", "A", "--filter", "key like 'x%'")
    rc.append("N", "x1", "y1")
    rc.append("A", "a1")
    rc("replicate")
    rc("topology", "filter", "N", "A", "--set", "key like 'y%'")
    rc.append("N", "y2")
    rc("replicate")
    assert rc.stored("A") == [("A", 1, "a1"), ("N", 1, "x1"), ("N", 4, "y2")]
    rc("drill", "disaster", "A", "--from", "1", "--yes")
    planned = rc.json("recover", "location", "A", "--dry-run")
    doc = rc.json("recover", "location", "A")
    # The dry run cannot tell what a filtered pass brings; the run checks the stores: every event of N's
    # that N stores up to A's CVV before the loss is at A again, so nothing of N's is lost.
    assert (planned["lost"], doc["lost"]) == ({"N": None}, {})
    assert doc["rounds"] == [{"round": 1, "sources": ["N"], "written": 4}]
    # In N's order, numbered after T = 3 (DR1); y1 A never held comes too (`x%` passed nothing of it, `y%`
    # does): extra, never lost.
    assert [
        (e["seq"], e["origin"], e["origin_time"], e["vt"], e["key"])
        for e in rc.json("log", "show", "A")["events"]
    ] == [
        (4, "N", 1, {"N": 1}, "x1"),
        (5, "N", 2, {"N": 2}, "y1"),
        (6, "A", 1, {"A": 1}, "a1"),
        (7, "N", 4, {"A": 1, "N": 4}, "y2"),
    ]
    rc("topology", "filter", "N", "A", "--set", "key like 'x%'")
    rc("replicate")
    assert rc.stored("A") == [("N", 1, "x1"), ("N", 2, "y1"), ("A", 1, "a1"), ("N", 4, "y2")]
    assert rc.json("log", "verify")["ok"]


def test_a_terminal_location_whose_filter_was_once_cleared_recovers_unfiltered_dr3(rc: Replctl) -> None:
    # N→A was unfiltered for a while (z1 came then): DR3's recovery from N is unfiltered, so BK3 can decide
    # it (no filter makes it depend on event contents) and the dry run knows what the run brings.
    terminal_once_unfiltered(rc)
    assert rc.stored("A") == [("N", 1, "x1"), ("N", 2, "z1"), ("N", 4, "y2")]
    assert rc.location("A")["recoverable"] == {"state": "yes", "backup": None, "shortfall": {}}
    rc("drill", "disaster", "A", "--from", "1", "--yes")
    planned = rc.json("recover", "location", "A", "--dry-run")
    doc = rc.json("recover", "location", "A")
    assert (planned["lost"], doc["lost"]) == ({}, {})
    assert planned["cvv"] == doc["cvv"] == {"N": 4}
    assert rc.stored("A") == [("N", 1, "x1"), ("N", 2, "z1"), ("N", 3, "w1"), ("N", 4, "y2")]
    assert rc.json("log", "verify")["ok"]


def m_retired_behind_a_filter(rc: Replctl, *, n_holds_m1: bool = True) -> None:
    """M, since retired, gave m1 to A directly; A's only neighbour now is N, whose N→A (`x%`) never passes m1
    and whose x1 (vt covering M:1) A holds; then A loses its whole log. N stores m1 too (from M and A), or
    (`n_holds_m1` False) never stored it: it got only K's k1 (K→N `k%`), whose vt covers m1."""
    for name in ("A", "N", "M", *([] if n_holds_m1 else ["K"])):
        rc("location", "add", name)
    rc("topology", "add", "M", "A")
    via = "N" if n_holds_m1 else "K"
    rc("topology", "add", "M", via)
    if n_holds_m1:
        rc("topology", "add", "A", "N")
    else:
        rc("topology", "add", "K", "N", "--filter", "key like 'k%'")
    rc.append("M", "m1")
    rc("replicate")
    if not n_holds_m1:
        rc.append("K", "k1")
        rc("replicate")
    rc("topology", "remove", "M", "A")
    rc("topology", "remove", "M", via)
    rc("location", "retire", "M")
    rc("topology", "add", "N", "A", "--filter", "key like 'x%'")
    rc.append("N", "x1")
    rc("replicate")
    held = [("M", 1, "m1")] if n_holds_m1 else [("K", 2, "k1")]
    assert rc.stored("N") == [*held, ("N", 2, "x1")]
    assert rc.stored("A") == [("M", 1, "m1"), ("N", 2, "x1")]
    rc("drill", "disaster", "A", "--from", "1", "--yes")


@pytest.mark.parametrize("n_holds_m1", [True, False], ids=["N stores m1", "N's CVV covers m1 through K"])
def test_a_run_through_a_filtered_source_says_unknown_for_what_it_cannot_prove_came_back(
    rc: Replctl, n_holds_m1: bool
) -> None:
    # m1 does not come back, and A's CVV after the run covers it through x1: the run cannot tell whether A
    # lost it, so `lost` says unknown (null), as its dry run does, never `{}`. N's own events are all back.
    m_retired_behind_a_filter(rc, n_holds_m1=n_holds_m1)
    planned = rc.json("recover", "location", "A", "--dry-run")
    doc = rc.json("recover", "location", "A")
    # Through K, N's CVV covers m1 and k1 though N stores neither: only K's and M's journalled appends say
    # that A lacks events of theirs (k1, which A never held, is one; the run cannot tell it from m1).
    unknown = {} if n_holds_m1 else {"K": None}
    assert (planned["lost"], doc["lost"]) == ({"M": None, "N": None, **unknown}, {"M": None, **unknown})
    assert (doc["refused"], doc["cvv"]) == ([], {"M": 1, "N": 2, **({} if n_holds_m1 else {"K": 2})})
    assert rc.stored("A") == [("N", 2, "x1")]
    assert rc.location("A")["state"] == "active"  # nothing is pending that a re-run would bring


def test_the_text_of_a_run_names_the_origins_whose_loss_it_cannot_tell(rc: Replctl) -> None:
    m_retired_behind_a_filter(rc)
    out = rc("recover", "location", "A")
    assert out.stdout.splitlines()[-1] == (
        "A: whether events of M it held are lost cannot be told: after the filtered source's pass (DR3), "
        "events of theirs its clock covered are not back"
    )
    assert "lost for good" not in out.stdout


def _own_event_only_at_a_dr3_refused_neighbour(rc: Replctl, *, group: bool, backed_up: bool = False) -> str:
    """A (neighbours B and D) sends a1 to D over a filtered A→D; a1 never reached B; then A loses everything."""
    for name in "ABD":
        rc("location", "add", name)
    rc("topology", "add", "A", "B", "--both")
    if group:
        rc("topology", "group", "G", "A", "B")
    rc("topology", "add", "A", "D", "--filter", "key = 'a1'")
    rc("topology", "add", "D", "A")
    if group:
        # RFC2: D's copy of a1 is ahead of the group {A, B}, so it never passes into B either.
        rc("topology", "add", "B", "D", "--filter", "key = 'a1'")
        rc("topology", "add", "D", "B")
    rc.append("A", "a1")
    rc("replicate", "A", "D")
    assert rc.stored("D") == [("A", 1, "a1")]
    made = rc.json("backup", "create", "A")["backups"][0]["id"] if backed_up else ""
    rc("drill", "disaster", "A", "--from", "1", "--yes")
    return str(made)


@pytest.mark.parametrize("group", [False, True], ids=["plain", "group"])
def test_own_events_only_a_dr3_refused_neighbour_holds_are_named_lost_by_the_dry_run_and_the_run(
    rc: Replctl, group: bool
) -> None:
    """DR3, DR5, BK3: D's refusal never lifts (A→D stays filtered in the history) and A's next append makes
    CF1 skip a1 at D→A: a1 is lost to A's side, and every report says so, as `status` (BK3) did before."""
    _own_event_only_at_a_dr3_refused_neighbour(rc, group=group)
    planned = rc.json("recover", "location", "A", "--dry-run")
    refused = rc("recover", "location", "A", "--json", expect=5).doc
    for out in (planned, refused):
        assert [(r["source"], r["rule"]) for r in out["refused"]] == [("D", "DR3")]
        assert out["lost"] == {"A": [1, 1]}
    text = rc("recover", "location", "A", "--accept-loss", "--dry-run").stdout
    assert "A: events A: 1..1 would be lost for good" in text, text
    planned = rc.json("recover", "location", "A", "--accept-loss", "--dry-run")
    accepted = rc.json("recover", "location", "A", "--accept-loss")
    for out in (planned, accepted):
        assert (out["accepted"], out["refused"]) == (["D"], [])
        assert out["lost"] == {"A": [1, 1]}
    assert rc.location("A")["state"] == "active"
    rc.append("A", "a2")
    ran = {(p["source"], p["target"]): p for p in rc.json("replicate")["passes"]}
    assert (ran["D", "A"]["written"], ran["D", "A"]["skipped_causal"]) == (0, 1)  # CF1: a2 covers a1
    assert rc.stored("A") == [("A", 2, "a2")]  # a1 is not back: the reports said so
    assert rc.stored("B") == [("A", 2, "a2")]
    assert rc.stored("D") == [("A", 1, "a1")]
    assert rc.json("log", "verify")["ok"]


def test_a_plain_recovery_losing_own_events_only_a_dr3_refused_neighbour_and_the_backup_hold_is_refused(
    rc: Replctl,
) -> None:
    """BK3: a1 survives at D, which DR3 refuses for good, and in A's backup: losing it needs the restore or
    consent, dry run and run alike; counting D as if it would serve a1 later, the recovery ran and lost it."""
    made = _own_event_only_at_a_dr3_refused_neighbour(rc, group=False, backed_up=True)
    rc.refused_backup_held("A", "A: 1..1", made)
    doc = rc.json("recover", "location", "A", "--from-backup", made, expect=5)
    assert (doc["lost"], [r["source"] for r in doc["refused"]]) == ({}, ["D"])
    assert rc.stored("A") == [("A", 1, "a1")]
