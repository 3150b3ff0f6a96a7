"""Refusals and messages an operator trial found wrong: each says what is true, with the exit code cli.md gives.

A restore claimed that the events after the backup were lost (BK2 brings them back from the neighbours); a
delete with nothing older than its cutoff offered to "hide seq ≤ 0"; a file named as the backup store failed
as the environment; `--event null` spoke of "NoneType"; an unknown backup did not say where it was looked for;
empty and `file:` roots were taken for folders; a truncated segment file made `log verify` fail in Spark.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from clitool import Replctl


@pytest.fixture
def rc(tmp_path: Path) -> Replctl:
    """An initialised catalog with one location, A."""
    return Replctl.initialised(tmp_path, "A")


def _segment_files(rc: Replctl, location: str) -> list[Path]:
    return sorted((rc.store / location).glob("seg-*/*.parquet"))


def test_a_restore_says_the_log_is_rebuilt_from_the_backup_not_that_events_are_lost(rc: Replctl) -> None:
    # BK2: B's log becomes the backup's events (seqs 1..2); a3, written after it, comes back from A (DR4).
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "a1", "a2")
    rc("replicate")
    rc("backup", "create", "B")
    rc.append("A", "a3")
    rc("replicate")
    planned = rc("recover", "location", "B", "--from-backup", "latest", "--dry-run").stdout.splitlines()
    assert planned[1] == (
        "B: its log would be rebuilt from the backup up to seq 2; its events after seq 2 would come back from "
        "the neighbours that hold them (BK2, DR4)"
    )
    assert not any("are lost" in line or "lost for good" in line for line in planned)
    ran = rc("recover", "location", "B", "--from-backup", "latest", "--yes").stdout.splitlines()
    assert ran[1] == (
        "B: its log is rebuilt from the backup up to seq 2; its events after seq 2 come back from the "
        "neighbours that hold them (BK2, DR4)"
    )
    assert not any("lost" in line for line in ran)
    assert rc.keys("B") == ["a1", "a2", "a3"]


def test_a_plain_recovery_still_says_the_suffix_is_lost(rc: Replctl) -> None:
    # DR0: there the suffix is gone from the store; only a restore rebuilds it from a backup.
    rc.append("A", "a1")
    rc.append("A", "a2")
    rc("drill", "disaster", "A", "--from", "2", "--yes")
    planned = rc("recover", "location", "A", "--dry-run").stdout.splitlines()
    assert planned[0] == "A: events from seq 2 on are lost"


def test_delete_older_than_with_no_event_that_old_says_nothing_is_deleted(rc: Replctl) -> None:
    rc.append("A", "a1", "a2")
    before = rc.snapshot()
    planned = rc("delete", "A", "--older-than", "1d", "--dry-run")
    assert planned.stdout == "A: no stored event is older than 1d; nothing would be deleted\n"
    ran = rc("delete", "A", "--older-than", "1d", "--yes")  # cli.md: nothing to do exits 0
    assert ran.stdout == "A: no stored event is older than 1d; nothing is deleted\n"
    doc = rc.json("delete", "A", "--older-than", "1d", "--yes")
    assert (doc["requested_upto"], doc["logical_deleted_upto"], doc["deleted_upto"], doc["would_delete"]) == (
        0,
        0,
        0,
        None,
    )
    assert rc.snapshot()["status"] == before["status"]
    assert rc.keys("A") == ["a1", "a2"]


def test_backup_create_to_an_existing_file_is_invalid_input_and_writes_nothing(rc: Replctl) -> None:
    rc.append("A", "a1")
    target = rc.root / "backups.txt"
    target.write_text("notes\n")
    error = {
        "code": "not-a-folder",
        "message": f"invalid backup store [BK1]: {target} is a file, not a folder; nothing was written",
        "hint": "name a folder, or one that does not exist yet, with --to (or backup_store)",
    }
    for dry in ([], ["--dry-run"]):
        assert rc.json("backup", "create", "--to", str(target), *dry, expect=2)["error"] == error
    assert target.read_text() == "notes\n"
    assert rc.json("backup", "list")["backups"] == []


@pytest.mark.parametrize(
    ("given", "kind"),
    [("null", "null"), ("3", "a number"), ("[1]", "an array"), ('"x"', "a string"), ("true", "true")],
)
def test_an_event_that_is_no_json_object_is_refused_naming_what_was_expected(
    rc: Replctl, given: str, kind: str
) -> None:
    error = rc.json("log", "append", "A", "--event", given, expect=2)["error"]
    assert error == {
        "code": "bad-event",
        "message": f"--event #1: expected a JSON object with optional fields type, key, tags, payload, got {kind}",
        "hint": 'e.g. {"key": "e1", "tags": ["t"], "payload": {"n": 1}}',
    }
    assert rc.keys("A") == []


def test_a_jsonl_line_that_is_no_object_is_refused_alike(rc: Replctl) -> None:
    events = rc.root / "events.jsonl"
    events.write_text('{"key": "a1"}\n[1, 2]\n')
    out = rc("log", "append", "A", "--file", str(events), expect=2)
    assert out.stderr.splitlines() == [
        f"error: {events.name}:2: expected a JSON object with optional fields type, key, tags, payload, got an array",
        'hint: e.g. {"key": "e1", "tags": ["t"], "payload": {"n": 1}}',
    ]
    assert rc.keys("A") == []


def test_an_unknown_backup_names_the_backup_store_it_was_looked_for_in(rc: Replctl) -> None:
    error = rc.json("backup", "show", "nosuch", expect=2)["error"]
    assert (
        error["message"]
        == f"unknown backup 'nosuch': the backup store {rc.backups} holds no backup of that id"
    )


@pytest.mark.parametrize(
    ("args", "message", "hint"),
    [
        (
            ["--store", ""],
            "--store is empty: it names no store",
            "give a folder, a file:/// URI or a remote URI (hdfs://, s3a://)",
        ),
        (
            ["--store", "file:logs/a"],
            "--store 'file:logs/a' is not a file URI replctl reads: a file URI is file:///ABSOLUTE/PATH",
            "give the path without file: (logs/a), or file:///ABSOLUTE/PATH",
        ),
        (
            ["--store", "file://srv/logs"],
            "--store 'file://srv/logs' names the host 'srv': replctl reads only local file URIs, and would "
            "open /logs there",
            "give file:///ABSOLUTE/PATH (three slashes), or the path itself: srv/logs",
        ),
    ],
)
def test_an_empty_or_file_colon_store_is_refused_not_taken_for_a_folder(
    rc: Replctl, args: list[str], message: str, hint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(rc.root)  # where an empty root would have been taken to be
    before = sorted(rc.root.iterdir())
    for command in (["status"], ["init"]):
        doc = rc.json(*args, *command, expect=2)
        assert doc["error"] == {"code": "bad-option", "message": message, "hint": hint}
    assert sorted(rc.root.iterdir()) == before


def test_an_empty_store_in_the_config_file_is_refused(rc: Replctl) -> None:
    config = rc.root / "replctl.toml"
    config.write_text('store = ""\n')
    rc.env["REPLCTL_CONFIG"] = str(config)
    del rc.env["REPLCTL_STORE"]
    error = rc.json("status", expect=2)["error"]
    assert (error["code"], error["message"]) == (
        "bad-config",
        f"store in the config file {config} is empty: it names no store",
    )


def test_backup_create_to_an_empty_or_file_colon_root_is_refused(rc: Replctl) -> None:
    assert (
        rc.json("backup", "create", "--to", "", expect=2)["error"]["message"]
        == "--to is empty: it names no store"
    )
    assert rc.json("backup", "create", "--to", "file:bk", expect=2)["error"]["code"] == "bad-option"
    assert not (rc.backups / "manifests").exists()


def test_an_unreachable_remote_store_fails_in_one_short_line_with_a_hint(rc: Replctl) -> None:
    # Whatever pyarrow's HDFS client lacks here (Java, libhdfs, a name node), one line and a hint (exit 6).
    out = rc("--store", "hdfs://localhost:1/x", "log", "show", "A", expect=6)
    lines = out.stderr.splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith(
        "error: the store marker hdfs://localhost:1/x/replctl-store.json cannot be read: "
    )
    assert len(lines[0]) < 300
    assert lines[1].startswith("hint: check the name node in --store (or REPLCTL_STORE) is reachable")


def test_the_remote_cause_is_the_first_line_of_pyarrows_text_in_plain_words() -> None:
    from replctl.adapters.remotefiles import remote_cause, remote_failure

    libjvm = OSError(
        "Unable to load libjvm\\ndlopen(/usr/lib/jvm/default-java/libjvm.so) failed: cannot open shared object "
        "file\\n" + "dlopen(/elsewhere/libjvm.so) failed\\n" * 40
    )
    assert remote_cause(libjvm) == "pyarrow's HDFS client cannot load Java (libjvm)"
    assert remote_cause(OSError("HDFS connection failed\nat line 2")) == "HDFS connection failed"
    long = remote_cause(OSError("x" * 1000))
    assert (len(long), long[-1]) == (160, "…")
    failure = remote_failure("cannot open s3a://b/logs/A", "s3a://b/logs/A", OSError("no route"))
    assert (failure.exit_code, failure.message) == (6, "cannot open s3a://b/logs/A: no route")
    assert failure.hint is not None and "hdfs" not in failure.hint


@pytest.mark.parametrize("damage", ["truncated", "overwritten"])
def test_log_verify_reports_a_damaged_segment_file_as_damage_not_a_spark_error(
    rc: Replctl, damage: str
) -> None:
    rc.env["COLUMNS"] = "400"  # the file's path whole on one line
    rc.append("A", "a1")
    rc.append("A", "a2")
    part = _segment_files(rc, "A")[-1]
    relative = part.relative_to(rc.store).as_posix()
    size = part.stat().st_size
    if damage == "truncated":
        part.write_bytes(part.read_bytes()[:100])
        problem = f"holds 100 bytes, its catalog row says {size}"
    else:
        part.write_bytes(b"\0" * size)  # its size kept: only the digest tells
        problem = "differs from its catalog row's SHA-256"
    doc = rc.json("log", "verify", "A", expect=3)
    assert doc["logs"][0]["violations"] == [
        {
            "invariant": "I3",
            "seq": None,
            "message": "CVV {A:2} ≠ LUB of the stored vts ⊔ DVV ⊔ baselines = {A:1}",
        },
        {"invariant": "SEG", "seq": 2, "message": f"file {relative} {problem}"},
    ]
    assert doc["error"]["hint"] == "replctl recover location A"
    text = rc("log", "verify", "A", expect=3)
    assert text.stdout.splitlines() == [
        "A: violation [I3]: CVV {A:2} ≠ LUB of the stored vts ⊔ DVV ⊔ baselines = {A:1}",
        f"A: violation [SEG] at seq 2: file {relative} {problem}",
        "hint: replctl recover location A",
    ]
    if damage == "truncated":
        # The hint leads somewhere: the truncated file is lost as a missing one is (DR0), not read by Spark.
        assert rc("recover", "location", "A", "--dry-run").stdout.splitlines()[0] == (
            "A: events from seq 2 on are lost"
        )
