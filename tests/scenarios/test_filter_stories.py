"""Filters that fail (issue 14 item 4, issue 19 item 6): refused when given; when a stored or running filter
fails, its connection is marked `failed` with the reason, the other connections still run, exit 5."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from clitool import Replctl

pytestmark = pytest.mark.spark


def _fan_out(rc: Replctl) -> None:
    """A→B (filtered) and A→C (unfiltered); A holds the keys 'abc' and '1'."""
    for name in "ABC":
        rc("location", "add", name)
    rc("topology", "add", "A", "B", "--filter", "key <> 'x'")
    rc("topology", "add", "A", "C")
    rc.append("A", "abc", "1")


def test_issue14_4_an_unknown_function_exits_2_at_topology_add_and_filter(rc: Replctl) -> None:
    for name in ("F1", "F2"):
        rc("location", "add", name)
    before = rc.snapshot()
    doc = rc.json("topology", "add", "F1", "F2", "--filter", "nosuchfn(key) = 'a'", expect=2)
    assert doc["error"]["code"] == "bad-filter"
    assert doc["error"]["message"].startswith(
        "filter \"nosuchfn(key) = 'a'\" calls nosuchfn: not an allowed function;"
    )
    rc("topology", "add", "F1", "F2")
    doc = rc.json(
        "topology", "filter", "F1", "F2", "--set", "reflect('java.lang.System', 'exit', 1) = 0", expect=2
    )
    assert doc["error"]["details"]["refused_functions"] == ["reflect"]
    assert rc.connection("F1", "F2")["filter"] is None
    assert before["status"]["locations"] == rc.snapshot()["status"]["locations"]


def test_issue14_4_a_stored_filter_refused_when_read_marks_its_connection_failed(rc: Replctl) -> None:
    _fan_out(rc)
    # A filter stored before the sandbox existed (or by hand): it is checked again when a pass reads it.
    with sqlite3.connect(rc.root / "catalog.db") as db:
        db.execute(
            "UPDATE connections SET filter = 'NOSUCHFN(key) = ''a''' WHERE source = 'A' AND target = 'B'"
        )
    doc = rc.json("replicate", expect=5)
    passes = {(p["source"], p["target"]): p for p in doc["passes"]}
    assert passes[("A", "B")]["state"] == "failed"
    assert passes[("A", "B")]["action"] == "failed"
    assert passes[("A", "B")]["reason"].startswith(
        "filter refused: filter \"NOSUCHFN(key) = 'a'\" calls nosuchfn: not an allowed function;"
    )
    assert passes[("A", "C")]["written"] == 2
    assert rc.keys("C") == ["abc", "1"]
    assert rc.keys("B") == []
    status = rc.connection("A", "B")
    assert (status["state"], status["progress"]) == ("failed", 0)
    assert status["reason"] == passes[("A", "B")]["reason"]
    assert status["reason"].endswith("; fix it: replctl topology filter A B --set EXPR")
    text = rc("status").stdout
    assert "A→B" in text and "failed" in text
    page = rc.root / "report.html"
    rc("report", "--html", str(page))
    html = page.read_text()
    assert 'class="failed-connections"' in html and "calls nosuchfn: not an allowed function" in html


def test_issue14_4_a_filter_failing_in_spark_marks_it_failed_and_others_run(rc: Replctl) -> None:
    _fan_out(rc)
    # Allowed, but under Spark's ANSI rules a cast of 'abc' to INT fails while the pass runs.
    rc("topology", "filter", "A", "B", "--set", "CAST(key AS INT) = 1")
    doc = rc.json("replicate", expect=5)
    passes = {(p["source"], p["target"]): p for p in doc["passes"]}
    assert passes[("A", "B")]["state"] == "failed"
    assert passes[("A", "B")]["reason"].startswith("filter failed in Spark: [CAST_INVALID_INPUT]")
    assert rc.keys("C") == ["abc", "1"]
    assert rc.keys("B") == []
    assert rc.connection("A", "B")["state"] == "failed"
    assert rc.json("log", "verify")["ok"]

    # A new filter clears the failure; the next pass delivers what it admits.
    rc("topology", "filter", "A", "B", "--set", "try_cast(key AS INT) = 1")
    assert rc.connection("A", "B")["state"] == "active"
    assert rc.connection("A", "B")["reason"] is None
    doc = rc.json("replicate")
    assert rc.keys("B") == ["1"]
    assert rc.connection("A", "B")["state"] == "active"


def test_a_dry_run_reports_the_filter_failure_the_run_meets_and_changes_nothing(rc: Replctl) -> None:
    _fan_out(rc)
    rc("topology", "filter", "A", "B", "--set", "CAST(key AS INT) = 1")
    before = rc.snapshot()
    dry = rc.json("replicate", "--dry-run")
    assert rc.snapshot() == before
    assert (rc.connection("A", "B")["state"], rc.keys("B")) == ("active", [])
    run = rc.json("replicate", expect=5)
    dry_ab, run_ab = ({(p["source"], p["target"]): p for p in d["passes"]}[("A", "B")] for d in (dry, run))
    assert (dry_ab["state"], dry_ab["action"]) == (run_ab["state"], run_ab["action"]) == ("failed", "failed")
    assert dry_ab["reason"] == run_ab["reason"]
    assert dry_ab["reason"].startswith("filter failed in Spark: [CAST_INVALID_INPUT]")
    assert dry_ab["reason"].endswith("; fix it: replctl topology filter A B --set EXPR")


def test_a_dry_run_checks_the_filter_only_on_events_the_target_lacks(rc: Replctl) -> None:
    """REP1 (1) before (2): an event the target holds already never meets the filter, in the run as in its
    dry run; the dry run must not report a failure on it."""
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B")
    rc.append("A", "abc")
    rc("replicate")
    rc("topology", "remove", "A", "B")
    # Re-added with a filter and the whole history (ADD1): the pass reads A's log from its start again.
    rc("topology", "add", "A", "B", "--filter", "CAST(key AS INT) = 1", "--history", "complete")
    assert rc.connection("A", "B")["progress"] == 0
    rc.append("A", "1")
    dry = rc.json("replicate", "A", "B", "--dry-run")
    assert [(p["action"], p["reason"]) for p in dry["passes"]] == [("would-run", None)]
    run = rc.json("replicate", "A", "B")
    assert [(p["action"], p["written"], p["skipped_causal"]) for p in run["passes"]] == [("ran", 1, 1)]
    assert rc.keys("B") == ["abc", "1"]


def test_issue14_4_a_store_failure_is_not_blamed_on_the_filter(rc: Replctl) -> None:
    _fan_out(rc)
    # The source's files are gone: the census finds the log damaged (DR0) before the filter runs.
    for segment in (rc.store / "A").iterdir():
        shutil.rmtree(segment)
    doc = rc.json("replicate", "A", "B", expect=4)
    assert doc["error"]["code"] == "damaged"
    assert (rc.connection("A", "B")["state"], rc.connection("A", "B")["reason"]) == ("active", None)


def _group_behind_a_failing_cast(rc: Replctl) -> None:
    """Group G = {A, B}; D outside it, fed by both members, sends to both over `CAST(key AS INT) > 0` (RFC2:
    one filter, an admission check). D holds A's 1 (which B lacks), its own 2 after it, then 'abc'."""
    for name in ("A", "B", "D"):
        rc("location", "add", name)
    rc("topology", "add", "A", "B", "--both")
    rc("topology", "group", "G", "A", "B")
    for member in ("A", "B"):
        rc("topology", "add", member, "D")
        rc("topology", "add", "D", member, "--filter", "CAST(key AS INT) > 0")
    rc.append("A", "1")
    rc("replicate", "A", "D")
    rc.append("D", "2", "abc")


def test_a_pass_blocked_by_rfc2_stops_before_an_event_its_filter_fails_on_dry_run_plan_and_run(
    rc: Replctl, tmp_path: Path
) -> None:
    """REP1 (3): D→B stops at D's seq 1 (A's 1, ahead of B in the group part); 'abc' at seq 3 is never
    examined, so the cast that fails on it fails neither the run nor its dry run nor the plan's apply."""
    _group_behind_a_failing_cast(rc)
    before = rc.snapshot()
    planned = rc("replicate", "D", "B", "--dry-run", "--json")
    plan = tmp_path / "plan.json"
    written = rc.json("replicate", "D", "B", "--plan-out", str(plan))
    assert rc.snapshot() == before
    [dry] = planned.doc["passes"]
    assert (planned.code, dry["state"], dry["action"], dry["progress"], dry["reason"]) == (
        0,
        "active",
        "would-run",
        None,
        None,
    )
    assert written["plan"]["passes"] == planned.doc["passes"]
    blocked = {
        "round": 1,
        "source": "D",
        "target": "B",
        "state": "active",
        "action": "ran",
        "examined": 0,
        "written": 0,
        "skipped_causal": 0,
        "skipped_filter": 0,
        "blocked_at": 1,
        "progress": 0,
        "reason": "blocked [RFC2] at D seq 1: its group part is ahead of B; it is delivered once the group "
        "catches up",
    }
    assert rc.json("apply", str(plan))["passes"] == [blocked]
    assert rc.json("replicate", "D", "B")["passes"] == [blocked]
    status = rc.connection("D", "B")
    assert (status["state"], status["progress"], status["reason"]) == ("active", 0, None)
    assert rc.keys("B") == []

    # Once B holds A's 1, the pass examines 'abc': then the cast fails it, in the dry run as in the run.
    rc("replicate", "A", "B")
    [dry] = rc.json("replicate", "D", "B", "--dry-run")["passes"]
    [ran] = rc.json("replicate", "D", "B", expect=5)["passes"]
    assert (dry["action"], ran["action"], ran["state"]) == ("failed", "failed", "failed")
    assert dry["reason"] == ran["reason"]
    assert ran["reason"].startswith("filter failed in Spark: [CAST_INVALID_INPUT] The value 'abc'")
    assert rc.keys("B") == ["1"]
