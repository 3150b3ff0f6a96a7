"""Two operations meeting inside each other's critical window (issue 19 items 1-3), deterministically.

Each test pauses one real command at a failpoint (`failpoints.calling`) and, right there, runs the command a
second operator would run at that moment, in the same process. No clock is involved: the interleaving is
exactly the one named. The outcome must equal some serial order of the two commands; the pass or deletion
that lost the race says so (exit 5) and converges when re-run.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clitool import Replctl

from replctl import failpoints
from replctl.adapters.catalog.repository import Catalog

pytestmark = [pytest.mark.spark]


@pytest.fixture
def rc(tmp_path: Path) -> Iterator[Replctl]:
    tool = Replctl(tmp_path)
    tool("init")
    failpoints.reset()
    yield tool


def _pass(doc: dict[str, Any], source: str, target: str) -> dict[str, Any]:
    found: dict[str, Any]
    (found,) = [p for p in doc["passes"] if (p["source"], p["target"]) == (source, target)]
    return found


def test_issue19_3_a_filter_set_during_a_pass_wins_and_the_pass_is_discarded_with_exit_5(rc: Replctl) -> None:
    _filter_set_during_a_pass(rc)


@pytest.mark.postgres
def test_issue19_3_on_postgresql_a_filter_set_during_a_pass_wins_and_the_pass_is_discarded(
    postgres_url: str, tmp_path: Path
) -> None:
    rc = Replctl(tmp_path, db_url=postgres_url)
    rc("init")
    failpoints.reset()
    _filter_set_during_a_pass(rc)


def _filter_set_during_a_pass(rc: Replctl) -> None:
    for name in "AB":
        rc("location", "add", name)
    rc("topology", "add", "A", "B")
    rc.append("A", "a", "x")
    with failpoints.calling(
        "replicate.after-write", lambda: rc("topology", "filter", "A", "B", "--set", "key <> 'x'")
    ) as ran:
        doc = rc.json("replicate", "A", "B", expect=5)
    assert ran == ["replicate.after-write"]
    assert _pass(doc, "A", "B")["action"] == "discarded"
    assert _pass(doc, "A", "B")["reason"] == (
        "A→B was changed by another operation during the pass (a filter change or removal wins); the pass's "
        "result was discarded; re-run: replctl replicate A B"
    )
    # Serial order "filter, then replicate": the filter stands, nothing reached B, progress untouched.
    conn = rc.connection("A", "B")
    assert (conn["filter"], conn["progress"]) == ("key <> 'x'", 0)
    assert rc.keys("B") == []
    ops = rc.json("ops", "list", "--limit", "2")["operations"]
    assert sorted((op["command"], op["outcome"]) for op in ops) == [
        ("replicate", "incomplete"),
        ("topology filter", "succeeded"),
    ]
    rc("replicate", "A", "B")
    assert rc.keys("B") == ["a"]
    assert rc.json("log", "verify")["ok"]


def test_issue19_3_a_removal_during_a_pass_wins_and_the_pass_is_discarded_with_exit_5(rc: Replctl) -> None:
    for name in "AB":
        rc("location", "add", name)
    rc("topology", "add", "A", "B")
    rc.append("A", "a1", "a2")
    with failpoints.calling("replicate.after-write", lambda: rc("topology", "remove", "A", "B")):
        doc = rc.json("replicate", expect=5)
    assert [(p["source"], p["target"], p["action"], p["state"]) for p in doc["passes"]] == [
        ("A", "B", "discarded", "removed")
    ]
    assert rc.connection("A", "B")["state"] == "removed"
    assert rc.keys("B") == []
    assert rc.location("B")["seq"] == 0
    # The segment the discarded pass wrote was never catalogued and is gone from the store.
    assert not (rc.store / "B").exists() or list((rc.store / "B").iterdir()) == []
    assert rc.json("replicate")["passes"] == []


def _hold_lease(rc: Replctl, location: str) -> None:
    """Another operator, on another host, holds the lease on `location` (as a running `log append` would)."""
    with Catalog(rc.db_url) as catalog, catalog.transaction() as tx:
        op = tx.begin_operation("log append", {"location": location}, "other", "elsewhere", None)
        tx.acquire_lease(f"location:{location}", "other@elsewhere pid 1", op, 300)


def test_issue19_2_a_full_replicate_leases_a_target_added_while_it_runs_and_skips_it_when_held(
    rc: Replctl,
) -> None:
    for name in "AB":
        rc("location", "add", name)
    rc("topology", "add", "A", "B")
    rc.append("A", "a1", "a2")

    def add_d_held_by_another() -> None:
        rc("location", "add", "D")
        rc("topology", "add", "A", "D")
        _hold_lease(rc, "D")

    with failpoints.calling("operation.after-lease", add_d_held_by_another):
        doc = rc.json("replicate", expect=5)
    assert _pass(doc, "A", "B")["written"] == 2
    skipped = _pass(doc, "A", "D")
    assert skipped["action"] == "skipped"
    assert skipped["reason"].startswith(
        "not replicated: location:D is held by other@elsewhere pid 1 (operation "
    )
    # Nothing was written where the run held no lease: D's log and seq are untouched.
    assert rc.keys("D") == []
    assert (rc.location("D")["seq"], rc.connection("A", "D")["progress"]) == (0, 0)
    assert rc.keys("B") == ["a1", "a2"]


def test_issue19_1_a_connection_added_from_the_source_during_a_deletion_defers_it(rc: Replctl) -> None:
    for name in "AB":
        rc("location", "add", name)
    rc("topology", "add", "A", "B")
    rc.append("A", "a1", "a2", "a3")
    rc("replicate")

    def add_d() -> None:
        rc("location", "add", "D")
        rc("topology", "add", "A", "D")

    with failpoints.calling("delete.after-rewrite", add_d):
        doc = rc.json("delete", "A", "--upto", "3", expect=5)
    # Serial order "topology add, then delete": D needs a1..a3, so nothing is cut; the request waits for D.
    assert (doc["pending"], doc["pending_upto"], doc["deleted_upto"]) == (True, 3, 0)
    assert doc["blocked_by"] == [{"target": "D", "first_blocked_seq": 1}]
    assert rc.keys("A") == ["a1", "a2", "a3"]
    assert rc.location("A")["deleted_upto"] == 0
    # Replication delivers a1..a3 to D, then retries the deletion (DEL4), which now goes through.
    rc("replicate")
    assert rc.keys("D") == ["a1", "a2", "a3"]
    assert rc.location("A")["deleted_upto"] == 3
    assert rc.keys("A") == []
    assert rc.json("log", "verify")["ok"]


@pytest.mark.postgres
@pytest.mark.timeout(180)
def test_on_postgresql_a_connection_added_while_a_deletion_commits_waits_and_then_sees_its_dvv(
    postgres_url: str, tmp_path: Path
) -> None:
    """ADD1 against DEL3 across two processes: the deletion commits with X's targets read again inside its
    transaction; a `topology add X C` in another process at that moment must end as in one serial order."""
    rc = Replctl(tmp_path, db_url=postgres_url)
    rc("init")
    failpoints.reset()
    for name in "XBC":
        rc("location", "add", name)
    rc("topology", "add", "X", "B")
    rc.append("X", "x1", "x2", "x3")
    rc("replicate")
    added: list[subprocess.Popen[str]] = []

    def add_from_another_process() -> None:
        proc = subprocess.Popen(
            [sys.executable, "-m", "replctl", "--json", "topology", "add", "X", "C"],
            env={**os.environ, **rc.env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        added.append(proc)
        # Without a catalog write lock the addition decides on X's DVV before the deletion commits, and
        # commits inside its window; with it, it waits here for the deletion's transaction to end.
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=15)

    with failpoints.calling("delete.in-commit", add_from_another_process) as ran:
        doc = rc.json("delete", "X", "--upto", "2")
    assert ran == ["delete.in-commit"]
    out, err = added[0].communicate(timeout=120)
    assert added[0].returncode == 0, err
    # Serial order "delete, then topology add": x1, x2 are gone from X and C lacks them, so X→C waits (ADD1).
    assert (doc["deleted_upto"], doc["dvv"]) == (2, {"X": 2})
    (conn,) = json.loads(out)["connections"]
    assert (conn["source"], conn["target"], conn["state"]) == ("X", "C", "pending")
    assert rc.connection("X", "C")["state"] == "pending"
    rc("replicate")
    assert rc.keys("C") == []
    assert rc.keys("X") == ["x3"]
    assert rc.json("log", "verify")["ok"]


@pytest.mark.timeout(120)
def test_issue15_6_status_reads_while_a_replicate_holds_the_write_lock_and_neither_waits(rc: Replctl) -> None:
    for name in "AB":
        rc("location", "add", name)
    rc("topology", "add", "A", "B")
    rc.append("A", "a1", "a2")
    seen: list[dict[str, Any]] = []

    def status_inside_the_commit() -> None:
        # The replicate is inside its committing transaction: on SQLite it holds the write lock here. Each
        # redraw of `status --watch` is this read; it must not wait for the writer (it used to, for the
        # busy timeout, then exit 6).
        seen.append(rc.json("status"))

    # An operator's read held open for the whole pass (a watch mid-redraw) does not hold the writer up.
    with (
        failpoints.calling("replicate.in-commit", status_inside_the_commit) as ran,
        Catalog(rc.db_url) as catalog,
        catalog.transaction(readonly=True) as reading,
    ):
        assert [loc.seq for loc in reading.locations() if loc.name == "B"] == [0]  # the snapshot starts
        doc = rc.json("replicate", "A", "B")
        assert [loc.seq for loc in reading.locations() if loc.name == "B"] == [0]
    assert ran == ["replicate.in-commit"]
    # The read saw the catalog as it was before the pass committed; the pass then committed.
    ((before_b,),) = [[x for x in seen[0]["locations"] if x["name"] == "B"]]
    assert before_b["seq"] == 0
    assert _pass(doc, "A", "B")["written"] == 2
    assert rc.location("B")["seq"] == 2


def _z_spread_to_a_and_disconnected(rc: Replctl) -> None:
    """Z's own z1, z2 stored at Z and at A (one segment there); Z has no current connection, so it may retire."""
    for name in "ZA":
        rc("location", "add", name)
    rc("topology", "add", "Z", "A")
    rc.append("Z", "z1", "z2")
    rc("replicate")
    rc("topology", "remove", "Z", "A")


@pytest.mark.timeout(120)
def test_an_append_elsewhere_commits_while_location_retire_scans_the_stored_identities_ret1(
    rc: Replctl,
) -> None:
    _z_spread_to_a_and_disconnected(rc)
    # RET1's scan of every stored identity is a data-plane job: a second operator's short write meanwhile
    # commits at once (it used to wait for the retirement's write lock, then exit 6 after the busy timeout).
    with failpoints.calling("retire.after-scan", lambda: rc.append("A", "a1")) as ran:
        doc = rc.json("location", "retire", "Z")
    assert ran == ["retire.after-scan"]
    assert [c["kind"] for c in doc["changes"]] == ["location-retired"]
    assert rc.location("Z")["state"] == "retired"
    assert rc.keys("A") == ["z1", "z2", "a1"]
    # Newest first: the append began inside the retirement and ended before it.
    ops = rc.json("ops", "list", "--limit", "2")["operations"]
    assert [(op["command"], op["outcome"]) for op in ops] == [
        ("log append", "succeeded"),
        ("location retire", "succeeded"),
    ]


@pytest.mark.timeout(120)
def test_a_deletion_of_the_only_other_copy_during_location_retire_scan_makes_it_read_again_and_refuse_ret1(
    rc: Replctl,
) -> None:
    _z_spread_to_a_and_disconnected(rc)
    # A has no target, so it may drop z1 at once (DEL3); the scan had counted A's segment as holding z1. The
    # retirement must not commit on that stale answer (z1 would be stranded at a retired Z): it reads again.
    with failpoints.calling("retire.after-scan", lambda: rc("delete", "A", "--upto", "1")) as ran:
        out = rc("location", "retire", "Z", "--json", expect=3)
    assert ran == ["retire.after-scan"]
    error = out.doc["error"]
    assert (error["code"], error["message"]) == (
        "RET1",
        "refused [RET1]: Z's own events Z:1 are stored at no other remaining location; a retired location "
        "may have no connection again (RET1), so they would be stranded and Z's clock could never be pruned "
        "(RET3); no remaining location would receive them over a connection now",
    )
    # A deleted z1, so its CVV covers it: a connection back to A would bring nothing (CF1).
    assert error["hint"].startswith("keep them at a new location: replctl location add NEW")
    assert rc.location("Z")["state"] == "active"
    assert rc.keys("A") == ["z2"]
    ops = rc.json("ops", "list", "--limit", "2")["operations"]
    assert [(op["command"], op["outcome"]) for op in ops] == [
        ("delete", "succeeded"),
        ("location retire", "refused"),
    ]
