"""Issue 18: the habits operators bring from git, kubectl and terraform.

`log show` starts with the newest events on a terminal and streams `--json`; `report --html -` writes to
stdout; adding a location that exists says so; `version`; and every hint a refusal prints, when run, succeeds.
"""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
from clitool import Replctl

from replctl.cli import app


@pytest.fixture
def rc(tmp_path: Path) -> Replctl:
    """`replctl` bound to a new SQLite catalog and store, after `replctl init`."""
    tool = Replctl(tmp_path)
    tool("init")
    return tool


def on_a_terminal(rc: Replctl, *args: str) -> str:
    """stdout of `replctl ARGS` run in a child process whose stdout is a pseudo-terminal."""
    leader, follower = pty.openpty()
    # A test sets PAGER itself when it is about the pager; otherwise the table is printed, not paged.
    env = {**os.environ, "PAGER": "cat", **rc.env, "COLUMNS": "200"}
    child = subprocess.Popen(
        [sys.executable, "-m", "replctl", *args], env=env, stdout=follower, stderr=subprocess.PIPE
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed the terminal (EIO)
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert child.wait(timeout=120) == 0, child.stderr.read() if child.stderr else ""
    return b"".join(chunks).decode().replace("\r\n", "\n")


def seqs(table: str) -> list[int]:
    """The seq column of a `log show` table."""
    return [int(m) for m in re.findall(r"^│ (\d+)\*? ", table, flags=re.MULTILINE)]


def test_log_show_on_a_terminal_shows_the_newest_50_and_says_how_to_see_all(rc: Replctl) -> None:
    rc("location", "add", "A")
    rc("log", "append", "A", "--generate", "60")
    shown = on_a_terminal(rc, "log", "show", "A")
    assert seqs(shown) == list(range(11, 61))
    assert shown.splitlines()[-1] == (
        "the newest 50 of 60 stored events; every one: replctl log show A --all (or --from SEQ, --limit N)"
    )
    assert seqs(on_a_terminal(rc, "log", "show", "A", "--all")) == list(range(1, 61))
    assert seqs(on_a_terminal(rc, "log", "show", "A", "--from", "5", "--limit", "3")) == [5, 6, 7]
    # Piped (a script, a file), every stored event, as before.
    assert seqs(rc("log", "show", "A").stdout) == list(range(1, 61))


def test_log_show_on_a_terminal_pages_a_long_table_through_the_pager_like_git(rc: Replctl) -> None:
    rc("location", "add", "A")
    rc("log", "append", "A", "--generate", "60")
    rc.env["LINES"] = "24"
    # A pager that marks every line it is given: what reaches the terminal went through it.
    rc.env["PAGER"] = "sed s/^/paged:/"
    paged = on_a_terminal(rc, "log", "show", "A").splitlines()
    assert len(paged) == 56 and all(line.startswith("paged:") for line in paged)
    assert seqs("\n".join(line.removeprefix("paged:") for line in paged)) == list(range(11, 61))
    assert paged[-1] == (
        "paged:the newest 50 of 60 stored events; every one: replctl log show A --all (or --from SEQ, --limit N)"
    )
    # Short enough for the screen, --no-pager, PAGER=cat, a pager that is not there: printed as it is.
    for args in (("--limit", "3"), ("--no-pager",)):
        assert "paged:" not in on_a_terminal(rc, "log", "show", "A", *args)
    rc.env["PAGER"] = "cat"
    assert seqs(on_a_terminal(rc, "log", "show", "A")) == list(range(11, 61))
    rc.env["PAGER"] = "no-such-pager-here"
    assert seqs(on_a_terminal(rc, "log", "show", "A")) == list(range(11, 61))
    # Piped, never paged.
    assert "paged:" not in rc("log", "show", "A").stdout


def test_log_show_marks_logically_deleted_rows_and_explains_the_star(rc: Replctl) -> None:
    rc("location", "add", "A")
    rc.append("A", "a1", "a2", "a3")
    rc("delete", "A", "--upto", "2", "--logical", "--yes")
    out = rc("log", "show", "A").stdout
    assert seqs(out) == [1, 2, 3]
    assert "│ 1*  " in out and "│ 3   " in out
    assert (
        out.splitlines()[-1] == "* logically deleted: hidden from local reading, kept for replication (DEL1)"
    )


def test_log_show_json_is_the_contract_document_with_every_event(rc: Replctl) -> None:
    rc("location", "add", "A")
    rc.append("A", "a1", "a2")
    doc = rc.json("log", "show", "A")
    assert {k: v for k, v in doc.items() if k != "events"} == {
        "ok": True,
        "location": "A",
        "seq": 2,
        "deleted_upto": 0,
        "logical_deleted_upto": 0,
    }
    assert doc["events"][1] == {
        "seq": 2,
        "origin": "A",
        "origin_time": 2,
        "vt": {"A": 2},
        "type": None,
        "key": "a2",
        "tags": [],
        "payload": None,
    }
    assert rc.json("log", "show", "A", "--limit", "1")["events"][0]["key"] == "a1"


def test_log_show_refuses_all_with_limit(rc: Replctl) -> None:
    rc("location", "add", "A")
    out = rc("log", "show", "A", "--all", "--limit", "3", expect=2)
    assert out.stderr == "error: give --all or --limit N, not both\nhint: replctl log show A --all\n"


def test_report_html_dash_writes_the_page_on_stdout_and_no_file(rc: Replctl, tmp_path: Path) -> None:
    rc("location", "add", "A")
    out = rc("report", "--html", "-")
    assert out.stdout.startswith("<!DOCTYPE html>") and out.stdout.rstrip().endswith("</html>")
    assert not (Path.cwd() / "-").exists() and not (tmp_path / "-").exists()
    refused = rc.json("report", "--html", "-", expect=2)
    assert refused["error"]["code"] == "bad-option"


def test_adding_a_location_that_exists_says_it_exists_and_changes_nothing(rc: Replctl) -> None:
    rc("location", "add", "A")
    before = rc.snapshot()
    again = rc("location", "add", "A")
    assert again.stdout == "location A exists (read-write); nothing to change\n"
    assert rc.json("location", "add", "A")["changes"] == []
    other = rc.json("location", "add", "A", "--role", "hub", expect=2)["error"]
    assert {k: other[k] for k in ("code", "message", "hint")} == {
        "code": "location-exists",
        "message": "location A exists as read-write; a location's role is set when it is added (M1)",
        "hint": "replctl location show A",
    }
    assert rc.snapshot() == before
    rc("location", "retire", "A")
    retired = rc.json("location", "add", "A", expect=3)["error"]
    assert retired["code"] == "M1"
    assert (
        retired["message"]
        == "refused [M1]: location id A was already used and retired; a location id is never reused (M1)"
    )


def test_topology_history_says_who_made_each_change(rc: Replctl) -> None:
    rc.env["LOGNAME"] = "ops-anna"  # getpass reads LOGNAME first: the login name the journal records
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc.env["LOGNAME"] = "ops-ben"
    rc("topology", "add", "A", "B", "--reason", "CHG-2")
    changes = rc.json("topology", "history")["changes"]
    assert [(c["kind"], c["actor"]) for c in changes] == [
        ("location-added", "ops-anna"),
        ("location-added", "ops-anna"),
        ("connection-added", "ops-ben"),
    ]
    rows = [line.split()[2:] for line in rc("topology", "history").stdout.splitlines()[2:5]]
    assert rows == [
        ["ops-anna", "location-added", "A", "(read-write)"],
        ["ops-anna", "location-added", "B", "(read-write)"],
        ["ops-ben", "connection-added", "A→B", "[1]"],
    ]
    assert rc("topology", "history").stdout.splitlines()[0].split() == ["id", "at", "who", "change", "reason"]


def test_version_names_replctl_spark_java_and_the_catalog_schema(rc: Replctl) -> None:
    from importlib.metadata import version

    from replctl import __version__
    from replctl.adapters.catalog.migrate import head_revision

    doc = rc.json("version")
    assert (doc["replctl"], doc["spark"]) == (__version__, version("pyspark"))
    assert re.fullmatch(r"\d+(\.\d+)*", doc["java"] or "")
    assert doc["catalog"] == {"revision": head_revision(), "head": head_revision(), "error": None}
    lines = rc("version").stdout.splitlines()
    assert lines[0] == f"replctl: {__version__}"
    assert lines[3] == f"catalog schema: {head_revision()} (newest {head_revision()})"


def hint_of(out: str) -> list[str]:
    """The command a refusal's `hint:` line suggests, as arguments after `replctl`."""
    hint = next(line for line in out.splitlines() if line.startswith("hint: "))
    command = hint[hint.index("replctl ") + len("replctl ") :]
    import shlex

    return shlex.split(command)


def test_each_hint_when_run_succeeds(rc: Replctl) -> None:
    for name in ("A", "B", "D", "F1"):
        rc("location", "add", name)
    # An unknown location: the hint lists the locations, it does not suggest adding a connection to it.
    unknown = rc("replicate", "A", "Zz", expect=2)
    assert hint_of(unknown.stderr) == ["location", "list"]
    rc(*hint_of(unknown.stderr))
    # No connection between two known locations: the hint adds it, and then the pass runs.
    missing = rc("replicate", "A", "B", expect=2)
    assert hint_of(missing.stderr) == ["topology", "add", "A", "B"]
    rc(*hint_of(missing.stderr))
    rc("replicate", "A", "B")
    # No events given: the hint names the location typed, not an example one.
    empty = rc("log", "append", "F1", expect=2)
    assert hint_of(empty.stderr) == ["log", "append", "F1", "--event", '{"key": "e1"}']
    rc(*hint_of(empty.stderr))
    assert rc.keys("F1") == ["e1"]
    # FO1: fail-over between two locations of no group; the hint declares it, then the fail-over runs.
    rc("topology", "add", "A", "D", "--both")
    failover = rc("topology", "failover", "D", "--from", "A", "--to", "B", expect=3)
    assert hint_of(failover.stderr) == ["topology", "group", "NAME", "A", "B"]
    rc(*hint_of(failover.stderr))
    rc("topology", "failover", "D", "--from", "A", "--to", "B")
    assert json.dumps(sorted(rc.connections())) == json.dumps(
        [["A", "B"], ["A", "D"], ["B", "D"], ["D", "A"], ["D", "B"]]
    )


def test_output_yaml_prints_the_json_document_as_yaml(rc: Replctl) -> None:
    import yaml

    rc("location", "add", "A")
    rc.append("A", "a1", "a2")
    for args in (("status",), ("location", "show", "A"), ("log", "show", "A"), ("ops", "list")):
        as_yaml = rc(*args, "--output", "yaml").stdout
        assert not as_yaml.startswith("{"), as_yaml
        assert yaml.safe_load(as_yaml) == rc.json(*args), args
    # The streamed events (log show) come as a YAML block sequence, one `- ` item at a time, and `ok` after
    # them: a read that fails further in the log still ends the one document.
    assert rc("log", "show", "A", "--from", "2", "--output=yaml").stdout.endswith(
        "events:\n- seq: 2\n  origin: A\n  origin_time: 2\n  vt:\n    A: 2\n  type: null\n  key: a2\n"
        "  tags: []\n  payload: null\nok: true\n"
    )
    assert rc("log", "show", "A", "--from", "3", "--output", "yaml").stdout.endswith("events: []\nok: true\n")
    rc.env["REPLCTL_OUTPUT"] = "yaml"
    refused = rc("location", "show", "Zz", expect=2)
    assert yaml.safe_load(refused.stdout) == {
        "ok": False,
        "error": {
            "code": "unknown-location",
            "message": "unknown location 'Zz'",
            "hint": "list them with: replctl location list",
        },
    }
    usage = yaml.safe_load(rc("location", "show", expect=2).stdout)
    assert (usage["ok"], usage["error"]["code"]) == (False, "usage")


def test_output_takes_text_json_or_yaml_only(rc: Replctl) -> None:
    bad = rc("status", "--output", "xml", expect=2)
    assert bad.stderr == "error: --output must be text, json or yaml, got 'xml'\n"


def test_states_that_need_attention_are_coloured_on_a_terminal_unless_no_color(rc: Replctl) -> None:
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("location", "retire", "B", "--yes")
    del rc.env["NO_COLOR"]
    rows = on_a_terminal(rc, "status").splitlines()[2:4]
    # retired in grey; active needs no colour (the headers are bold, which NO_COLOR leaves).
    assert rows == [
        "A         read-write  active   0    {}   {}   0/0      yes         ",
        "B         read-write  \x1b[90mretired\x1b[0m  0    {}   {}   0/0                  ",
    ]
    rc.env["NO_COLOR"] = "1"
    assert on_a_terminal(rc, "status").splitlines()[3] == (
        "B         read-write  retired  0    {}   {}   0/0                  "
    )
    del rc.env["NO_COLOR"]
    assert "\x1b[" not in rc("status").stdout  # piped: no colour


def test_demo_refuses_a_folder_that_is_not_empty_and_changes_nothing_there(
    rc: Replctl, tmp_path: Path
) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me")
    refused = rc("demo", "--dir", str(folder), expect=2)
    assert refused.stderr == (
        f"error: --dir {folder} is not an empty folder; the demo makes its own catalog and logs there\n"
        "hint: replctl demo --dir NEW_OR_EMPTY_FOLDER (or no --dir: a new folder)\n"
    )
    assert refused.stdout == ""
    assert [p.name for p in folder.iterdir()] == ["notes.txt"]
    assert rc.json("demo", "--dir", str(folder), expect=2)["error"]["code"] == "bad-option"


def test_quiet_prints_only_errors_and_verbose_names_the_journalled_operation(rc: Replctl) -> None:
    added = rc("-q", "location", "add", "A")
    assert (added.stdout, added.stderr) == ("", "")
    assert rc("location", "show", "A", "--quiet").stdout == ""
    refused = rc("-q", "location", "show", "Zz", expect=2)
    assert (refused.stdout, refused.stderr) == (
        "",
        "error: unknown location 'Zz'\nhint: list them with: replctl location list\n",
    )
    assert rc.json("-q", "location", "show", "A")["name"] == "A"  # a --json document is not text output

    verbose = rc("-v", "location", "add", "B")
    op = rc.json("ops", "list", "--limit", "1")["operations"][0]["id"]
    said = verbose.stderr.splitlines()
    assert said[0] == f"operation {op} (location add); see: replctl ops show {op}"
    assert re.fullmatch(r"replctl location add: exit 0 after \d+\.\d\d s", said[1]), said
    assert verbose.stdout == "recorded: location-added B (read-write)\n"
    assert re.fullmatch(r"replctl status: exit 0 after \d+\.\d\d s\n", rc("status", "--verbose").stderr)


def test_quiet_log_show_prints_nothing(rc: Replctl) -> None:
    rc("location", "add", "A")
    rc.append("A", "a1")
    assert rc("-q", "log", "show", "A").stdout == ""


def complete(rc: Replctl, line: str) -> list[str]:
    """What bash completion offers for `line` (Typer's protocol: _REPLCTL_COMPLETE, COMP_WORDS, COMP_CWORD)."""
    words = line.split(" ")
    env = {
        **rc.env,
        "_REPLCTL_COMPLETE": "complete_bash",
        "COMP_WORDS": line,
        "COMP_CWORD": str(len(words) - 1),
    }
    result = rc.runner.invoke(app, [], env=env, prog_name="replctl", catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return [word for word in result.stdout.splitlines() if word]


def test_location_names_complete_from_the_catalog_and_nothing_on_any_error(
    rc: Replctl, tmp_path: Path
) -> None:
    for name in ("EU1", "EU2", "US1", "OLD"):
        rc("location", "add", name)
    rc("location", "retire", "OLD", "--yes")
    assert complete(rc, "replctl location show EU") == ["EU1", "EU2"]
    assert complete(rc, "replctl log show ") == ["EU1", "EU2", "US1"]  # a retired one is not offered
    assert complete(rc, "replctl recover location U") == ["US1"]
    rc.env["REPLCTL_DB"] = f"sqlite:///{tmp_path / 'nowhere.db'}"
    assert complete(rc, "replctl location show EU") == []
    assert not (tmp_path / "nowhere.db").exists()


def test_group_names_complete_where_a_group_may_be_named_and_nothing_on_any_error(
    rc: Replctl, tmp_path: Path
) -> None:
    # Issue 18: RFC1 groups complete as locations do; RFC2 filters take a location or a group on either side.
    for name in ("EU1", "EU2", "US1", "US2", "AP1"):
        rc("location", "add", name)
    rc("topology", "group", "EUROPE", "EU1", "EU2")
    rc("topology", "group", "EAST", "US1", "US2")
    assert complete(rc, "replctl topology group E") == ["EAST", "EUROPE"]
    assert complete(rc, "replctl topology group EUROPE EU") == ["EU1", "EU2"]
    assert complete(rc, "replctl topology filter E") == ["EAST", "EU1", "EU2", "EUROPE"]
    assert complete(rc, "replctl topology filter US1 EU") == ["EU1", "EU2", "EUROPE"]
    assert complete(rc, "replctl topology failover A") == ["AP1"]
    assert complete(rc, "replctl topology failover AP1 --from EU") == ["EU1", "EU2"]
    # Only group members: AP1 belongs to no group.
    assert complete(rc, "replctl topology failover AP1 --from EU1 --to ") == ["EU1", "EU2", "US1", "US2"]
    rc.env["REPLCTL_DB"] = f"sqlite:///{tmp_path / 'nowhere.db'}"
    assert complete(rc, "replctl topology group E") == []
    assert complete(rc, "replctl topology filter E") == []
    assert not (tmp_path / "nowhere.db").exists()


def _two_rounds(rc: Replctl) -> None:
    """C→A then A→B in key order (A→B first): what C appends reaches B only in the second round."""
    for name in "ABC":
        rc("location", "add", name)
    rc("topology", "add", "A", "B")
    rc("topology", "add", "C", "A")
    rc.append("A", "a1")
    rc.append("C", "c1")


@pytest.mark.spark
def test_replicate_numbers_its_rounds_and_says_in_one_line_when_there_is_nothing_to_do(rc: Replctl) -> None:
    # Issue 18: A→B runs in two rounds; without a round column its two rows looked like one pass repeated.
    _two_rounds(rc)
    rc.env["COLUMNS"] = "200"
    lines = rc("replicate").stdout.splitlines()
    assert [line.split()[:6] for line in lines[:1] + lines[2:5]] == [
        ["round", "connection", "state", "action", "read", "written"],
        ["1", "A→B", "active", "copied", "1", "1"],
        ["1", "C→A", "active", "ran", "1", "1"],
        ["2", "A→B", "active", "ran", "1", "1"],
    ]
    assert rc("replicate").stdout == "nothing to replicate\n"
    assert rc("replicate", "A", "B").stdout == "nothing to replicate: A→B has nothing new\n"
    # The same passes in --json, each with its round; a single connection's pass is in round 1.
    rc.append("C", "c2")
    passes = rc.json("replicate")["passes"]
    assert [(p["round"], p["source"], p["target"], p["written"]) for p in passes] == [
        (1, "C", "A", 1),
        (2, "A", "B", 1),
    ]
    [one] = rc.json("replicate", "A", "B")["passes"]
    assert (one["round"], one["action"]) == (1, "nothing-new")
    # One round only: no round column.
    rc.append("A", "a2")
    assert rc("replicate").stdout.split()[:3] == ["connection", "state", "action"]
