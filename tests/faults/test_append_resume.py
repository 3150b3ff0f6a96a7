"""`log append` is idempotent across a crash (rules.md REP3, EM1; architecture.md, Concurrency and faults).

An append journals the digest of its input in its args, and its commit step `append` in the transaction that
commits its segment. Re-running the same append at the same location after it was interrupted past that
commit completes the interrupted operation instead of appending the events a second time; after a finished
append, the same command appends again (an operator may repeat an append on purpose). The in-process tests
crash with `REPLCTL_FAILPOINT_MODE=raise`; the slow ones kill a child process for real (harness:
`killpoints.py`) and count in the kill-point report.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from clitool import Replctl
from crashed import died

from faults.killpoints import REPORT, Survived, World, kill_at, lost_and_duplicated, observe, poison
from replctl import failpoints
from replctl.adapters import eventfile
from replctl.adapters.catalog import migrate
from replctl.adapters.catalog.repository import Catalog
from replctl.core.journal import Outcome
from replctl.services.logs import APPEND_COMMAND, APPEND_STEP, interrupted_append, read_source

APPEND = ("log", "append", "A", "--event", '{"key": "a2"}', "--event", '{"key": "a3"}')


def world(root: Path) -> Replctl:
    """A and B replicating both ways; A holds a1."""
    rc = Replctl(root)
    rc("init")
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "a1")
    return rc


def crash(rc: Replctl, failpoint: str, *command: str) -> None:
    """Run `command` in-process, crashing at `failpoint` (FailpointCrash escapes every handler)."""
    crashing = Replctl(rc.root)
    crashing.env = {**rc.env, "REPLCTL_FAILPOINT": failpoint, "REPLCTL_FAILPOINT_MODE": "raise"}
    failpoints.reset()
    with pytest.raises(failpoints.FailpointCrash):
        crashing(*command, expect=None)
    died(rc.db_url)


def latest_operation(rc: Replctl) -> dict[str, Any]:
    """The newest journal entry, with its steps."""
    newest = rc.json("ops", "list", "--limit", "1")["operations"][0]["id"]
    op: dict[str, Any] = rc.json("ops", "show", newest)["operation"]
    return op


# --- the digest: what makes two appends "the same" -----------------------------------------------------------


def test_the_same_events_have_one_digest_however_they_are_spelled_or_given(tmp_path: Path) -> None:
    given = read_source(
        ['{"key": "e1", "tags": ["x"]}', '{"tags":["x"],"key":"e2"}'], None, None, 0, event_files=eventfile
    )
    jsonl = tmp_path / "events.jsonl"
    jsonl.write_text('{"tags": ["x"], "key": "e1"}\n\n{"key": "e2", "tags": ["x"]}\n')
    assert given.digest() == read_source([], jsonl, None, 0, event_files=eventfile).digest()
    reordered = read_source(
        ['{"key": "e2", "tags": ["x"]}', '{"key": "e1", "tags": ["x"]}'], None, None, 0, event_files=eventfile
    )
    assert reordered.digest() != given.digest()  # the order is part of the append (EM1 numbers in order)
    assert given.digest().startswith("sha256:")


def test_a_generated_append_is_identified_by_its_count_and_seed_and_a_parquet_one_by_its_bytes(
    tmp_path: Path,
) -> None:
    assert (
        read_source([], None, 5, 1, event_files=eventfile).digest()
        == read_source([], None, 5, 1, event_files=eventfile).digest()
    )
    assert (
        len(
            {
                read_source([], None, n, seed, event_files=eventfile).digest()
                for n, seed in [(5, 1), (5, 2), (6, 1)]
            }
        )
        == 3
    )
    folder = tmp_path / "input"
    folder.mkdir()
    # Real Parquet files: an input that is not Parquet is refused before it is digested (issue 19).
    pq.write_table(pa.table({"key": ["one"]}), folder / "part-0.parquet")
    before = read_source([], folder, None, 0, event_files=eventfile).digest()
    assert read_source([], folder, None, 0, event_files=eventfile).digest() == before
    pq.write_table(pa.table({"key": ["two"]}), folder / "part-1.parquet")
    assert read_source([], folder, None, 0, event_files=eventfile).digest() != before
    assert read_source([], folder / "part-0.parquet", None, 0, event_files=eventfile).digest() != before


# --- the journal lookup, on SQLite and PostgreSQL --------------------------------------------------------------


@pytest.fixture
def catalog(catalog_url: str) -> Iterator[Catalog]:
    migrate.upgrade(catalog_url)
    with Catalog(catalog_url) as opened:
        yield opened


def journal_append(catalog: Catalog, location: str, digest: str, outcome: Outcome, *, committed: bool) -> str:
    """A journalled append of `digest` at `location` that ended with `outcome`, past its commit or not."""
    with catalog.transaction() as tx:
        op = tx.begin_operation(APPEND_COMMAND, {"location": location, "digest": digest}, "alice", "h1", None)
        if committed:
            tx.record_step(op, APPEND_STEP, {"count": 2, "seq_lo": 2, "seq_hi": 3, "digest": digest})
        if outcome is not Outcome.RUNNING:
            tx.finish_operation(op, outcome, {"code": "holder-died"} if outcome is Outcome.FAILED else None)
    return op


def test_the_latest_append_of_the_same_input_with_an_effect_decides_whether_a_rerun_resumes(
    catalog: Catalog,
) -> None:
    def resumable(digest: str = "sha256:d", location: str = "A") -> str | None:
        with catalog.transaction() as tx:
            found = interrupted_append(tx, location, digest, None)
        return None if found is None else found.id

    assert resumable() is None  # never appended
    first = journal_append(catalog, "A", "sha256:d", Outcome.SUCCEEDED, committed=True)
    assert resumable() is None  # finished: a repeat is deliberate
    dead = journal_append(catalog, "A", "sha256:d", Outcome.FAILED, committed=True)
    assert resumable() == dead  # taken over as dead after its commit
    journal_append(catalog, "A", "sha256:d", Outcome.FAILED, committed=False)  # died before doing anything
    journal_append(catalog, "A", "sha256:d", Outcome.REFUSED, committed=False)
    assert resumable() == dead  # attempts without effect are looked past
    assert resumable("sha256:other") is None
    assert resumable(location="B") is None
    with catalog.transaction() as tx:
        assert tx.complete_interrupted(dead, by=first)
        assert not tx.complete_interrupted(dead, by=first)  # once only
        completed = tx.operation(dead)
    assert completed is not None
    assert (completed.outcome, completed.error) == (Outcome.SUCCEEDED, None)
    assert completed.steps[-1].detail == {"operation": first, "interrupted": {"code": "holder-died"}}
    assert resumable() is None  # now finished itself
    running = journal_append(catalog, "A", "sha256:d", Outcome.RUNNING, committed=True)
    assert resumable() == running  # journalled running, its lease lost: interrupted after its commit too


# --- in-process crashes --------------------------------------------------------------------------------------


@pytest.mark.spark
def test_an_append_interrupted_after_its_commit_is_completed_not_repeated_by_the_rerun_rep3(
    tmp_path: Path,
) -> None:
    rc = world(tmp_path)
    crash(rc, "operation.before-finish", *APPEND)
    interrupted = latest_operation(rc)
    assert [s["name"] for s in interrupted["steps"]] == ["append"]
    assert rc.keys("A") == ["a1", "a2", "a3"]

    again = rc(*APPEND)
    assert again.stdout.strip() == (
        f"already appended by operation {interrupted['id']} before it was interrupted: seq 2..3"
    )
    assert rc.keys("A") == ["a1", "a2", "a3"]  # one copy
    assert rc.json("log", "verify")["ok"]
    # Both journals tell the story: the interrupted operation was completed by the re-run.
    resumer = latest_operation(rc)
    assert resumer["outcome"] == "succeeded"
    assert [(s["name"], s["detail"]["operation"]) for s in resumer["steps"]] == [
        ("resume", interrupted["id"])
    ]
    done = rc.json("ops", "show", interrupted["id"])["operation"]
    assert (done["outcome"], done["error"]) == ("succeeded", None)
    completed = done["steps"][-1]
    assert (completed["name"], completed["detail"]["operation"]) == ("completed-by", resumer["id"])
    # The crash left it running, as a kill does; the re-run took its lease over from the dead holder.
    assert completed["detail"]["interrupted"]["code"] == "holder-died"


@pytest.mark.spark
def test_the_resumed_append_answers_with_the_document_of_the_append_it_completes(tmp_path: Path) -> None:
    rc = world(tmp_path)
    crash(rc, "operation.before-finish", *APPEND)
    interrupted = latest_operation(rc)["id"]
    dry = rc.json(*APPEND, "--dry-run")
    assert (dry["dry_run"], dry["resumed_from"]) == (True, interrupted)
    assert latest_operation(rc)["id"] == interrupted  # a dry run journals nothing and completes nothing

    doc = rc.json(*APPEND)
    assert doc == {
        "ok": True,
        "location": "A",
        "dry_run": False,
        "appended": 2,
        "seq_from": 2,
        "seq_to": 3,
        "cvv": {"A": 3},
        "resumed_from": interrupted,
    }


@pytest.mark.spark
def test_a_finished_append_repeated_appends_the_events_again_on_purpose(tmp_path: Path) -> None:
    rc = world(tmp_path)
    first = rc.json(*APPEND)
    second = rc.json(*APPEND)
    assert "resumed_from" not in first and "resumed_from" not in second
    assert (second["seq_from"], second["seq_to"]) == (4, 5)
    assert rc.keys("A") == ["a1", "a2", "a3", "a2", "a3"]  # two appends, two copies (new identities, EM1)
    # Also once an interrupted append was completed: that one counts as finished.
    crash(rc, "operation.before-finish", *APPEND)
    assert "resumed_from" in rc.json(*APPEND)
    assert "resumed_from" not in rc.json(*APPEND)
    assert rc.keys("A") == ["a1"] + ["a2", "a3"] * 4
    assert rc.json("log", "verify")["ok"]


@pytest.mark.spark
def test_only_the_same_input_at_the_same_location_resumes_and_attempts_without_effect_are_looked_past(
    tmp_path: Path,
) -> None:
    rc = world(tmp_path)
    crash(rc, "operation.before-finish", *APPEND)
    interrupted = latest_operation(rc)["id"]
    # Other events, or the same events at another location, are another append.
    other = rc.json("log", "append", "A", "--event", json.dumps({"key": "a9"}))
    elsewhere = rc.json("log", "append", "B", "--event", '{"key": "a2"}', "--event", '{"key": "a3"}')
    assert "resumed_from" not in other and "resumed_from" not in elsewhere
    # A re-run that died before doing anything left no effect: the interrupted append behind it decides.
    crash(rc, "operation.after-lease", *APPEND)
    assert rc.json(*APPEND)["resumed_from"] == interrupted
    assert rc.keys("A") == ["a1", "a2", "a3", "a9"]


# --- real kills (slow) ---------------------------------------------------------------------------------------

# (failpoint, committed): killed before the segment commit (the re-run appends, once) or after it (the
# re-run completes the killed operation and appends nothing).
KILLS = [("append.after-write", False), ("operation.before-finish", True)]


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The template world and what the uninterrupted append leaves on its twin copy."""
    template = tmp_path_factory.mktemp("append-template")
    world(template)
    reference = tmp_path_factory.mktemp("append-twin")
    shutil.copytree(template, reference, dirs_exist_ok=True)
    ref = Replctl(reference)
    ref(*APPEND)
    return template, observe(ref)


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.parametrize(("failpoint", "committed"), KILLS, ids=[k for k, _ in KILLS])
def test_an_append_killed_at_a_step_boundary_leaves_exactly_one_copy_after_the_rerun_rep3(
    failpoint: str, committed: bool, twin: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    template, expected = twin
    killed = World.copy_of(template, tmp_path / "world")
    kill_at(killed, APPEND, failpoint)
    (dead,) = killed.running_operations()
    orphans = killed.orphans()
    assert len(orphans) == (0 if committed else 1)
    poison(killed, orphans)

    rc = killed.tool()
    doc = rc.json(*APPEND)  # at once: the dead holder's lease is taken over
    assert doc.get("resumed_from") == (dead if committed else None)
    got = observe(rc)
    assert got == expected  # the same events in the same order, the same seq, CVV, DVV and progress
    assert rc.json("log", "verify")["ok"]
    assert killed.held_leases() == []
    assert not killed.catalogued() & orphans
    op = rc.json("ops", "show", dead)["operation"]
    if committed:
        # Taken over as dead (holder-died), then completed by the re-run: the journal keeps both.
        assert (op["outcome"], op["error"]) == ("succeeded", None)
        assert [s["name"] for s in op["steps"]] == ["append", "completed-by"]
        assert op["steps"][-1]["detail"]["interrupted"]["code"] == "holder-died"
    else:
        assert (op["outcome"], op["error"]["code"]) == ("failed", "holder-died")

    lost, duplicated = lost_and_duplicated(expected["logs"], got["logs"])
    REPORT.add(Survived("append resume", "append", failpoint, "kill", len(orphans), lost, duplicated))
    assert (lost, duplicated) == (0, 0)
