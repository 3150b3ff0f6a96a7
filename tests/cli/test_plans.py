"""Reviewed plans through the real CLI: `--plan-out FILE` writes the plan and changes nothing; `replctl apply
FILE` executes exactly that plan, or refuses it as stale (exit 3) once the catalog changed, and refuses a file
that is not a plan (exit 2)."""

from __future__ import annotations

import hashlib
import json
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from clitool import Replctl

from replctl.adapters.catalog.engine import parse_url, safe_url
from replctl.adapters.catalog.repository import Catalog
from replctl.core.model import Location
from replctl.services import plans


@pytest.fixture
def rc(tmp_path: Path) -> Replctl:
    """`replctl` on a new catalog with read-write locations A and B and no connection."""
    tool = Replctl(tmp_path)
    tool("init")
    tool("location", "add", "A")
    tool("location", "add", "B")
    return tool


def catalog_version(rc: Replctl) -> int:
    with Catalog(rc.db_url) as catalog, catalog.transaction(readonly=True) as tx:
        return tx.catalog_version()


def state(rc: Replctl) -> dict[str, Any]:
    """Everything a plan-out or a refused apply must leave as it was: status, history, journal, version."""
    return {**rc.snapshot(), "ops": rc.json("ops", "list")["operations"], "version": catalog_version(rc)}


def comparable(rc: Replctl) -> dict[str, Any]:
    """The state two catalogs reach by the same commands: without ids, times and who ran them."""
    changes = [
        {k: v for k, v in c.items() if k not in ("id", "at", "actor", "operation")}
        for c in rc.json("topology", "history")["changes"]
    ]
    return {"status": rc.json("status"), "history": changes, "version": catalog_version(rc)}


def refused_applies(
    rc: Replctl, before: dict[str, Any], path: Path, command: str = "apply"
) -> list[dict[str, Any]]:
    """The errors of the `apply` refusals journalled since `before`, newest first, after checking that nothing
    else changed: a stale-plan refusal writes only its journal row (issue 18), which moves no version. Such a
    refusal is journalled as `apply` before the plan's command runs, as that `command` once it does."""
    after = state(rc)
    ops, old = after.pop("ops"), before["ops"]
    assert after == {k: v for k, v in before.items() if k != "ops"}
    new = ops[: len(ops) - len(old)]
    assert ops[len(new) :] == old
    for op in new:
        assert (op["command"], op["outcome"], op["args"]["plan_file"]) == (command, "refused", str(path))
    return [op["error"] for op in new]


def test_plan_out_writes_the_plan_and_changes_nothing(rc: Replctl, tmp_path: Path) -> None:
    before = state(rc)
    path = tmp_path / "plan.json"
    out = rc("topology", "add", "A", "B", "--both", "--plan-out", str(path), "--reason", "CHG-7")
    assert out.stdout.splitlines()[-1] == (
        f"plan written to {path} (catalog version 2); review it, then run: replctl apply {path}"
    )
    assert "would record: connection-added A→B" in out.stdout
    assert state(rc) == before
    doc = json.loads(path.read_text())
    assert doc["format"] == "replctl-plan/1"
    assert doc["command"] == ["topology", "add", "A", "B", "--both", "--reason", "CHG-7"]
    assert doc["catalog"] == {"url": rc.db_url, "version": 2}
    assert doc["plan"] == rc.json("topology", "add", "A", "B", "--both", "--dry-run")
    assert doc["inputs"] == []
    assert datetime.fromisoformat(doc["created_at"]).tzinfo is not None
    assert not list(tmp_path.glob(".plan.json.*"))  # the temporary file of the atomic write is gone


def test_plan_out_stands_anywhere_implies_dry_run_and_prints_one_json_document(
    rc: Replctl, tmp_path: Path
) -> None:
    path = tmp_path / "p.json"
    before = state(rc)
    doc = rc.json("--plan-out", str(path), "location", "add", "C", "--role", "hub", "--dry-run")
    assert doc == {
        "ok": True,
        "plan_out": str(path),
        "catalog_version": 2,
        "plan": json.loads(path.read_text())["plan"],
    }
    assert doc["plan"]["changes"] == [{"id": None, "kind": "location-added", "location": "C", "role": "hub"}]
    # --dry-run is implied, so it is not recorded: applying runs the command for real.
    assert json.loads(path.read_text())["command"] == ["location", "add", "C", "--role", "hub"]
    assert state(rc) == before


def test_apply_executes_the_plan_as_running_the_command_would(rc: Replctl, tmp_path: Path) -> None:
    direct = Replctl(tmp_path / "direct")
    direct("init")
    direct("location", "add", "A")
    direct("location", "add", "B")
    path = tmp_path / "plan.json"
    command = ("topology", "add", "A", "B", "--both", "--filter", "key = 'x'", "--history", "none")
    rc(*command, "--plan-out", str(path), "--reason", "CHG-7")

    applied = rc.json("apply", str(path))
    expected = direct.json(*command, "--reason", "CHG-7")
    assert {**applied, "operation": None} == {**expected, "operation": None}
    assert comparable(rc) == comparable(direct)
    op = rc.json("ops", "show", applied["operation"])["operation"]
    assert op["reason"] == "CHG-7"
    assert op["args"]["plan_file"] == str(path.resolve())
    assert op["args"]["plan_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert op["args"]["plan_catalog_version"] == 2
    text = rc("ops", "show", applied["operation"]).stdout
    assert f"applied from the plan {path.resolve()}" in text


def test_apply_in_text_mode_prints_the_command_s_output_and_a_confirmation(
    rc: Replctl, tmp_path: Path
) -> None:
    path = tmp_path / "plan.json"
    rc("location", "add", "C", "--plan-out", str(path))
    out = rc("apply", str(path), "--reason", "approved in CHG-9")
    assert out.stdout.splitlines() == [
        "recorded: location-added C (read-write)",
        f"applied the plan in {path}",
    ]
    # The reason given to apply replaces the plan's (none here).
    assert rc.json("ops", "list")["operations"][0]["reason"] == "approved in CHG-9"


def test_a_stale_plan_is_refused_with_exit_3_and_changes_nothing(rc: Replctl, tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    rc("topology", "add", "A", "B", "--plan-out", str(path))
    rc("location", "add", "C")
    before = state(rc)
    out = rc("apply", str(path), expect=3)
    assert out.stderr.splitlines() == [
        "the catalog changed since the plan was made (version 2 → 3); make the plan again",
        f"hint: replctl topology add A B --plan-out {path}",
    ]
    doc = rc.json("apply", str(path), expect=3)
    assert doc["error"]["code"] == "stale-plan"
    stale = {
        "code": "stale-plan",
        "message": "the catalog changed since the plan was made (version 2 → 3); make the plan again",
        "hint": f"replctl topology add A B --plan-out {path}",
        "details": {"plan_version": 2, "catalog_version": 3},
    }
    assert refused_applies(rc, before, path) == [stale, stale]


def test_a_stale_plan_refused_before_its_command_began_shows_in_ops_list_and_ops_show(
    rc: Replctl, tmp_path: Path
) -> None:
    # Issue 18: the refusal of apply's own checks is journalled as an `apply` operation, outcome refused.
    path = tmp_path / "plan.json"
    rc("topology", "add", "A", "B", "--plan-out", str(path), "--reason", "CHG-7")
    rc("location", "add", "C")
    rc("apply", str(path), expect=3)
    [op] = [o for o in rc.json("ops", "list")["operations"] if o["command"] == "apply"]
    assert (op["outcome"], op["reason"], op["args"]) == (
        "refused",
        "CHG-7",
        {
            "command": ["topology", "add", "A", "B", "--reason", "CHG-7"],
            "plan_file": str(path),
            "plan_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "plan_catalog_version": 2,
        },
    )
    listed = rc("ops", "list").stdout
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in listed.splitlines()]
    assert [op["id"][:8], "apply", "refused", "CHG-7"] in [r[:1] + r[2:] for r in rows], listed
    shown = rc("ops", "show", op["id"]).stdout
    assert "the catalog changed since the plan was made (version 2 → 3); make the plan again" in shown


def test_applying_a_plan_twice_refuses_the_second_as_stale(rc: Replctl, tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    rc("location", "add", "C", "--plan-out", str(path))
    rc("apply", str(path))
    before = state(rc)
    out = rc("apply", str(path), expect=3)
    assert out.stderr.splitlines()[0] == (
        "the catalog changed since the plan was made (version 2 → 3); make the plan again"
    )
    assert [e["code"] for e in refused_applies(rc, before, path)] == ["stale-plan"]


def test_a_change_after_apply_s_own_checks_is_caught_under_the_operation_s_leases(
    rc: Replctl, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another operator commits between apply's checks and the operation taking its leases.
    path = tmp_path / "plan.json"
    rc("topology", "add", "A", "B", "--plan-out", str(path))
    checked = plans.check_same_plan

    def check_then_race(recorded: plans.PlanFile, fresh: plans.Plan) -> None:
        checked(recorded, fresh)
        with Catalog(rc.db_url) as other, other.transaction() as tx:
            tx.put_location(Location("Z"))

    monkeypatch.setattr(plans, "check_same_plan", check_then_race)
    doc = rc.json("apply", str(path), expect=3)
    assert doc["error"]["message"] == (
        "the catalog changed since the plan was made (version 2 → 3); make the plan again"
    )
    assert rc.connections() == {}
    op = rc.json("ops", "list")["operations"][0]
    assert (op["command"], op["outcome"], op["args"]["plan_file"]) == ("topology add", "refused", str(path))


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (
            b"{not json",
            "it is not JSON (Expecting property name enclosed in double quotes at line 1 column 2)",
        ),
        (b"\xff\xfe", "it is not UTF-8 text"),
        (b"[1, 2]", "it is not a JSON object"),
        (b'{"format": "terraform"}', 'its format is "terraform", expected "replctl-plan/1"'),
    ],
)
def test_a_file_that_is_not_a_plan_exits_2_with_a_one_line_reason(
    rc: Replctl, tmp_path: Path, content: bytes, reason: str
) -> None:
    path = tmp_path / "plan.json"
    path.write_bytes(content)
    before = state(rc)
    out = rc("apply", str(path), expect=2)
    assert out.stderr.splitlines()[0] == f"error: {path} is not a valid replctl plan: {reason}"
    assert state(rc) == before


def _tamper(path: Path, **changes: Any) -> None:
    doc = json.loads(path.read_text())
    doc.update(changes)
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"command": []}, '"command" must be a non-empty list of strings'),
        ({"catalog": {"url": "x", "version": "2"}}, '"catalog" must hold a "version" ≥ 0'),
        ({"plan": None}, '"plan" must be a JSON object'),
        ({"inputs": [{"path": "x"}]}, '"inputs" must be a list of {"option", "path", "sha256", "bytes"}'),
        ({"command": ["nonsense", "X"]}, "no command replctl nonsense X"),
        ({"command": ["location", "add", "C", "--colour", "red"]}, "No such option: --colour"),
        (
            {"command": ["location", "add", "C", "--db", "sqlite://"]},
            "its command holds the global option --db",
        ),
    ],
)
def test_a_tampered_plan_that_no_longer_parses_exits_2(
    rc: Replctl, tmp_path: Path, changes: dict[str, Any], message: str
) -> None:
    path = tmp_path / "plan.json"
    rc("location", "add", "C", "--plan-out", str(path))
    _tamper(path, **changes)
    before = state(rc)
    out = rc("apply", str(path), expect=2)
    assert out.stderr.splitlines()[0] == f"error: {path} is not a valid replctl plan: {message}"
    assert state(rc) == before


def test_a_tampered_plan_whose_dry_run_differs_now_is_stale(rc: Replctl, tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    rc("location", "add", "C", "--plan-out", str(path))
    doc = json.loads(path.read_text())
    doc["plan"]["changes"][0]["role"] = "hub"  # the reviewer read "hub"; the command adds a read-write one
    path.write_text(json.dumps(doc))
    before = state(rc)
    out = rc("apply", str(path), expect=3)
    assert out.stderr.splitlines()[0] == (
        f"the plan made now differs from the one in {path} (at plan.changes[0].role); make the plan again"
    )
    assert [e["message"] for e in refused_applies(rc, before, path)] == [out.stderr.splitlines()[0]]


def test_a_plan_for_another_catalog_exits_2(rc: Replctl, tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    rc("location", "add", "C", "--plan-out", str(path))
    other = Replctl(tmp_path / "other")
    other("init")
    out = other("apply", str(path), expect=2)
    assert out.stderr.splitlines()[0] == (
        f"error: the plan {path} was made for the catalog {rc.db_url}, not {other.db_url}"
    )


@pytest.mark.parametrize(
    "command",
    [("status",), ("location", "list"), ("topology", "validate"), ("ops", "list"), ("config", "show")],
)
def test_plan_out_on_a_command_that_changes_nothing_exits_2(
    rc: Replctl, tmp_path: Path, command: tuple[str, ...]
) -> None:
    path = tmp_path / "plan.json"
    out = rc(*command, "--plan-out", str(path), expect=2)
    assert out.stderr.splitlines()[0] == (
        f"error: replctl {' '.join(command)} changes nothing; --plan-out is for mutating commands"
    )
    assert not path.exists()


@pytest.mark.parametrize("command", [("init",), ("db", "upgrade"), ("apply", "x.json"), ("demo",)])
def test_plan_out_on_a_command_without_a_dry_run_exits_2(
    rc: Replctl, tmp_path: Path, command: tuple[str, ...]
) -> None:
    path = tmp_path / "plan.json"
    out = rc(*command, "--plan-out", str(path), expect=2)
    assert "has no dry run to record; --plan-out is for the commands that run as journalled operations" in (
        out.stderr
    )
    assert not path.exists()


def test_a_refused_plan_out_writes_no_file(rc: Replctl, tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    # A exists as read-write: adding it as a hub is refused (adding it as it is would be nothing to do).
    out = rc("location", "add", "A", "--role", "hub", "--plan-out", str(path), expect=2)
    assert out.stderr.startswith("error: location A exists as read-write")
    assert not path.exists()
    out = rc("location", "add", "C", "--plan-out", str(tmp_path / "no" / "such" / "plan.json"), expect=2)
    assert out.stderr.splitlines()[0].startswith(f"error: cannot write the plan to {tmp_path / 'no'}")


@pytest.mark.spark
def test_data_commands_are_planned_and_applied_on_a_real_log(rc: Replctl, tmp_path: Path) -> None:
    rc("topology", "add", "A", "B")
    rc.append("A", "e1", "e2", "e3")
    replicate, delete = tmp_path / "replicate.json", tmp_path / "delete.json"
    before = state(rc)
    doc = rc.json("replicate", "A", "B", "--plan-out", str(replicate))
    assert [p["action"] for p in doc["plan"]["passes"]] == ["would-copy"]
    assert state(rc) == before
    assert rc.keys("B") == []

    rc("apply", str(replicate))
    assert rc.keys("B") == ["e1", "e2", "e3"]
    rc("delete", "A", "--upto", "2", "--plan-out", str(delete))
    assert rc.keys("A") == ["e1", "e2", "e3"]
    applied = rc.json("apply", str(delete))
    assert (applied["deleted_upto"], applied["pending"]) == (2, False)
    assert rc.keys("A") == ["e3"]
    assert rc("apply", str(replicate), expect=3).stderr.startswith(
        "the catalog changed since the plan was made"
    )
    assert rc.json("log", "verify")["ok"]


@pytest.mark.spark
def test_backup_create_is_planned_and_applied_and_a_backup_taken_since_makes_the_plan_stale(
    rc: Replctl, tmp_path: Path
) -> None:
    # BK1: a backup writes only to the backup store, which the catalog version does not see; the plan made
    # again at apply (it would now reuse the segment, not copy it) tells the change.
    rc.append("A", "e1")
    path, again = tmp_path / "backup.json", tmp_path / "again.json"
    before = state(rc)
    [planned] = rc.json("backup", "create", "A", "--plan-out", str(path))["plan"]["backups"]
    assert (planned["id"], planned["segments"], planned["segments_reused"], len(planned["copied"])) == (
        None,
        1,
        0,
        1,
    )
    assert state(rc) == before
    assert rc.json("backup", "list")["backups"] == []
    rc("backup", "create", "A", "--plan-out", str(again))
    [made] = rc.json("apply", str(path))["backups"]
    assert {k: v for k, v in made.items() if k not in ("id", "created_at")} == {
        k: v for k, v in planned.items() if k not in ("id", "created_at")
    }
    assert [b["id"] for b in rc.json("backup", "list")["backups"]] == [made["id"]]
    out = rc("apply", str(again), expect=3)
    assert out.stderr.startswith(f"the plan made now differs from the one in {again} (at plan.")
    assert [b["id"] for b in rc.json("backup", "list")["backups"]] == [made["id"]]


@pytest.mark.spark
def test_a_plan_records_the_digest_of_its_input_file_and_refuses_a_changed_file(
    rc: Replctl, tmp_path: Path
) -> None:
    events = tmp_path / "events.jsonl"
    original = '{"key": "f1"}\n{"key": "f2"}\n'
    events.write_text(original)
    path = tmp_path / "plan.json"
    rc("log", "append", "A", "--file", str(events), "--plan-out", str(path))
    sha = hashlib.sha256(original.encode()).hexdigest()
    assert json.loads(path.read_text())["inputs"] == [
        {"option": "--file", "path": str(events), "sha256": sha, "bytes": len(original)}
    ]

    events.write_text(original + '{"key": "sneaked-in"}\n')
    before = state(rc)
    out = rc("apply", str(path), expect=3)
    assert out.stderr.splitlines()[0] == (
        f"the input {events} (--file) changed since the plan was made; make the plan again"
    )
    assert [e["message"] for e in refused_applies(rc, before, path)] == [out.stderr.splitlines()[0]]

    events.write_text(original)
    rc("apply", str(path))
    assert rc.keys("A") == ["f1", "f2"]


@pytest.mark.spark
def test_a_plan_made_with_a_relative_file_appends_that_file_when_applied_from_another_folder(
    rc: Replctl, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made, elsewhere = tmp_path / "made", tmp_path / "elsewhere"
    for folder, key in ((made, "planned"), (elsewhere, "other")):
        folder.mkdir()
        (folder / "events.jsonl").write_text(f'{{"key": "{key}"}}\n')
    monkeypatch.chdir(made)
    rc("log", "append", "A", "--file", "events.jsonl", "--plan-out", "plan.json")
    doc = json.loads((made / "plan.json").read_text())
    # Recorded where it was made: the command and the input name the absolute path.
    assert doc["command"] == ["log", "append", "A", "--file", str(made / "events.jsonl")]
    assert doc["inputs"] == [
        {
            "option": "--file",
            "path": str(made / "events.jsonl"),
            "sha256": hashlib.sha256(b'{"key": "planned"}\n').hexdigest(),
            "bytes": 19,
        }
    ]

    monkeypatch.chdir(elsewhere)
    rc("apply", str(made / "plan.json"))
    assert rc.keys("A") == ["planned"]


@pytest.mark.spark
def test_a_plan_whose_input_file_vanished_is_refused_as_stale_and_changes_nothing(
    rc: Replctl, tmp_path: Path
) -> None:
    events = tmp_path / "events.jsonl"
    events.write_text('{"key": "f1"}\n')
    path = tmp_path / "plan.json"
    rc("log", "append", "A", f"--file={events}", "--plan-out", str(path))
    events.unlink()
    before = state(rc)
    out = rc("apply", str(path), expect=3)
    assert out.stderr.splitlines() == [
        f"the input {events} (--file) is gone since the plan was made; make the plan again",
        f"hint: replctl log append A --file={events} --plan-out {path}",
    ]
    assert [e["code"] for e in refused_applies(rc, before, path)] == ["stale-plan"]


@pytest.mark.parametrize(
    "older",
    [
        pytest.param(lambda entry: entry.pop("bytes"), id="no-size"),
        pytest.param(lambda entry: entry.update(path="events.jsonl"), id="relative-path"),
    ],
)
def test_a_plan_an_older_replctl_made_with_an_input_file_is_refused_as_stale_before_reading_it(
    rc: Replctl, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, older: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("events.jsonl").write_text('{"key": "f1"}\n')
    path = tmp_path / "plan.json"
    rc("log", "append", "A", "--file", "events.jsonl", "--plan-out", str(path))
    doc = json.loads(path.read_text())
    # As an older replctl wrote it: the command as typed, the input by a relative path or without its size.
    doc["command"] = ["log", "append", "A", "--file", "events.jsonl"]
    older(doc["inputs"][0])
    path.write_text(json.dumps(doc))
    before = state(rc)
    out = rc("apply", str(path), expect=3)
    named = doc["inputs"][0]["path"]
    assert out.stderr.splitlines() == [
        f"the plan {path} names its input {named} (--file) without its absolute path and size (it was made by "
        "an older replctl); make the plan again",
        f"hint: from the folder the plan was made in: replctl log append A --file events.jsonl --plan-out {path}",
    ]
    assert [e["code"] for e in refused_applies(rc, before, path)] == ["stale-plan"]


@pytest.mark.spark
def test_a_store_change_the_catalog_version_cannot_see_still_makes_the_plan_stale(
    rc: Replctl, tmp_path: Path
) -> None:
    rc.append("A", "e1", "e2", "e3")
    path = tmp_path / "recover.json"
    assert rc.json("recover", "location", "A", "--plan-out", str(path))["plan"]["nothing_to_do"]
    version = catalog_version(rc)
    rc("drill", "disaster", "A", "--from", "2")  # destroys stored events; the catalog is left as it was
    assert catalog_version(rc) == version
    before = state(rc)
    out = rc("apply", str(path), expect=3)
    assert out.stderr.startswith(f"the plan made now differs from the one in {path} (at plan.")
    assert [e["code"] for e in refused_applies(rc, before, path)] == ["stale-plan"]


@pytest.mark.spark
def test_a_drill_plan_applied_once_is_stale_the_second_time_and_a_drill_says_what_the_store_still_holds(
    rc: Replctl, tmp_path: Path
) -> None:
    # A drill changes the store, never the catalog version: only a dry run that reads what the store still
    # holds tells a plan already applied, and a drill on a log already cut, from one with events to destroy.
    rc.append("A", "e1", "e2")  # seq 1..2, cut at 2
    rc.append("A", "e3")
    rc.append("A", "e4")
    path = tmp_path / "drill.json"
    planned = rc("drill", "disaster", "A", "--from", "2", "--plan-out", str(path))
    assert planned.stdout.splitlines()[0] == (
        "would destroy A's stored events from seq 2 on (2 segment(s) gone, one truncated)"
    )
    out = rc("apply", str(path))
    assert out.stdout == (
        "destroyed A's stored events from seq 2 on (2 segment(s) gone, one truncated)\n"
        "next: replctl recover location A\n"
        f"applied the plan in {path}\n"
    )

    # Before: exit 0 and the same sentence again, though nothing was left to destroy.
    before = state(rc)
    again = rc("apply", str(path), expect=3)
    assert (again.stdout, again.stderr.splitlines()[0]) == (
        "",
        f"the plan made now differs from the one in {path} (at plan.destroyed_segments[0]); make the plan again",
    )
    assert [e["code"] for e in refused_applies(rc, before, path)] == ["stale-plan"]

    # A dry run on the cut log says what the store still holds from SEQ on: nothing from 2, e1 from 1.
    assert rc("drill", "disaster", "A", "--from", "2", "--dry-run").stdout == (
        "would destroy nothing: A's store holds no events from seq 2 on\nnext: replctl recover location A\n"
    )
    doc = rc.json("drill", "disaster", "A", "--from", "1", "--dry-run")
    assert (len(doc["destroyed_segments"]), doc["truncated_segment"]) == (1, None)


@pytest.mark.postgres
def test_plans_on_a_postgresql_catalog_apply_once_then_go_stale(postgres_url: str, tmp_path: Path) -> None:
    rc = Replctl(tmp_path, db_url=postgres_url)
    rc("init")
    rc("location", "add", "A")
    path = tmp_path / "plan.json"
    doc = rc.json("location", "add", "B", "--plan-out", str(path))
    assert doc["catalog_version"] == catalog_version(rc) == 1
    assert json.loads(path.read_text())["catalog"]["url"] == safe_url(parse_url(postgres_url))
    rc("apply", str(path))
    assert [loc["name"] for loc in rc.json("location", "list")["locations"]] == ["A", "B"]
    assert catalog_version(rc) == 2
    assert rc.json("apply", str(path), expect=3)["error"]["message"] == (
        "the catalog changed since the plan was made (version 1 → 2); make the plan again"
    )


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (["demo"], "replctl demo makes no plan"),
        (["location", "add", "B", "--help"], "its command asks for --help"),
        (["location", "add", "-h", "B"], "its command asks for -h"),
    ],
)
def test_a_plan_whose_command_is_demo_or_help_is_refused_before_anything_runs(
    rc: Replctl, tmp_path: Path, command: list[str], message: str
) -> None:
    path = tmp_path / "plan.json"
    rc("--plan-out", str(path), "location", "add", "C")
    doc = json.loads(path.read_text())
    doc["command"] = command
    path.write_text(json.dumps(doc))
    before = state(rc)
    out = rc("--json", "apply", str(path), expect=2)
    assert out.doc["error"]["code"] == "bad-plan"
    assert out.doc["error"]["message"].endswith(message)
    assert state(rc) == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("replctl-demo")]


def test_a_parquet_input_replaced_while_an_applied_plan_reads_it_appends_nothing(
    rc: Replctl, tmp_path: Path
) -> None:
    # A Parquet input is read by the append's job after apply's last check of it: the file replaced in between
    # (here right after the write, before the commit) was appended as if reviewed. Checked after the read too.
    import pyarrow as pa
    import pyarrow.parquet as pq

    from replctl import failpoints

    rc("location", "add", "P")
    source = tmp_path / "events.parquet"
    pq.write_table(pa.table({"key": ["reviewed"]}), source)
    plan = tmp_path / "plan.json"
    rc("--plan-out", str(plan), "log", "append", "P", "--file", str(source))
    before = state(rc)
    segments = sorted(p.name for p in (rc.store / "P").iterdir()) if (rc.store / "P").exists() else []

    def swap() -> None:
        pq.write_table(pa.table({"key": ["not reviewed"]}), source)

    with failpoints.calling("append.after-write", swap) as ran:
        error = rc.json("apply", str(plan), expect=3)["error"]
    assert ran == ["append.after-write"]
    assert (error["code"], error["hint"]) == (
        "stale-plan",
        f"replctl log append P --file {source} --plan-out {plan}",
    )
    assert error["message"] == (
        f"the input {source} (--file) changed while the plan was applied; nothing was appended; make the plan again"
    )
    assert rc.keys("P") == []
    assert (
        sorted(p.name for p in (rc.store / "P").iterdir()) if (rc.store / "P").exists() else []
    ) == segments
    assert refused_applies(rc, before, plan, command="log append") == [error]


def test_a_jsonl_input_replaced_after_apply_checked_it_is_refused_as_stale_and_journalled(
    rc: Replctl, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 18: a `.jsonl` input is read, and found changed, before the append's operation begins; the refusal
    # (exit 3) went unjournalled, while a Parquet input found changed inside the operation is journalled as the
    # append refused. Both are now.
    from replctl.cli.context import AppContext

    events = tmp_path / "events.jsonl"
    events.write_text('{"key": "reviewed"}\n')
    plan = tmp_path / "plan.json"
    rc("log", "append", "A", "--file", str(events), "--plan-out", str(plan))
    before = state(rc)
    checked = AppContext.event_files

    def replaced_once_checked(app: AppContext) -> Any:
        # Apply's checks of the file are done (the last right before the command); the command is about to
        # read it: another writer replaces it in between.
        if app.applied is not None:
            events.write_text('{"key": "not reviewed"}\n')
        return checked(app)

    monkeypatch.setattr(AppContext, "event_files", replaced_once_checked)
    out = rc("apply", str(plan), expect=3)
    assert out.stderr.splitlines() == [
        f"the input {events} (--file) changed since the plan was made; nothing was appended; make the plan "
        "again",
        f"hint: replctl log append A --file {events} --plan-out {plan}",
    ]
    [error] = refused_applies(rc, before, plan, command="log append")
    assert (error["code"], error["message"]) == ("stale-plan", out.stderr.splitlines()[0])
    [op] = rc.json("ops", "list")["operations"][:1]
    assert {k: v for k, v in op["args"].items() if not k.startswith("plan_")} == {"location": "A"}
    assert rc.keys("A") == []


# --older-than in seconds: long enough that apply's own checks, on a warm Spark, end well within it, so the plan
# is not stale when applied (a plan made on a cold Spark would age an event past it before apply began).
AGE = 6


def _older_than_plan(rc: Replctl, command: str, tmp_path: Path) -> tuple[Path, list[str]]:
    """Two of A's events and one backup aged past AGE, two of each younger; a plan cutting `--older-than AGE`
    made at once; returns it and what the plan keeps (A's keys for `delete`, backup ids for `backup prune`)."""
    rc.append("A", "e1", "e2")
    # Spark warm (a job on A's log) before the clock matters.
    rc("delete", "A", "--older-than", "1d", "--dry-run")
    rc("backup", "create", "A")
    time.sleep(AGE + 1)
    rc.append("A", "e3", "e4")
    rc("backup", "create", "A")
    path = tmp_path / "plan.json"
    if command == "delete":
        planned = rc.json("delete", "A", "--older-than", f"{AGE}s", "--plan-out", str(path))["plan"]
        assert (planned["deleted_upto"], planned["would_delete"]) == (2, {"from": 1, "upto": 2})
        return path, ["e3", "e4"]
    planned = rc.json("backup", "prune", "A", "--older-than", f"{AGE}s", "--plan-out", str(path))["plan"]
    [old, young] = [b["id"] for b in rc.json("backup", "list")["backups"]]
    assert (planned["removed"], planned["kept"]) == ([old], [young])
    return path, [young]


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("command", ["delete", "backup prune"])
def test_an_applied_older_than_plan_cuts_where_the_plan_said_however_long_its_run_waits(
    rc: Replctl, tmp_path: Path, command: str
) -> None:
    # The run read the clock again once it held its leases, which the plan's catalog-version check cannot see:
    # the events (backups) that aged past --older-than while it waited were deleted (removed) although the
    # reviewed plan kept them. A command has one instant (AppContext.now), the plan's check and the run alike.
    from replctl import failpoints

    path, kept = _older_than_plan(rc, command, tmp_path)

    def wait_for_the_younger_to_age() -> None:
        time.sleep(AGE + 1)

    with failpoints.calling("operation.after-lease", wait_for_the_younger_to_age) as ran:
        applied = rc.json("apply", str(path))
    assert ran == ["operation.after-lease"]
    planned = json.loads(path.read_text())["plan"]
    # What the plan showed, as the run reports it (a run's `would_delete` is None: it did delete).
    ran_as = {"dry_run": False, **({"would_delete": None} if command == "delete" else {})}
    assert applied == {**planned, **ran_as}
    if command == "delete":
        assert rc.keys("A") == kept
    else:
        assert [b["id"] for b in rc.json("backup", "list")["backups"]] == kept
