"""One planner for dry run and run (issue 14): for every mutating command, on one state, `--dry-run --json`
changes nothing and decides what the run then does (targets, rounds, clocks, segments, pending, counts).

Each case builds a tiny state, takes the dry run's document, checks that the catalog did not move, runs the
command for real on that same state and compares the decisions of both documents. What only the run can know
is named per case and left out: new operation ids and segment file names, and the counts of a replication
pass that reads events (a dry run reads none; it says `would-run` and gives them as null).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from clitool import (
    Replctl,
    chain_a_b_c_d,
    chain_z_y_x,
    lose_what_the_neighbour_deleted,
    terminal_once_unfiltered,
    y_between_b_and_n,
)

pytestmark = pytest.mark.spark

Doc = dict[str, Any]

# What the dry run calls the action the run then reports.
RAN = {"would-run": "ran", "would-copy": "copied"}


def two_way(rc: Replctl) -> None:
    """A↔B; A holds a1 and a2, a3 in two segments, not yet replicated."""
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "a1")
    rc.append("A", "a2", "a3")


def replicated(rc: Replctl) -> None:
    """A↔B replicated; then a4 at A only, so B still needs it (DEL3)."""
    two_way(rc)
    rc("replicate")
    rc.append("A", "a4")


def pending_at_a(rc: Replctl) -> None:
    """As `replicated`, and a deletion at A up to 4 that waits for B, which lacks a4 (DEL4)."""
    replicated(rc)
    rc("delete", "A", "--upto", "4", expect=5)


def six_segments(rc: Replctl) -> None:
    """A alone with six one-event segments (issue 14: the dry run said 6 → 6, the run did 6 → 1)."""
    rc("location", "add", "A")
    for i in range(1, 7):
        rc.append("A", f"a{i}")


def lost_suffix(rc: Replctl) -> None:
    """A↔B replicated, then A loses a2, a3 (its second segment): B serves round 1."""
    two_way(rc)
    rc("replicate")
    rc("drill", "disaster", "A", "--from", "2")


def one_segment_replicated(rc: Replctl) -> None:
    """A↔B; A holds a1..a4 in one segment, replicated to B (finding 4: a loss inside that segment)."""
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "a1", "a2", "a3", "a4")
    rc("replicate")


def lost_mid_segment(rc: Replctl) -> None:
    """As `one_segment_replicated`, then A's segment is cut from seq 3 on (the runbook's drill): the census
    finds the loss inside the segment, whose a1, a2 survive (DR0, DR1)."""
    one_segment_replicated(rc)
    rc("drill", "disaster", "A", "--from", "3")


def b_damaged(rc: Replctl) -> None:
    """A↔B replicated, then B's log is destroyed (a drill): a backup of every location refuses B (DR0)."""
    two_way(rc)
    rc("replicate")
    rc("drill", "disaster", "B", "--from", "1")


def lost_what_b_deleted(rc: Replctl) -> None:
    """A loses a1..a3, which B deleted: B fails DR4 (exit 5) unless the loss is accepted."""
    lose_what_the_neighbour_deleted(rc, lost_from=1)


def y_between_b_and_n_lost(rc: Replctl) -> None:
    """Y loses everything; its eligible source B deleted A:1..2 (DR4), N deleted A:1..6 and is no source (DR3)."""
    y_between_b_and_n(rc, with_n=True)


def terminal_once_unfiltered_lost(rc: Replctl) -> None:
    """A terminal behind a filter once cleared loses everything: DR3's recovery is unfiltered, so the dry run
    knows what the run brings."""
    terminal_once_unfiltered(rc)
    rc("drill", "disaster", "A", "--from", "1", "--yes")


def backed_up_then_lost(rc: Replctl) -> None:
    """A backed up at a1..a3; a4 since, replicated to B; then A loses everything (BK2)."""
    replicated(rc)
    rc("backup", "create", "A")
    rc.append("A", "a5")
    rc("replicate")
    rc("drill", "disaster", "A", "--from", "1")


def a_lost_b_damaged(rc: Replctl) -> None:
    """A↔B, A↔C replicated; C deleted a1..a5; A loses everything and B's log is damaged: B takes its place in
    a round and serves nothing (DR0), C fails DR4, and no loss is accepted while B cannot serve."""
    for name in "ABC":
        rc("location", "add", name)
    rc("topology", "add", "A", "B", "--both")
    rc("topology", "add", "A", "C", "--both")
    rc.append("A", "a1", "a2", "a3", "a4", "a5")
    rc("replicate")
    rc("delete", "C", "--upto", "5")
    rc("drill", "disaster", "A", "--from", "1")
    rc("drill", "disaster", "B", "--from", "5")


def three_with_c(rc: Replctl) -> None:
    """A↔B replicated, and C, new and unconnected."""
    replicated(rc)
    rc("location", "add", "C")


def c_retiring(rc: Replctl) -> None:
    """C wrote c1, which reached A and B; C's connection is removed, so it can retire (RET1) and prune (RET3)."""
    two_way(rc)
    rc("location", "add", "C")
    rc("topology", "add", "C", "A")
    rc.append("C", "c1")
    rc("replicate")
    rc("topology", "remove", "C", "A")


def two_backups(rc: Replctl) -> None:
    """Two backups of A, the second after a4."""
    rc("location", "add", "A")
    rc.append("A", "a1", "a2")
    rc("backup", "create", "A")
    rc.append("A", "a3")
    rc("backup", "create", "A")


def backed_up_once(rc: Replctl) -> None:
    """A↔B replicated and A backed up; then a4 at A, in a segment no backup holds yet (BK1)."""
    two_way(rc)
    rc("replicate")
    rc("backup", "create", "A")
    rc.append("A", "a4")


def backed_up_then_copy_lost(rc: Replctl) -> None:
    """As `backed_up_once`, and then the backup store loses the copy of A's first segment: an earlier backup
    names it, yet the next one must copy it again (BK1), not reuse it."""
    backed_up_once(rc)
    first = min((rc.backups / "segments" / "A").glob("seg-*"))
    shutil.rmtree(first)


def chain_against_the_order(rc: Replctl) -> None:
    """Z→Y→X→W with z1, z2 at Z: in name order each pass comes before the one feeding it, so the run takes
    one round per connection (Z→Y in round 1, Y→X in round 2, X→W in round 3)."""
    for name in ("W", "X", "Y", "Z"):
        rc("location", "add", name)
    rc("topology", "add", "Z", "Y")
    rc("topology", "add", "Y", "X")
    rc("topology", "add", "X", "W")
    rc.append("Z", "z1", "z2")


def without(doc: Doc, *keys: str) -> Doc:
    """The document without the keys only a run can fill (ids) and the dry-run flag."""
    return {k: v for k, v in doc.items() if k not in {"dry_run", *keys}}


def passes(doc: Doc) -> dict[tuple[str, str], Doc]:
    """Replication: every pass the dry run decided, as the run reports that connection's first pass."""
    return {
        (p["source"], p["target"]): {
            **without(p),
            "action": RAN.get(p["action"], p["action"]),
        }
        for p in doc["passes"]
        if p["action"] != "depends"  # decided only once an earlier pass of the run has written
    }


def retries(doc: Doc) -> dict[str, Doc]:
    """DEL4: the pending deletions a replication retries after its passes, by location, as `delete` decides
    them; what only a dry run says (how it knows: `decided`, `satisfied_by`, `depends_on`) is left out."""
    planned_only = ("would_delete", "decided", "satisfied_by", "depends_on", "reason")
    return {d["location"]: without(d, *planned_only) for d in doc["deletions"]}


def first_passes(doc: Doc) -> dict[tuple[str, str], Doc]:
    """The run's first pass over each connection (a full run goes on round after round)."""
    first: dict[tuple[str, str], Doc] = {}
    for p in doc["passes"]:
        first.setdefault((p["source"], p["target"]), without(p))
    return first


def unplanned(planned: Doc, ran: Doc) -> list[Doc]:
    """The run's passes its dry run did not list: every pass the run makes is in the plan, decided in its
    round, or as `depends` in that round or an earlier one (which stands for the later rounds too), or is a
    decided wait the run reports again in a later round."""
    decided = {(p["source"], p["target"], p["round"]) for p in planned["passes"] if p["action"] != "depends"}
    waits = {
        (p["source"], p["target"]): without(p, "round")
        for p in planned["passes"]
        if p["action"] in ("wait", "blocked", "damaged")
    }
    depends = {(p["source"], p["target"]): p["round"] for p in planned["passes"] if p["action"] == "depends"}
    return [
        p
        for p in ran["passes"]
        if (p["source"], p["target"], p["round"]) not in decided
        and depends.get((p["source"], p["target"]), p["round"] + 1) > p["round"]
        and waits.get((p["source"], p["target"])) != without(p, "round")
    ]


def deletion(doc: Doc) -> Doc:
    """Deletion: the prefix cut, the DVV, what stays pending and who holds it (DEL1–DEL4), BK4's report."""
    return without(doc, "would_delete")


def recovery(doc: Doc) -> Doc:
    """Recovery: loss, resets, the sources of every round, refusals, accepted losses, clock floor, CVV."""
    return {
        "lost_from": doc["lost_from"],
        "progress_resets": doc["progress_resets"],
        "sources": [r["sources"] for r in doc["rounds"]],
        "refused": doc["refused"],
        "accepted": doc["accepted"],
        "floor": doc["clock"].get("floor"),
        "survivors_upto": doc.get("survivors_upto"),
        "cvv": doc["cvv"],
        "backup": doc.get("backup"),
        "discarded": doc["discarded"],
        "lost": doc["lost"],
    }


def topology(doc: Doc) -> Doc:
    """A recorded change: the changes, the connections as they end up, the warnings."""
    return without(doc, "operation", "prune")


def pruning(doc: Doc) -> Doc:
    """Retirement with clock pruning: the change, and per log how many segments are rewritten or untouched."""
    prune = doc["prune"]
    logs = [(x["location"], len(x["rewritten"]), x["untouched"]) for x in prune["logs"]]
    return {**topology(doc), "needed": prune["needed"], "recorded": prune["recorded"], "logs": logs}


def backups_made(doc: Doc) -> list[Doc]:
    """BK1: per backup, the location, seq, events, CVV, which segments are copied and which reused, the bytes;
    not its id or creation time, which only the run gives."""
    return [without(b, "id", "created_at") for b in doc["backups"]]


def backups_and_refusals(doc: Doc) -> Doc:
    """BK1 with a refusal (finding 6): the backups made, and each location refused with its error."""
    return {"backups": backups_made(doc), "refused": doc["refused"]}


def append(doc: Doc) -> Doc:
    """An append: how many events, which seqs, the CVV after (EM1/EM2)."""
    return without(doc)


@dataclass(frozen=True)
class Case:
    """One mutating command on one state; `code` is the run's exit code (a dry run exits 0)."""

    setup: Callable[[Replctl], None]
    args: tuple[str, ...]
    decisions: Callable[[Doc], object]  # compared with ==: the decisions of the dry run and of the run
    code: int = 0


CASES = {
    "replicate": Case(two_way, ("replicate",), passes),
    "replicate SRC DST": Case(replicated, ("replicate", "A", "B"), passes),
    "replicate SRC DST (a pending deletion completes)": Case(pending_at_a, ("replicate", "A", "B"), passes),
    "replicate (a pending deletion completes)": Case(pending_at_a, ("replicate",), passes),
    "replicate (a pass earlier in the order is fed, round 2)": Case(chain_z_y_x, ("replicate",), passes),
    "replicate (a chain fed through passes that depend)": Case(chain_a_b_c_d, ("replicate",), passes),
    "replicate (a chain against the order, rounds 1 to 3)": Case(
        chain_against_the_order, ("replicate",), passes
    ),
    "delete --upto (straddling cut)": Case(replicated, ("delete", "A", "--upto", "2"), deletion),
    "delete --upto (pending)": Case(replicated, ("delete", "A", "--upto", "4"), deletion, code=5),
    "delete --older-than": Case(replicated, ("delete", "A", "--older-than", "0s"), deletion, code=5),
    "delete --logical": Case(replicated, ("delete", "A", "--upto", "4", "--logical"), deletion),
    "recover location": Case(lost_suffix, ("recover", "location", "A"), recovery),
    "recover location (census: loss inside a segment)": Case(
        lost_mid_segment, ("recover", "location", "A"), recovery
    ),
    "recover location --lost-from (inside a segment)": Case(
        one_segment_replicated, ("recover", "location", "A", "--lost-from", "3"), recovery
    ),
    "recover location --lost-from (inside a segment, after a drill)": Case(
        lost_mid_segment, ("recover", "location", "A", "--lost-from", "3"), recovery
    ),
    "recover location (DR4 refuses)": Case(
        lost_what_b_deleted, ("recover", "location", "A"), recovery, code=5
    ),
    "recover location --accept-loss": Case(
        lost_what_b_deleted, ("recover", "location", "A", "--accept-loss"), recovery
    ),
    "recover location --accept-loss (DR4 source, then a DR3 neighbour)": Case(
        y_between_b_and_n_lost, ("recover", "location", "Y", "--accept-loss"), recovery
    ),
    "recover location --accept-loss (an eligible source damaged)": Case(
        a_lost_b_damaged, ("recover", "location", "A", "--accept-loss"), recovery, code=5
    ),
    "recover location (terminal, its filter once cleared: unfiltered, DR3)": Case(
        terminal_once_unfiltered_lost, ("recover", "location", "A"), recovery
    ),
    "recover location --from-backup": Case(
        backed_up_then_lost, ("recover", "location", "A", "--from-backup", "latest"), recovery
    ),
    "recover location --lost-from --accept-loss (intact own events discarded)": Case(
        two_way, ("recover", "location", "A", "--lost-from", "2", "--accept-loss"), recovery
    ),
    "recover location --from-backup --accept-loss (intact own events discarded)": Case(
        backed_up_once, ("recover", "location", "A", "--from-backup", "latest", "--accept-loss"), recovery
    ),
    "topology add --history complete": Case(
        three_with_c, ("topology", "add", "A", "C", "--history", "complete"), topology
    ),
    "topology add --history current": Case(
        three_with_c, ("topology", "add", "A", "C", "--history", "current"), topology
    ),
    "topology add --history none": Case(
        three_with_c, ("topology", "add", "A", "C", "--history", "none"), topology
    ),
    "topology remove": Case(replicated, ("topology", "remove", "A", "B"), topology),
    "topology filter": Case(replicated, ("topology", "filter", "A", "B", "--set", "key = 'a1'"), topology),
    "location retire": Case(c_retiring, ("location", "retire", "C"), topology),
    "location retire --prune-clock": Case(c_retiring, ("location", "retire", "C", "--prune-clock"), pruning),
    "log compact": Case(six_segments, ("log", "compact", "A"), without),
    "log compact --gc": Case(six_segments, ("log", "compact", "A", "--gc"), without),
    "log append --event": Case(two_way, ("log", "append", "A", "--event", '{"key": "x"}'), append),
    "log append --generate": Case(two_way, ("log", "append", "A", "--generate", "3"), append),
    "backup create (incremental)": Case(backed_up_once, ("backup", "create", "A"), backups_made),
    "backup create (an earlier copy lost: copied again)": Case(
        backed_up_then_copy_lost, ("backup", "create", "A"), backups_made
    ),
    "backup create (every location)": Case(two_way, ("backup", "create"), backups_made),
    "backup create (every location, one damaged)": Case(
        b_damaged, ("backup", "create"), backups_and_refusals, code=5
    ),
    "backup prune": Case(two_backups, ("backup", "prune", "A", "--keep-last", "1"), without),
    "drill disaster": Case(two_way, ("drill", "disaster", "A", "--from", "2"), without),
    "location add": Case(two_way, ("location", "add", "C"), topology),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_the_dry_run_decides_what_the_run_does(rc: Replctl, case: Case) -> None:
    case.setup(rc)
    before = rc.snapshot()
    planned = rc.json(*case.args, "--dry-run")
    assert planned["dry_run"] is True
    assert rc.snapshot() == before  # the dry run changed nothing
    ran = rc(*case.args, "--json", expect=case.code).doc
    assert ran["dry_run"] is False
    if case.decisions is passes:
        planned_passes, ran_passes = passes(planned), first_passes(ran)
        assert planned_passes  # a dry run that decides nothing proves nothing
        assert planned_passes == {
            key: _comparable(ran_passes.get(key), plan) for key, plan in planned_passes.items()
        }
        assert unplanned(planned, ran) == []
        # DEL4: the run retries every pending deletion after its passes; the dry run lists each retry.
        planned_retries, ran_retries = retries(planned), retries(ran)
        assert planned_retries.keys() == ran_retries.keys()
        decided = {d["location"] for d in planned["deletions"] if d["decided"]}
        assert {k: planned_retries[k] for k in decided} == {k: ran_retries[k] for k in decided}
    else:
        assert case.decisions(planned) == case.decisions(ran)


def _comparable(run: Doc | None, plan: Doc) -> Doc | None:
    """A run pass as its dry run can state it: a `would-run` pass's counts are unknown (null, finding 5), and
    so is its progress where an admission check may stop it; a progress the plan states must be the run's."""
    if run is None or plan["action"] != "ran":
        return run
    unknown = ("examined", "written", "skipped_causal", "skipped_filter")
    assert all(plan[k] is None for k in unknown)  # never a 0 the run then contradicts
    counts = (*unknown, "blocked_at", "reason", *(("progress",) if plan["progress"] is None else ()))
    return {**run, **{k: plan[k] for k in counts}}


@pytest.mark.parametrize("declared", [(), ("--lost-from", "3")], ids=["census", "--lost-from"])
def test_a_dry_run_keeps_the_survivors_of_a_segment_cut_inside(
    rc: Replctl, declared: tuple[str, ...]
) -> None:
    """DR1/DR2, finding 4: A's one segment a1..a4 is cut from seq 3 on; the dry run keeps a1, a2 (survivors up
    to 2) and resets B's progress over A to 2, as the run does: it said 0 and 0, a loss it would not make."""
    lost_mid_segment(rc)
    planned = rc.json("recover", "location", "A", *declared, "--dry-run")
    assert (planned["lost_from"], planned["survivors_upto"]) == (3, 2)
    assert planned["progress_resets"] == [
        {"source": "A", "target": "B", "from": 4, "to": 2},
        {"source": "B", "target": "A", "from": 4, "to": 0},
    ]
    ran = rc.json("recover", "location", "A", *declared)
    assert (ran["survivors_upto"], ran["progress_resets"]) == (2, planned["progress_resets"])
    assert rc.stored("A")[:2] == [("A", 1, "a1"), ("A", 2, "a2")]
    assert sorted(rc.stored("A")) == [("A", 1, "a1"), ("A", 2, "a2"), ("A", 3, "a3"), ("A", 4, "a4")]


def test_a_replicate_dry_run_gives_the_counts_it_cannot_know_as_unknown_not_zero(rc: Replctl) -> None:
    """REP1/REP2, finding 5: a pass that reads events is decided by the filters only when it runs, so the dry
    run's examined/written are null (text "?"), never the 0 a script would believe; the progress it reaches
    (A's log to its end, REP2) is known and is what the run then records."""
    replicated(rc)  # B holds a1..a3, so A→B is a pass that reads (a4), not a copy of whole segments
    [planned] = rc.json("replicate", "A", "B", "--dry-run")["passes"]
    assert planned == {
        "source": "A",
        "target": "B",
        "state": "active",
        "action": "would-run",
        "examined": None,
        "written": None,
        "skipped_causal": None,
        "skipped_filter": None,
        "blocked_at": None,
        "progress": 4,
        "reason": None,
        "round": 1,
    }
    text = rc("replicate", "A", "B", "--dry-run").stdout
    [row] = [line.split() for line in text.splitlines() if line.startswith("A→B")]
    assert row == ["A→B", "active", "would-run", "?", "?", "?/?", "4"]
    assert "?: known only by running the pass" in " ".join(text.split())
    [ran] = rc.json("replicate", "A", "B")["passes"]
    assert (ran["action"], ran["examined"], ran["written"], ran["progress"]) == ("ran", 1, 1, 4)


def test_a_dry_run_retries_a_pending_deletion_on_what_its_passes_reach(rc: Replctl) -> None:
    """DEL4 after `replicate A B --dry-run`: the pass reads A's log to its end, so B, which held the deletion
    back, is satisfied by it; the dry run says so and decides the retry as the run then does it."""
    pending_at_a(rc)
    planned = rc.json("replicate", "A", "B", "--dry-run")
    [retry] = planned["deletions"]
    assert retry["decided"] is True
    assert retry["satisfied_by"] == [{"target": "B", "pass": "A→B", "progress": 4}]
    assert (retry["pending"], retry["deleted_upto"], retry["blocked_by"]) == (False, 4, [])
    assert retry["would_delete"] == {"from": 4, "upto": 4}  # a1..a3 went when it was asked for
    ran = rc.json("replicate", "A", "B")
    assert [(d["location"], d["pending"], d["deleted_upto"]) for d in ran["deletions"]] == [("A", False, 4)]
    assert rc.json("log", "show", "A")["events"] == []


def test_a_dry_run_marks_a_retry_that_only_running_decides(rc: Replctl) -> None:
    """DEL4: C's deletion waits for B; in the planned round A→B writes to B first, so C→B `depends` and whether
    B then holds c2 is known only by running: the retry is listed with `decided: false`, never guessed."""
    for name in ("A", "B", "C"):
        rc("location", "add", name)
    rc("topology", "add", "A", "B")
    rc("topology", "add", "C", "B")
    rc.append("A", "a1")
    rc.append("C", "c1")
    rc("replicate")
    rc.append("C", "c2")
    rc.append("A", "a2")
    rc("delete", "C", "--upto", "2", expect=5)
    planned = rc.json("replicate", "--dry-run")
    assert [(p["source"], p["target"], p["action"]) for p in planned["passes"]] == [
        ("A", "B", "would-run"),
        ("C", "B", "depends"),
    ]
    [retry] = planned["deletions"]
    assert (retry["location"], retry["decided"], retry["depends_on"], retry["satisfied_by"]) == (
        "C",
        False,
        ["B"],
        [],
    )
    assert (retry["pending"], retry["deleted_upto"], retry["blocked_by"]) == (
        True,
        1,
        [{"target": "B", "first_blocked_seq": 2}],
    )
    ran = rc.json("replicate")
    assert [(d["location"], d["pending"], d["deleted_upto"]) for d in ran["deletions"]] == [("C", False, 2)]


def test_a_backup_dry_run_names_the_segments_it_would_copy_and_copies_none(rc: Replctl) -> None:
    """BK1: A's backup reuses the two segments of its earlier backup and copies a4's; the dry run says so and
    the backup store is as it was."""
    backed_up_once(rc)
    before = rc.json("backup", "list")["backups"]
    [planned] = rc.json("backup", "create", "A", "--dry-run")["backups"]
    assert (planned["id"], planned["created_at"]) == (None, None)
    assert (planned["seq"], planned["events"], planned["segments"], planned["segments_reused"]) == (
        4,
        4,
        3,
        2,
    )
    held = {s["path"] for s in rc.json("backup", "show", before[0]["id"])["backup"]["segments"]}
    [copied] = planned["copied"]
    assert copied not in held and copied.startswith("A/")
    assert 0 < planned["bytes_copied"] < planned["bytes"]
    assert rc.json("backup", "list")["backups"] == before
