"""The whole CLI against an independent reading of rules.md (issue 13 item 3, issue 20's last bullet).

A hypothesis state machine draws operations (locations with roles, connections in every history mode, with and
without a filter, filter changes, removals and reconnects, appends, replication of all or one pair, deletions
including smaller repeated requests, disasters and recoveries with and without --accept-loss, retirement with
clock pruning and new locations after it, application groups and fail-over (RFC1, RFC2's identical filters and
admission check, FO1), backups and restores from them (BK1, BK2)) and runs each on the real CLI (real SQLite
catalog, real Parquet store, the shared local Spark session) and on `reference_model.ReferenceModel`. After
every step it compares the exit code and error code, every log's events (seq, origin, origin_time, key, vt), each
location's metadata, every connection's state, filter and progress, and the pending deletions; at the end the §9
invariants (`log verify`).

A failure prints the commands that led to it, shrunk by hypothesis: a runbook anyone can paste into a shell.

Triage aid: `REPLCTL_DIFF_AVOID=prune,reconnect,smaller-delete,pair-retry,loss-clock` keeps the machine away from
operations whose disagreement is already known and being fixed (see the report of this test's issue), so that
it can look for other ones. By default it avoids what `KNOWN` names: a disagreement found and not yet fixed,
kept meanwhile as a named xfail(strict=True) scenario (none at present; the last one, restoring from another
location's backup, is fixed and kept in tests/scenarios/test_backup_stories.py).
"""

from __future__ import annotations

import copy
import json
import os
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from clitool import Replctl
from hypothesis import HealthCheck, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    precondition,
    rule,
    run_state_machine_as_test,
)

from stateful.reached import REACHED
from stateful.reference_model import (
    ACTIVE,
    DONE,
    HUB,
    READ_ONLY,
    READ_WRITE,
    RETIRED,
    Event,
    Outcome,
    ReferenceModel,
)

pytestmark = pytest.mark.spark

NAMES = "ABCDEFG"
MAX_LIVE = 4  # few locations keep Spark cheap
KEYS = ("k1", "k2", "k3")
FILTERS = ("key = 'k1'", "key = 'k2'")
HISTORIES = ("complete", "current", "none")
GROUPS = ("G1", "G2")  # group names never collide with location ids (one letter)
ROLES = (READ_WRITE, READ_WRITE, READ_WRITE, HUB, READ_ONLY)  # drawn uniformly: mostly read-write
# Known disagreements not yet fixed, each kept as a named xfail(strict=True) scenario: avoided unless
# REPLCTL_DIFF_AVOID is set (to "" to draw everything).
KNOWN = ""
AVOID = frozenset(x for x in os.environ.get("REPLCTL_DIFF_AVOID", KNOWN).split(",") if x)


class Disagreement(AssertionError):
    """The CLI and the reference model of rules.md disagree; the message holds the runbook."""


class CliVsModel(RuleBasedStateMachine):
    """One example: a fresh catalog and store, the model beside it, the commands run so far."""

    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="replctl-diff-"))
        self.rc = Replctl(self.root)
        self.model = ReferenceModel()
        self.runbook: list[str] = []
        REACHED.examples += 1
        self.rc("init")

    # ---- running one command on both sides ---------------------------------------------------------

    def run(self, operation: str, expected: Outcome, *args: str) -> dict[str, Any]:
        """Run `replctl ARGS --json`, record it in the runbook, compare its outcome with the model's; the JSON."""
        self.runbook.append(shlex.join(["replctl", *args]))
        REACHED.steps += 1
        REACHED.operations[operation] += 1
        out = self.rc(*args, "--json", expect=None)
        REACHED.outcomes[str(out.code)] += 1
        try:
            doc: dict[str, Any] = json.loads(out.stdout)
        except json.JSONDecodeError:
            doc = {}
        error = (doc.get("error") or {}).get("code")
        if out.code != expected.code or (expected.error is not None and error != expected.error):
            self.disagree(
                [
                    f"`{self.runbook[-1]}` exited {out.code} ({error}); the rules say exit {expected.code}"
                    f" ({expected.error})",
                    f"stdout: {out.stdout.strip()[:600]}",
                    f"stderr: {out.stderr.strip()[-600:]}",
                ]
            )
        return doc

    def disagree(self, problems: list[str]) -> None:
        """Fail with every difference and the runbook that reproduces it."""
        text = "\n".join(
            [
                "the CLI and rules.md (reference model) disagree:",
                *(f"  - {p}" for p in problems),
                "runbook (from an empty folder):",
                *(f"  {cmd}" for cmd in ["replctl init", *self.runbook]),
            ]
        )
        note(text)
        raise Disagreement(text)

    def compare(self) -> None:
        """Every log, every location's metadata, every connection and the pending deletions, against the model."""
        status = self.rc.json("status")
        problems: list[str] = []
        model = self.model
        locs = {x["name"]: x for x in status["locations"]}
        if set(locs) != set(model.locations):
            problems.append(f"locations {sorted(locs)} != {sorted(model.locations)}")
        for name, want in sorted(model.locations.items()):
            got = locs.get(name)
            if got is None:
                continue
            expected = {
                "role": want.role,
                "state": want.state,
                "seq": want.seq,
                "cvv": want.cvv,
                "dvv": want.dvv,
                "deleted_upto": want.deleted_upto,
                "logical_deleted_upto": want.logical_deleted_upto,
            }
            actual = {k: _nonzero(got[k]) if k in ("cvv", "dvv") else got[k] for k in expected}
            for key, value in expected.items():
                if actual[key] != value:
                    problems.append(f"{name}.{key} is {actual[key]}; rules: {value}")
            stored = self.rc.json("log", "show", name)["events"]
            rows = [(e["seq"], e["origin"], e["origin_time"], e["key"], _nonzero(e["vt"])) for e in stored]
            model_rows = [e.row() for e in want.events]
            if rows != model_rows:
                problems.append(f"log {name} holds {_rows(rows)}; rules: {_rows(model_rows)}")
        conns = {(c["source"], c["target"]): c for c in status["connections"]}
        for (s, t), want_conn in sorted(model.connections.items()):
            got_conn = conns.get((s, t))
            if got_conn is None:
                problems.append(f"connection {s}→{t} missing")
                continue
            expected_conn: dict[str, Any] = {
                "state": want_conn.state,
                "filter": want_conn.filter,
                "ever_filtered": want_conn.ever_filtered,
            }
            if want_conn.current:
                expected_conn["progress"] = want_conn.progress
            for key, value in expected_conn.items():
                if got_conn[key] != value:
                    problems.append(f"{s}→{t}.{key} is {got_conn[key]!r}; rules: {value!r}")
        pending = {p["location"]: p["requested_upto"] for p in status["pending_deletions"]}
        want_pending = {n: x.pending_upto for n, x in model.locations.items() if x.pending_upto is not None}
        if pending != want_pending:
            problems.append(f"pending deletions {pending}; rules: {want_pending}")
        if problems:
            self.disagree(problems)

    # ---- helpers for drawing -------------------------------------------------------------------------

    def unused_name(self) -> str | None:
        return next((n for n in NAMES if n not in self.model.locations), None)

    def current_pairs(self) -> list[tuple[str, str]]:
        return self.model.current()

    # ---- operations ---------------------------------------------------------------------------------

    @initialize(
        shape=st.sampled_from(("pair", "group", "redundant")),
        filter_expr=st.sampled_from((None, *FILTERS)),
        backed_up=st.booleans(),
    )
    def two_connected_locations(self, shape: str, filter_expr: str | None, backed_up: bool) -> None:
        """A↔B: most interesting operations need one connection, so every example starts with it.

        Two examples in three start from a group instead, so that fail-over and RFC2's admission check are
        reached within a few steps: A↔B declared as group G1, and C↔A (filtered or not) from outside it; in the
        `redundant` shape C↔B too, with the identical filter (RFC1, RFC2). Half take a backup of every location
        first, so that a restore (BK2) is drawable from the first step.
        """
        grouped = shape != "pair"
        for name in "ABC" if grouped else "AB":
            self.run("location add", self.model.add_location(name, READ_WRITE), "location", "add", name)
        expected = self.model.connect("A", "B", both=True, history="complete", filter_expr=None)
        self.run("topology add --both", expected, "topology", "add", "A", "B", "--both")
        if grouped:
            self.run(
                "topology group",
                self.model.declare_group("G1", ["A", "B"]),
                "topology",
                "group",
                "G1",
                "A",
                "B",
            )
            expected = self.model.connect("C", "A", both=True, history="complete", filter_expr=filter_expr)
            args = [
                "topology",
                "add",
                "C",
                "A",
                "--both",
                *(["--filter", filter_expr] if filter_expr else []),
            ]
            self.run("topology add --both" + (" --filter" if filter_expr else ""), expected, *args)
        if shape == "redundant":
            expected = self.model.connect("C", "B", both=True, history="complete", filter_expr=filter_expr)
            args = [
                "topology",
                "add",
                "C",
                "B",
                "--both",
                *(["--filter", filter_expr] if filter_expr else []),
            ]
            self.run("topology add --both (redundant)", expected, *args)
            # C holds an event after A's a1 that B lacks: `replicate C B` meets RFC2's admission check.
            self.run(
                "log append", self.model.append("A", ["k2"]), "log", "append", "A", "--event", '{"key": "k2"}'
            )
            self.run("replicate SRC DST", self.model.replicate_pair("A", "C"), "replicate", "A", "C")
            self.run(
                "log append", self.model.append("C", ["k2"]), "log", "append", "C", "--event", '{"key": "k2"}'
            )
        if backed_up:
            self._backup([])
        self.compare()

    @precondition(lambda self: len(self.model.live()) < MAX_LIVE and self.unused_name() is not None)
    @rule(role=st.sampled_from(ROLES))
    def add_location(self, role: str) -> None:
        name = self.unused_name()
        assert name is not None
        label = "location add" + (" after a pruning" if self.model.pruned else "")
        expected = self.model.add_location(name, role)
        self.run(label, expected, "location", "add", name, "--role", role)
        self.compare()

    @precondition(lambda self: any(x.state == RETIRED for x in self.model.locations.values()))
    @rule(data=st.data())
    def add_a_retired_id_again(self, data: st.DataObject) -> None:
        """M1: a retired id is never reused."""
        retired = sorted(n for n, x in self.model.locations.items() if x.state == RETIRED)
        name = data.draw(st.sampled_from(retired), label="retired")
        expected = self.model.add_location(name, READ_WRITE)
        self.run("location add (retired id)", expected, "location", "add", name)
        self.compare()

    @rule(
        data=st.data(),
        both=st.booleans(),
        history=st.sampled_from(HISTORIES),
        filter_expr=st.sampled_from((None, None, *FILTERS)),
    )
    def connect(self, data: st.DataObject, both: bool, history: str, filter_expr: str | None) -> None:
        names = sorted(self.model.locations)
        src = data.draw(st.sampled_from(names), label="source")
        dst = data.draw(st.sampled_from([n for n in names if n != src]), label="target")
        pairs = [(src, dst), (dst, src)] if both else [(src, dst)]
        reconnect = any(p in self.model.connections and not self.model.connections[p].current for p in pairs)
        if reconnect and "reconnect" in AVOID:
            return
        args = ["topology", "add", src, dst]
        if both:
            args.append("--both")
        if history != "complete" or data.draw(st.booleans(), label="explicit --history"):
            args += ["--history", history]
        if filter_expr is not None:
            args += ["--filter", filter_expr]
        label = "topology add" + (" --both" if both else "") + f" --history {history}"
        label += (" --filter" if filter_expr else "") + (" (reconnect)" if reconnect else "")
        expected = self.model.connect(src, dst, both=both, history=history, filter_expr=filter_expr)
        self.run(label, expected, *args)
        self.compare()

    @precondition(lambda self: bool(self.model.current()))
    @rule(data=st.data(), filter_expr=st.sampled_from((None, *FILTERS)), by_group=st.booleans())
    def change_filter(self, data: st.DataObject, filter_expr: str | None, by_group: bool) -> None:
        """F2/RFC2: one connection, or (cli.md) every connection between a declared group and the other side."""
        src, dst = data.draw(st.sampled_from(self.current_pairs()), label="connection")
        group = " (group side)" if by_group and self.model.node(src) != self.model.node(dst) else ""
        if group:
            src, dst = (
                g.removeprefix("group ") if g.startswith("group ") else n
                for n, g in ((src, self.model.node(src)), (dst, self.model.node(dst)))
            )
        expected = self.model.set_filter(src, dst, filter_expr)
        if filter_expr is None:
            self.run("topology filter --clear" + group, expected, "topology", "filter", src, dst, "--clear")
        else:
            self.run(
                "topology filter --set" + group,
                expected,
                "topology",
                "filter",
                src,
                dst,
                "--set",
                filter_expr,
            )
        self.compare()

    @precondition(lambda self: len(self.model.live()) >= 2)
    @rule(data=st.data(), name=st.sampled_from(GROUPS))
    def declare_group(self, data: st.DataObject, name: str) -> None:
        """RFC1 (F2 checks the declaration); a member of another group is refused (bad-group)."""
        live = self.model.live()
        members = data.draw(
            st.lists(st.sampled_from(live), min_size=2, max_size=3, unique=True), label="members"
        )
        label = "topology group" + (" (change)" if name in self.model.groups else "")
        self.run(label, self.model.declare_group(name, members), "topology", "group", name, *members)
        self.compare()

    @precondition(lambda self: bool(self.model.groups))
    @rule(data=st.data())
    def remove_group(self, data: st.DataObject) -> None:
        """F2: a group is removed only when no redundant filtered connection still needs it."""
        name = data.draw(st.sampled_from(sorted(self.model.groups)), label="group")
        self.run(
            "topology group --remove", self.model.remove_group(name), "topology", "group", name, "--remove"
        )
        self.compare()

    @precondition(lambda self: bool(self.model.groups))
    @rule(data=st.data())
    def failover(self, data: st.DataObject) -> None:
        """FO1: mostly a location linked to a group member moves to another member; sometimes a refused one."""
        live = self.model.live()
        linked = [
            (d, old, new)
            for members in self.model.groups.values()
            for old in sorted(members)
            for new in sorted(members)
            for d in live
            if old != new
            and d not in members
            and old in live
            and new in live
            and any(set(p) == {d, old} for p in self.model.current())
        ]
        if linked and data.draw(st.integers(0, 3), label="linked") > 0:  # mostly one FO1 allows
            name, old, new = data.draw(st.sampled_from(linked), label="fail-over")
            label = "topology failover"
        else:
            name, old, new = (
                data.draw(st.permutations(live), label="names")[:3] if len(live) >= 3 else (*live, live[0])
            )
            label = "topology failover (refused)"
        expected = self.model.failover(name, old, new)
        self.run(
            label if expected.code == 0 or label.endswith("(refused)") else label + " (refused)",
            expected,
            "topology",
            "failover",
            name,
            "--from",
            old,
            "--to",
            new,
        )
        self.compare()

    @precondition(lambda self: bool(self.model.current()))
    @rule(data=st.data(), both=st.booleans())
    def remove(self, data: st.DataObject, both: bool) -> None:
        src, dst = data.draw(st.sampled_from(self.current_pairs()), label="connection")
        expected = self.model.remove(src, dst, both=both)
        args = ["topology", "remove", src, dst, *(["--both"] if both else [])]
        self.run("topology remove" + (" --both" if both else ""), expected, *args)
        self.compare()

    @rule(data=st.data(), keys=st.lists(st.sampled_from(KEYS), min_size=1, max_size=2))
    def append(self, data: st.DataObject, keys: list[str]) -> None:
        name = data.draw(st.sampled_from(sorted(self.model.locations)), label="location")
        args = ["log", "append", name]
        for key in keys:
            args += ["--event", json.dumps({"key": key})]
        self.run("log append", self.model.append(name, keys), *args)
        self.compare()

    @rule()
    def replicate_all(self) -> None:
        blocks = self.model.blocks
        expected = self.model.replicate_all()
        self.run("replicate" + _blocked(self.model, blocks), expected, "replicate")
        self.compare()

    @precondition(lambda self: bool(self.model.current()))
    @rule(data=st.data())
    def replicate_pair(self, data: st.DataObject) -> None:
        into_group = [p for p in self.current_pairs() if self.model.admission(*p)]
        if bool(into_group) and data.draw(
            st.booleans(), label="into a group from outside"
        ):  # reach RFC2's check
            src, dst = data.draw(st.sampled_from(into_group), label="connection")
        else:
            src, dst = data.draw(st.sampled_from(self.current_pairs()), label="connection")
        others_pending = any(x.pending_upto is not None for n, x in self.model.locations.items() if n != src)
        if others_pending and "pair-retry" in AVOID:
            return
        blocks = self.model.blocks
        expected = self.model.replicate_pair(src, dst)
        self.run("replicate SRC DST" + _blocked(self.model, blocks), expected, "replicate", src, dst)
        self.compare()

    @precondition(lambda self: any(x.seq > 0 and x.state == ACTIVE for x in self.model.locations.values()))
    @rule(data=st.data(), logical=st.booleans())
    def delete(self, data: st.DataObject, logical: bool) -> None:
        names = sorted(n for n, x in self.model.locations.items() if x.seq > 0 and x.state == ACTIVE)
        name = data.draw(st.sampled_from(names), label="location")
        loc = self.model.locations[name]
        # N stays within the assigned seqs: whether a pending N above X.seq later reaches events appended
        # after the request is not decided by DEL1/DEL4, and the model must not guess.
        upto = data.draw(st.integers(1, loc.seq), label="upto")
        smaller = loc.pending_upto is not None and upto < loc.pending_upto and not logical
        if smaller and "smaller-delete" in AVOID:
            return
        label = "delete --logical" if logical else ("delete (smaller than pending)" if smaller else "delete")
        if loc.pending_upto is not None and not smaller and not logical:
            label = "delete (pending before)"
        expected = self.model.delete(name, upto, logical=logical)
        self.run(label, expected, "delete", name, "--upto", str(upto), *(["--logical"] if logical else []))
        self.compare()

    @precondition(lambda self: any(x.events and x.state == ACTIVE for x in self.model.locations.values()))
    @rule(data=st.data(), accept_loss=st.booleans())
    def disaster_and_recovery(self, data: st.DataObject, accept_loss: bool) -> None:
        """DR0–DR5: a drill destroys a stored suffix, then `recover location` (with or without --accept-loss)."""
        names = sorted(n for n, x in self.model.locations.items() if x.events and x.state == ACTIVE)
        name = data.draw(st.sampled_from(names), label="location")
        loc = self.model.locations[name]
        seqs = [e.seq for e in loc.events]
        from_seq = data.draw(st.integers(seqs[0], seqs[-1]), label="from")
        if "loss-clock" in AVOID and _floor_matters(self.model, name, from_seq, accept_loss):
            return
        before: list[Event] = list(loc.events)
        pending = " (pending deletion)" if loc.pending_upto is not None else ""
        self.run("drill disaster" + pending, self.model.drill(name, from_seq), *_drill(name, from_seq))
        expected = self.model.recover(name, stored_before=before, accept_loss=accept_loss)
        args = ["recover", "location", name, *(["--accept-loss"] if accept_loss else [])]
        self.run("recover location" + (" --accept-loss" if accept_loss else ""), expected, *args)
        if expected == Outcome(3, "BK3"):
            # BK3 refused to lose what the newest backup holds: follow the hint, restoring it (DR0 may then ask
            # consent for survivors past the backup that only A holds: given, as an operator would).
            backup = self.model.latest_backup(name)
            assert backup is not None
            restored = self.model.restore(name, backup.id, accept_loss=True)
            self.run(
                "recover --from-backup (BK3's hint)",
                restored,
                "recover",
                "location",
                name,
                "--from-backup",
                backup.id,
                "--accept-loss",
            )
        self.compare()

    @precondition(lambda self: len(self.model.live()) > 2)
    @rule(data=st.data(), prune=st.booleans(), detach=st.booleans())
    def retire(self, data: st.DataObject, prune: bool, detach: bool) -> None:
        """RET1–RET3: remove the location's connections (or not: RET1 refuses), then retire, maybe pruning."""
        if prune and "prune" in AVOID:
            return
        name = data.draw(st.sampled_from(self.model.live()), label="location")
        if detach:
            for src, dst in [p for p in self.current_pairs() if name in p]:
                if self.model.connections[(src, dst)].current:
                    expected = self.model.remove(src, dst, both=False)
                    self.run("topology remove (before retiring)", expected, "topology", "remove", src, dst)
        expected = self.model.retire(name, prune=prune)
        self.run(
            "location retire" + (" --prune-clock" if prune else ""),
            expected,
            "location",
            "retire",
            name,
            *(["--prune-clock"] if prune else []),
        )
        self.compare()

    @rule(data=st.data(), every=st.booleans())
    def backup_create(self, data: st.DataObject, every: bool) -> None:
        """BK1: one backup per location (default every active one); it changes nothing (compare says so)."""
        names = [] if every else [data.draw(st.sampled_from(self.model.live()), label="location")]
        self._backup(names)
        self.compare()

    def _backup(self, names: list[str]) -> None:
        wanted = self.model.backup_targets(names)
        doc = self.run(
            "backup create" + ("" if names else " (every location)"), DONE, "backup", "create", *names
        )
        made = [(b.get("location"), b.get("id")) for b in doc.get("backups", [])]
        if [loc for loc, _ in made] != wanted:
            self.disagree([f"`backup create` backed up {[loc for loc, _ in made]}; rules (BK1): {wanted}"])
        for name, backup_id in made:
            self.model.backup(str(name), str(backup_id))

    @precondition(lambda self: any(self.model.latest_backup(n) for n in self.model.live()))
    @rule(data=st.data(), accept_loss=st.booleans(), latest=st.booleans(), foreign=st.booleans())
    def restore_from_backup(
        self, data: st.DataObject, accept_loss: bool, latest: bool, foreign: bool
    ) -> None:
        """BK2: A's log becomes the backup's, then DR1–DR5; another location's backup is refused."""
        live = self.model.live()
        name = data.draw(st.sampled_from([n for n in live if self.model.latest_backup(n)]), label="location")
        others = [b for b in self.model.backups if b.location != name]
        if foreign and others and "foreign-backup" not in AVOID:
            backup = data.draw(st.sampled_from(others), label="backup of another location")
            ref, label = backup.id, "recover --from-backup (another location's)"
        else:
            mine = [b for b in self.model.backups if b.location == name]
            backup = mine[-1] if latest else data.draw(st.sampled_from(mine), label="backup")
            ref, label = (
                ("latest" if latest else backup.id),
                "recover --from-backup" + (" --accept-loss" if accept_loss else ""),
            )
        expected = self.model.restore(name, backup.id, accept_loss=accept_loss)
        args = [
            "recover",
            "location",
            name,
            "--from-backup",
            ref,
            *(["--accept-loss"] if accept_loss else []),
        ]
        self.run(label, expected, *args)
        self.compare()

    def teardown(self) -> None:
        try:
            if self.runbook:
                problems = [f"model: {p}" for p in self.model.self_check()]
                verified = self.rc("log", "verify", "--json", expect=None)
                if verified.code != 0:
                    problems.append(f"`replctl log verify` exited {verified.code}: {verified.stdout[:800]}")
                if problems:
                    self.runbook.append("replctl log verify")
                    self.disagree(problems)
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def _floor_matters(model: ReferenceModel, name: str, from_seq: int, accept_loss: bool) -> bool:
    """Whether DR1's floor at the seq recorded before the loss changes the outcome of this disaster."""
    ends = []
    for recorded in (True, False):
        trial = copy.deepcopy(model)
        before = list(trial.locations[name].events)
        trial.drill(name, from_seq)
        trial.recover(name, stored_before=before, accept_loss=accept_loss, recorded_floor=recorded)
        ends.append(trial.locations[name].seq)
    return ends[0] != ends[1]


def _blocked(model: ReferenceModel, blocks_before: int) -> str:
    """A label suffix when RFC2's admission check held a pass back (REP1 (3)), so the statistics show it."""
    return " (RFC2 admission block)" if model.blocks > blocks_before else ""


def _drill(name: str, from_seq: int) -> list[str]:
    return ["drill", "disaster", name, "--from", str(from_seq)]


def _nonzero(vector: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in vector.items() if v}


def _rows(rows: list[tuple[Any, ...]]) -> str:
    return "[" + ", ".join(f"{s}:{o}{t}/{k}{vt}" for s, o, t, k, vt in rows) + "]"


COMMON = settings(
    database=None,  # no example database in the repository
    deadline=None,
    suppress_health_check=list(HealthCheck),
    print_blob=False,
)


# A failing example is shrunk for up to five more minutes (hypothesis' own limit) before it is printed.
@pytest.mark.timeout(900)
def test_the_cli_decides_every_drawn_operation_as_the_rules_say(spark: Any) -> None:
    """The default pass: a fixed, bounded set of examples (derandomised, so CI is reproducible)."""
    run_state_machine_as_test(
        CliVsModel,
        settings=settings(COMMON, max_examples=8, stateful_step_count=10, derandomize=True),
    )


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_the_cli_decides_every_drawn_operation_as_the_rules_say_many_examples(spark: Any) -> None:
    """The slow pass: more and longer examples; the statistics are printed at the end of the run.

    The default count fits CI's time budget beside the other slow tests; a longer hunt sets
    REPLCTL_DIFF_EXAMPLES.
    """
    run_state_machine_as_test(
        CliVsModel,
        settings=settings(
            COMMON, max_examples=int(os.environ.get("REPLCTL_DIFF_EXAMPLES", "30")), stateful_step_count=25
        ),
    )
