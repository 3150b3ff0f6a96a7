"""Retirement and clock pruning through the CLI with exact log contents (rules.md RET1–RET4, M3, §9)."""

from __future__ import annotations

from typing import Any

import pytest
from clitool import Replctl
from crashed import died

from replctl.failpoints import FailpointCrash

pytestmark = pytest.mark.spark


def locations(rc: Replctl) -> dict[str, dict[str, Any]]:
    return {x["name"]: x for x in rc.json("status")["locations"]}


def events(rc: Replctl, location: str) -> list[dict[str, Any]]:
    return list(rc.json("log", "show", location)["events"])


def z_spread_to_a_only(rc: Replctl) -> None:
    """Z emitted z1, z2; only A has them; Z is disconnected (RET1 holds), B still lacks them."""
    for name in "ABZ":
        rc("location", "add", name)
    rc("topology", "add", "Z", "A", "--both")
    rc("topology", "add", "A", "B", "--both")
    rc.append("B", "b1")  # B's first segment never holds Z: it is left as it is
    rc.append("Z", "z1", "z2")
    rc("replicate", "Z", "A")
    rc.append("A", "a1")  # emitted after A stored z1, z2: its vt holds Z:2 (EM1)
    rc("topology", "remove", "Z", "A", "--both")


def assert_pruned_everywhere(rc: Replctl, *, storing_z_events: str = "ABZ") -> None:
    """RET2 done: no vt holds Z, every CVV keeps Z:2 (RET4); Z's events keep their identity (M3); the
    invariants hold; Z is recorded as pruned."""
    for name in "ABZ":
        stored = events(rc, name)
        assert all("Z" not in e["vt"] for e in stored), (name, stored)
        z_events = [(e["origin"], e["origin_time"], e["key"]) for e in stored if e["key"].startswith("z")]
        assert z_events == ([("Z", 1, "z1"), ("Z", 2, "z2")] if name in storing_z_events else []), name
    assert {name: state["cvv"]["Z"] for name, state in locations(rc).items()} == {"A": 2, "B": 2, "Z": 2}
    assert locations(rc)["Z"]["clock_pruned"] is True
    verified = rc.json("log", "verify", "A", "B", "Z")
    assert verified["ok"], verified


def test_pruning_waits_for_a_lagging_location_and_prunes_every_clock_once_it_caught_up_ret3_ret2(
    rc: Replctl,
) -> None:
    z_spread_to_a_only(rc)
    # Not yet retired: RET3 refuses before anything is recorded, so Z stays active.
    refused = rc.json("location", "retire", "Z", "--prune-clock", expect=3)["error"]
    assert refused["code"] == "RET3"
    assert refused["details"]["lagging"] == [{"location": "B", "entry": 0, "needed": 2}]
    assert locations(rc)["Z"]["state"] == "active"
    rc("location", "retire", "Z")
    text = rc("location", "retire", "Z", "--prune-clock", expect=3)
    assert text.stderr.startswith("refused [RET3]: ")
    assert "B has Z:0" in text.stderr
    assert "hint: replctl replicate, then re-run: replctl location retire Z --prune-clock" in text.stderr

    rc("replicate", "A", "B")
    rc("delete", "A", "--upto", "2")  # z1, z2 go at A: DVV-A holds Z:2 now
    assert locations(rc)["A"]["dvv"] == {"Z": 2}
    dry = rc.json("location", "retire", "Z", "--prune-clock", "--dry-run")["prune"]
    would = {log["location"]: (len(log["rewritten"]), log["untouched"]) for log in dry["logs"]}
    assert would == {"A": (1, 0), "B": (1, 1), "Z": (1, 0)}
    assert "Z" in locations(rc)["A"]["cvv"]  # a dry run changes nothing

    done = rc.json("location", "retire", "Z", "--prune-clock")
    assert done["changes"] == []  # already retired: retiring again records nothing
    assert [log["location"] for log in done["prune"]["logs"]] == ["A", "B", "Z"]
    assert done["prune"]["recorded"] is True
    a = locations(rc)["A"]
    assert (a["cvv"], a["dvv"]) == ({"A": 3, "Z": 2}, {"Z": 2})  # RET2: vectors keep Z
    assert_pruned_everywhere(rc, storing_z_events="BZ")
    again = rc.json("location", "retire", "Z", "--prune-clock")
    assert (again["prune"]["logs"], again["prune"]["recorded"]) == ([], False)


def test_a_pruning_that_crashes_midway_resumes_with_what_is_left_and_converges_ret2(
    rc: Replctl, monkeypatch: pytest.MonkeyPatch
) -> None:
    z_spread_to_a_only(rc)
    rc("replicate", "A", "B")
    monkeypatch.setenv("REPLCTL_FAILPOINT_MODE", "raise")
    # Pruned copies of A's segment written, nothing committed: they stay unread.
    monkeypatch.setenv("REPLCTL_FAILPOINT", "prune.after-rewrite")
    with pytest.raises(FailpointCrash):
        rc("location", "retire", "Z", "--prune-clock", expect=None)
    died(rc.db_url)
    z = locations(rc)["Z"]
    assert (z["state"], z["cvv"]) == ("retired", {"Z": 2})
    # A's log committed without Z in its vts, B's and Z's not yet; every CVV keeps Z:2 meanwhile.
    monkeypatch.setenv("REPLCTL_FAILPOINT", "prune.after-commit")
    with pytest.raises(FailpointCrash):
        rc("location", "retire", "Z", "--prune-clock", expect=None)
    died(rc.db_url)
    assert all("Z" not in e["vt"] for e in events(rc, "A"))
    assert {name: state["cvv"]["Z"] for name, state in locations(rc).items()} == {"A": 2, "B": 2, "Z": 2}
    # So replication from an unpruned log into a pruned one still skips what it has (CF1): no duplicates.
    replicated = rc.json("replicate", "B", "A")["passes"][0]
    assert (replicated["written"], replicated["skipped_causal"]) == (1, 3)
    assert rc.keys("A") == ["z1", "z2", "a1", "b1"]
    # This time every vt is pruned, and the crash comes before Z is recorded as pruned.
    monkeypatch.setenv("REPLCTL_FAILPOINT", "prune.before-vectors")
    with pytest.raises(FailpointCrash):
        rc("location", "retire", "Z", "--prune-clock", expect=None)
    died(rc.db_url)
    monkeypatch.delenv("REPLCTL_FAILPOINT")

    # The re-run knows from the journal which segments are pruned already, though Z's own events keep Z in
    # their LUBs through their identities (RET4).
    resumed = rc.json("location", "retire", "Z", "--prune-clock")["prune"]
    assert (resumed["logs"], resumed["recorded"]) == ([], True)
    journal = rc.json("ops", "show", resumed["operation"])["operation"]
    assert [(s["name"], s["detail"]) for s in journal["steps"]] == [("prune-record", {"pruned": "Z"})]
    assert_pruned_everywhere(rc)


def test_retiring_a_location_lifts_its_cycle_so_a_filter_becomes_legal_ret1_f2(rc: Replctl) -> None:
    for name in "ABZ":
        rc("location", "add", name)
    rc("topology", "add", "A", "B")
    rc("topology", "add", "A", "Z")
    rc("topology", "add", "Z", "B")
    assert rc.json("topology", "filter", "A", "B", "--set", "key = 'x'", expect=3)["error"]["code"] == "F1"
    rc("topology", "remove", "A", "Z")
    rc("topology", "remove", "Z", "B")
    # H2: a removed connection keeps its edge, so the cycle A–B–Z still refuses the filter.
    assert rc.json("topology", "filter", "A", "B", "--set", "key = 'x'", expect=3)["error"]["code"] == "F1"
    retired = rc.json("location", "retire", "Z", "--prune-clock")
    assert [c["kind"] for c in retired["changes"]] == ["location-retired"]
    assert retired["prune"]["logs"] == []  # Z never emitted: no clock holds it
    rc("topology", "filter", "A", "B", "--set", "key = 'x'")
    rc("topology", "validate")


def test_retiring_a_location_whose_own_events_reached_no_other_location_is_refused_ret1_ret3(
    rc: Replctl,
) -> None:
    """r2 never reached S: retired, R could never connect again (RET1) and RET3 would refuse its pruning
    for good. Refused, dry run and run alike, with nothing changed; the hinted commands let r2 spread, after
    which the retirement and the pruning pass."""
    for name in "RS":
        rc("location", "add", name)
    rc("topology", "add", "R", "S", "--both")
    rc.append("R", "r1")
    rc("replicate", "R", "S")
    rc.append("R", "r2")  # never replicated
    rc("topology", "remove", "R", "S", "--both")
    before = rc.snapshot()

    expected = (
        "R's own events R:2 are stored at no other remaining location; a retired location may have no "
        "connection again (RET1), so they would be stranded and R's clock could never be pruned (RET3)"
    )
    hint = (
        "replctl topology add R S && replctl replicate R S && replctl topology remove R S, "
        "then: replctl location retire R"
    )
    for dry in ([], ["--dry-run"]):
        for prune in ([], ["--prune-clock"]):
            refused = rc.json("location", "retire", "R", *prune, *dry, expect=3)["error"]
            assert (refused["code"], refused["message"], refused["hint"]) == (
                "RET1",
                f"refused [RET1]: {expected}",
                hint,
            )
            assert refused["details"]["stranded"] == {"origin": "R", "from": 2, "to": 2}
    text = rc("location", "retire", "R", expect=3)
    assert f"refused [RET1]: {expected}" in " ".join(text.stderr.split())
    assert rc.snapshot() == before  # nothing changed
    assert locations(rc)["R"]["state"] == "active"

    # The hint, before the retirement: r2 spreads to S, then R retires and its clock is pruned (RET3 holds).
    rc("topology", "add", "R", "S")
    rc("replicate", "R", "S")
    rc("topology", "remove", "R", "S")
    assert rc.keys("S") == ["r1", "r2"]
    retired = rc.json("location", "retire", "R")
    assert [c["kind"] for c in retired["changes"]] == ["location-retired"]
    pruned = rc.json("location", "retire", "R", "--prune-clock")["prune"]
    assert pruned["recorded"] is True
    assert locations(rc)["R"]["clock_pruned"] is True
    assert [(e["origin"], e["origin_time"], e["key"], e["vt"]) for e in events(rc, "S")] == [
        ("R", 1, "r1", {}),
        ("R", 2, "r2", {}),
    ]


def test_retiring_a_location_whose_event_a_filter_kept_back_is_refused_though_a_cvv_covers_it_ret1(
    rc: Replctl,
) -> None:
    """Z→B passes only x1, whose vt covers y1: B's CVV covers Z:1 by causality, but no one else stores y1.
    No connection to B could bring y1 there (CF1), so the hint names a new location joining with `current`
    history (ADD3), and following it lets Z retire. Before, the hint named B and looped for ever."""
    for name in "BZ":
        rc("location", "add", name)
    rc("topology", "add", "Z", "B", "--filter", "key = 'x1'")
    rc.append("Z", "y1", "x1")
    rc("replicate")
    rc("topology", "remove", "Z", "B")
    assert locations(rc)["B"]["cvv"]["Z"] == 2  # x1's vt covers y1
    before = rc.snapshot()
    for dry in ([], ["--dry-run"]):
        refused = rc.json("location", "retire", "Z", *dry, expect=3)["error"]
        assert (refused["code"], refused["message"], refused["hint"]) == (
            "RET1",
            "refused [RET1]: Z's own events Z:1 are stored at no other remaining location; a retired location "
            "may have no connection again (RET1), so they would be stranded and Z's clock could never be "
            "pruned (RET3); no remaining location would receive them over a connection now",
            "keep them at a new location: replctl location add NEW && replctl topology add Z NEW --history "
            "current && replctl replicate Z NEW && replctl topology remove Z NEW, then: replctl location "
            "retire Z",
        )
        assert (refused["details"]["stranded"], refused["details"]["reached"]) == (
            {"origin": "Z", "from": 1, "to": 1},
            2,
        )
    assert rc.snapshot() == before
    rc("location", "add", "NEW")
    rc("topology", "add", "Z", "NEW", "--history", "current")
    rc("replicate", "Z", "NEW")
    rc("topology", "remove", "Z", "NEW")
    rc("location", "retire", "Z")
    assert (rc.keys("NEW"), rc.keys("B")) == (["y1", "x1"], ["x1"])


def test_retiring_a_location_whose_unspread_events_were_deleted_strands_nothing_ret1(rc: Replctl) -> None:
    """An own event R deleted physically (DVV-R covers it) is gone already: retiring strands nothing of it."""
    for name in "RS":
        rc("location", "add", name)
    rc("topology", "add", "R", "S", "--both")
    rc.append("R", "r1")
    rc("replicate", "R", "S")
    rc("topology", "remove", "R", "S", "--both")
    rc.append("R", "r2")
    rc("delete", "R", "--upto", "2")  # no current target (DEL3): r2 goes at once
    assert locations(rc)["R"]["dvv"] == {"R": 2}
    retired = rc.json("location", "retire", "R")
    assert [c["kind"] for c in retired["changes"]] == ["location-retired"]


def test_retiring_the_last_holder_of_another_origins_events_is_refused_relay_and_deleted_origin_ret1(
    rc: Replctl,
) -> None:
    """Z relays X's x1 to A; X deleted x1 as soon as Z held it (DEL3 counted on Z). Z is then the only
    location storing x1: retired, it could never pass it on, and x1 was lost with every command exiting 0."""
    for name in "XZA":
        rc("location", "add", name)
    rc("topology", "add", "X", "Z")
    rc("topology", "add", "Z", "A")
    rc.append("X", "x1")
    rc("replicate", "X", "Z")
    rc("delete", "X", "--upto", "1")
    rc("topology", "remove", "Z", "A")
    rc("topology", "remove", "X", "Z")
    before = rc.snapshot()
    for dry in ([], ["--dry-run"]):
        refused = rc.json("location", "retire", "Z", *dry, expect=3)["error"]
        assert (refused["code"], refused["message"], refused["hint"]) == (
            "RET1",
            "refused [RET1]: Z stores events of other origins (X:1) that no other remaining location stores; "
            "a retired location may have no connection again (RET1), so they would be lost with it",
            "replctl topology add Z A && replctl replicate Z A && replctl topology remove Z A, "
            "then: replctl location retire Z",
        )
        assert refused["details"]["stranded_others"] == {"X": [1, 1]}
    assert rc.snapshot() == before
    # The hint: x1 spreads to A first, then Z retires.
    rc("topology", "add", "Z", "A")
    rc("replicate", "Z", "A")
    rc("topology", "remove", "Z", "A")
    assert rc.stored("A") == [("X", 1, "x1")]
    assert [c["kind"] for c in rc.json("location", "retire", "Z")["changes"]] == ["location-retired"]


def test_retiring_the_last_holder_of_a_retired_locations_events_is_refused_ret1(rc: Replctl) -> None:
    """Z retired once Y held z1 (right: RET1 saw it at Y); Y, which never passed z1 on to A, then retired too,
    and z1 lived on only in two retired logs."""
    for name in "ZYA":
        rc("location", "add", name)
    rc("topology", "add", "Z", "Y", "--both")
    rc("topology", "add", "Y", "A", "--both")
    rc.append("Z", "z1")
    rc("replicate", "Z", "Y")
    rc("topology", "remove", "Z", "Y", "--both")
    rc("location", "retire", "Z")
    rc("topology", "remove", "Y", "A", "--both")
    refused = rc.json("location", "retire", "Y", expect=3)["error"]
    assert (refused["code"], refused["message"]) == (
        "RET1",
        "refused [RET1]: Y stores events of other origins (Z:1) that no other remaining location stores; "
        "a retired location may have no connection again (RET1), so they would be lost with it",
    )
    assert refused["details"]["stranded_others"] == {"Z": [1, 1]}
    assert locations(rc)["Y"]["state"] == "active"
    assert rc.stored("Y") == [("Z", 1, "z1")]
