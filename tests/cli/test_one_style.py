"""Issue 18: one text style for vectors and values, one JSON timestamp format, one shape for `blocked_by`,
`warnings` apart from `violations`, and help that names values in words."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from clitool import Replctl

from replctl.cli.reference import render_reference

RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


@pytest.fixture
def rc(tmp_path: Path) -> Replctl:
    """`replctl` bound to a new SQLite catalog and store, after `replctl init`."""
    tool = Replctl(tmp_path)
    tool("init")
    return tool


def no_python_reprs(text: str) -> None:
    assert "{'" not in text and "None" not in text and "True" not in text and "False" not in text, text


def test_vectors_read_as_A_colon_N_in_delete_recover_topology_and_ops(rc: Replctl) -> None:
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B")
    rc.append("A", "a1", "a2", "a3")
    rc("replicate")

    deleted = rc("delete", "A", "--upto", "2", "--yes")
    assert "A: logically deleted up to 2, physically up to 2; DVV {A:2}\n" in deleted.stdout

    rc("location", "add", "C")
    added = rc("topology", "add", "A", "C", "--history", "current")
    # ADD3: C merges the foreign entries of DVV-A, written as a vector, not as a Python dict.
    assert added.stdout.splitlines()[-1] == "  history current: C merges {A:2}"

    rc("drill", "disaster", "B", "--from", "2", "--yes")
    # DR4: A deleted a1, a2 and B lost a2, so A is refused and B's CVV is what survived (exit 5, incomplete);
    # a2 is then nowhere (DR5: what the refused A deleted is named lost).
    recovered = rc("recover", "location", "B", "--yes", expect=5)
    assert recovered.stdout.splitlines()[-3:-1] == [
        "B: clock unchanged at 3, CVV {A:1}",
        "B: events A: 2..2 are lost for good",
    ]

    op = rc.json("ops", "list", "--limit", "1")["operations"][0]["id"]
    shown = rc("ops", "show", op)
    assert shown.stdout.splitlines()[2:4] == [
        "args: location=B lost_from=- accept_loss=no",
        "  1. metadata lost_from=2 survivors_upto=1 cvv={A:1} floor=3 seq_before=3 cvv_before={A:3}",
    ]
    for out in (deleted, added, recovered, shown, rc("location", "show", "A"), rc("location", "list")):
        no_python_reprs(out.stdout)


def test_config_show_writes_unset_values_as_a_dash_and_flags_as_yes_no(rc: Replctl) -> None:
    rows = {
        line.split("│")[1].strip(): line.split("│")[2].strip()
        for line in rc("config", "show").stdout.splitlines()
        if line.startswith("│")
    }
    assert (rows["spark_remote"], rows["spark_conf"], rows["require_recoverable"]) == ("-", "-", "no")


def test_an_operation_journal_error_reads_as_the_refusal_it_was(rc: Replctl) -> None:
    rc("location", "add", "A")
    rc("replicate", "A", "Zz", expect=2)
    op = rc.json("ops", "list", "--limit", "1")["operations"][0]["id"]
    assert rc("ops", "show", op).stdout.splitlines()[2:] == [
        "args: source=A target=Zz",
        "error [unknown-location]: unknown location 'Zz'",
        "hint: list them with: replctl location list",
    ]


def test_every_json_timestamp_is_rfc3339_utc_with_z(rc: Replctl) -> None:
    rc("location", "add", "A")
    rc.append("A", "a1")
    rc("backup", "create", "A")
    ops = rc.json("ops", "list")["operations"]
    stamps = [op["started_at"] for op in ops] + [op["ended_at"] for op in ops]
    stamps += [step["at"] for step in rc.json("ops", "show", ops[0]["id"])["operation"]["steps"]]
    stamps += [change["at"] for change in rc.json("topology", "history")["changes"]]
    stamps += [backup["created_at"] for backup in rc.json("backup", "list")["backups"]]
    assert len(stamps) >= 7
    assert [s for s in stamps if not RFC3339.match(s)] == []


def test_blocked_by_has_one_shape_in_delete_and_in_status(rc: Replctl) -> None:
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B")
    rc.append("A", "a1", "a2")
    # DEL3: B holds none of A's events yet, so the whole deletion waits for B.
    deleted = rc.json("delete", "A", "--upto", "2", "--yes", expect=5)
    assert deleted["blocked_by"] == [{"target": "B", "first_blocked_seq": 1}]
    assert rc.json("status")["pending_deletions"] == [
        {"location": "A", "requested_upto": 2, "blocked_by": [{"target": "B", "first_blocked_seq": None}]}
    ]
    assert "pending deletion at A up to 2, held back by B\n" in rc("status").stdout


def test_topology_validate_lists_warnings_apart_from_violations(rc: Replctl) -> None:
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B")
    doc = rc.json("topology", "validate")
    assert (doc["ok"], doc["violations"]) == (True, [])
    assert [(w["code"], w["warning"]) for w in doc["warnings"]] == [("ROLE2", True)]


def test_help_names_values_in_words_not_python_types() -> None:
    reference = render_reference()
    assert re.findall(r"<(?:int|float|str|path|list\[)[^>]*>", reference) == []
    assert "  --limit N " in reference and "  --upto SEQ " in reference
    assert "Usage: replctl log show [OPTIONS] LOCATION\n" in reference
    assert "Usage: replctl log verify [OPTIONS] [LOCATIONS...]\n" in reference
    assert "Usage: replctl replicate [OPTIONS] [SRC DST]\n" in reference
