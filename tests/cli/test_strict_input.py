"""Input validated as strictly on every path (issue 19 items 8 and 9): each case is refused with exit 2 and a
message naming what is wrong, before Spark starts, and leaves the catalog and the store as they were; text
that operators typed is printed with its control characters escaped."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from clitool import Replctl


@pytest.fixture
def rc(tmp_path: Path) -> Replctl:
    """An initialised catalog with the read-write location A; no events, so nothing here needs Spark."""
    tool = Replctl(tmp_path)
    tool("init")
    tool("location", "add", "A")
    return tool


def _refused(rc: Replctl, *args: str) -> dict[str, str]:
    """Run; it must exit 2 and change nothing. Returns the error object."""
    before = rc.snapshot()
    listing = sorted(p.name for p in rc.store.rglob("*")) if rc.store.exists() else []
    doc = rc.json(*args, expect=2)
    assert rc.snapshot()["status"] == before["status"]
    assert (sorted(p.name for p in rc.store.rglob("*")) if rc.store.exists() else []) == listing
    error: dict[str, str] = doc["error"]
    return error


def _parquet(path: Path, columns: dict[str, pa.Array]) -> Path:
    pq.write_table(pa.table(columns), path)
    return path


def test_issue19_8_parquet_columns_are_exact_and_case_sensitive(rc: Replctl, tmp_path: Path) -> None:
    strings = pa.array(["a"], pa.string())
    file = _parquet(
        tmp_path / "upper.parquet",
        {"Key": strings, "Type": strings, "Payload": pa.array(["{}"], pa.string())},
    )
    error = _refused(rc, "log", "append", "A", "--file", str(file))
    assert error["code"] == "bad-file"
    assert error["message"] == (
        f"{file}: column 'Key' is not an event column; the columns are type, key, tags, payload "
        "(names are exact, lower case)"
    )


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        (
            {"key": pa.array(["a", "b"]), "tags": pa.array([["x"], None], pa.list_(pa.string()))},
            "row 2: tags is null; tags is a list of strings (write [] for none)",
        ),
        (
            {"tags": pa.array([[], ["x"], ["y", None]], pa.list_(pa.string()))},
            "row 3: tags holds null; tags is a list of strings",
        ),
        (
            {"payload": pa.array(['{"n": 1}', "not json"], pa.string())},
            "row 2: payload is not JSON text (Expecting value)",
        ),
        (
            {"payload": pa.array(["NaN"], pa.string())},
            "row 1: payload is not JSON text (NaN is not JSON)",
        ),
        (
            {"key": pa.array([1], pa.int64())},
            "column 'key' is int64, not a string",
        ),
    ],
)
def test_issue19_8_parquet_tags_and_payloads_are_checked_like_json(
    rc: Replctl, tmp_path: Path, columns: dict[str, pa.Array], message: str
) -> None:
    file = _parquet(tmp_path / "events.parquet", columns)
    error = _refused(rc, "log", "append", "A", "--file", str(file))
    assert error["message"] == f"{file}: {message}"


def test_issue19_9_non_parquet_input_exits_2_with_a_message(rc: Replctl, tmp_path: Path) -> None:
    file = tmp_path / "events.parquet"
    file.write_text('{"key": "a"}\n')
    error = _refused(rc, "log", "append", "A", "--file", str(file))
    assert error["code"] == "bad-file"
    assert error["message"].startswith(f"{file}: not a Parquet file (")
    assert "oNNN" not in error["message"] and "An error occurred" not in error["message"]


@pytest.mark.parametrize("tags", ["false", "0", "{}", '""', "null", '"x"', '["a", 1]'])
def test_issue19_8_event_tags_must_be_a_list_of_strings(rc: Replctl, tags: str) -> None:
    error = _refused(rc, "log", "append", "A", "--event", f'{{"key": "k", "tags": {tags}}}')
    assert error["code"] == "bad-event"
    assert (
        error["message"] == f"--event #1: tags must be a list of strings, got {json.dumps(json.loads(tags))}"
    )


def test_issue19_9_a_64_mb_payload_is_refused_before_spark(rc: Replctl, tmp_path: Path) -> None:
    big = "x" * (64 * 1024 * 1024)
    error = _refused(rc, "log", "append", "A", "--event", json.dumps({"key": "k", "payload": big}))
    assert error["message"] == (
        f"--event #1: the payload is {len(big) + 2} bytes of JSON, more than the limit of 1048576"
    )
    file = _parquet(tmp_path / "big.parquet", {"payload": pa.array([json.dumps(big)], pa.string())})
    error = _refused(rc, "log", "append", "A", "--file", str(file))
    assert error["message"] == (
        f"{file}: row 1: the payload is {len(big) + 2} bytes of JSON, more than the limit of 1048576"
    )


def test_issue19_8_the_payload_limit_is_configurable(rc: Replctl, tmp_path: Path) -> None:
    lines = tmp_path / "events.jsonl"
    lines.write_text('{"key": "a", "payload": {"n": 12345}}\n')
    error = _refused(rc, "log", "append", "A", "--file", str(lines), "--max-payload-bytes", "8")
    assert error["message"] == "events.jsonl:1: the payload is 12 bytes of JSON, more than the limit of 8"
    rc.env["REPLCTL_MAX_PAYLOAD_BYTES"] = "8"
    error = _refused(rc, "log", "append", "A", "--file", str(lines))
    assert error["message"] == "events.jsonl:1: the payload is 12 bytes of JSON, more than the limit of 8"


def test_issue19_9_older_than_beyond_the_calendar_exits_2(rc: Replctl) -> None:
    error = _refused(rc, "delete", "A", "--older-than", "999999999d")
    assert error["code"] == "bad-number"
    assert error["message"] == "--older-than 999999999d is longer than 100000 days"
    error = _refused(rc, "delete", "A", "--older-than", "99999999999999999999w")
    assert error["message"] == "--older-than 99999999999999999999w is longer than 100000 days"


def test_issue19_8_group_names_are_validated(rc: Replctl) -> None:
    rc("location", "add", "B")
    error = _refused(rc, "topology", "group", "G\x1b[2J", "A", "B")
    assert error["code"] == "bad-name"
    assert error["message"] == (
        "group name 'G\\x1b[2J' is not allowed: use 1 to 64 letters, digits, '_', '.' or '-', starting "
        "with a letter or digit"
    )


def test_issue19_8_reasons_and_filters_are_printed_with_control_characters_escaped(rc: Replctl) -> None:
    rc("location", "add", "B")
    reason = "moved\x1b]0;owned\x07\x1b[2J [bold]x[/bold]"
    rc("--reason", reason, "topology", "add", "A", "B", "--filter", "key = 'a\x1b[31m'")
    shown = "moved\\x1b]0;owned\\x07\\x1b[2J [bold]x[/bold]"
    for args in (("topology", "history"), ("ops", "list"), ("status",), ("topology", "show")):
        out = rc(*args).stdout
        assert "\x1b" not in out and "\x07" not in out, args
    assert shown in rc("topology", "history").stdout
    assert shown in rc("ops", "list").stdout
    assert "key = 'a\\033[31m'" in rc("status").stdout  # sqlglot writes it as Spark's octal escape
    assert rc.json("topology", "history")["changes"][-1]["reason"] == reason  # JSON keeps the text itself


def test_issue19_8_a_repeated_parquet_column_is_refused(rc: Replctl, tmp_path: Path) -> None:
    file = tmp_path / "twice.parquet"
    pq.write_table(pa.Table.from_arrays([pa.array(["a"]), pa.array(["b"])], names=["key", "key"]), file)
    error = _refused(rc, "log", "append", "A", "--file", str(file))
    assert error["message"] == f"{file}: column 'key' appears more than once"


@pytest.mark.parametrize(
    ("summary", "message"),
    [
        (
            pa.schema([("key", pa.string()), ("payload", pa.int64())]),
            "column 'payload' is int64, not a string",
        ),
        (
            pa.schema([("key", pa.string()), ("seq", pa.int64())]),
            "column 'seq' is not an event column; the columns are type, key, tags, payload "
            "(names are exact, lower case)",
        ),
    ],
)
def test_m2_a_folders_summary_file_is_checked_like_its_files_in_the_dry_run_and_the_run(
    rc: Replctl, tmp_path: Path, summary: pa.Schema, message: str
) -> None:
    # Spark merges a summary file's columns into the folder's: a conflicting type or a column that is not an
    # event column is refused before Spark starts, by the dry run as by the run (it passed the dry run).
    folder = tmp_path / "in"
    folder.mkdir()
    _parquet(folder / "a.parquet", {"key": pa.array(["a1"]), "payload": pa.array(['{"x": 1}'])})
    pq.write_metadata(summary, folder / "_common_metadata")
    for dry_run in (["--dry-run"], []):
        error = _refused(rc, "log", "append", "A", "--file", str(folder), *dry_run)
        assert (error["code"], error["message"]) == ("bad-file", f"{folder / '_common_metadata'}: {message}")


def test_m2_a_column_of_conflicting_types_across_a_folders_files_is_refused(
    rc: Replctl, tmp_path: Path
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    _parquet(folder / "a.parquet", {"key": pa.array(["a1"]), "payload": pa.array(['{"x": 1}'])})
    _parquet(folder / "b.parquet", {"key": pa.array(["b1"]), "payload": pa.array([1], pa.int64())})
    error = _refused(rc, "log", "append", "A", "--file", str(folder))
    assert (error["code"], error["message"]) == (
        "bad-file",
        f"{folder / 'b.parquet'}: column 'payload' is int64, not a string",
    )


@pytest.mark.parametrize(
    ("event", "field"),
    [('{"key": "x", "key": "y"}', "key"), ('{"key": "x", "payload": {"a": [{"b": 1, "b": 2}]}}', "b")],
)
def test_a_field_given_twice_in_an_event_is_refused_on_every_path(
    rc: Replctl, tmp_path: Path, event: str, field: str
) -> None:
    # Python's reader keeps the last value; which one the operator meant is unknown, so nothing is stored.
    message = f'field "{field}" appears more than once in one object'
    error = _refused(rc, "log", "append", "A", "--event", '{"key": "ok"}', "--event", event)
    assert (error["code"], error["message"]) == ("bad-event", f"--event #2: {message}")
    lines = tmp_path / "events.jsonl"
    lines.write_text(f'{{"key": "ok"}}\n{event}\n')
    error = _refused(rc, "log", "append", "A", "--file", str(lines))
    assert (error["code"], error["message"]) == ("bad-event", f"events.jsonl:2: {message}")


def test_a_parquet_payload_naming_a_field_twice_is_refused(rc: Replctl, tmp_path: Path) -> None:
    file = _parquet(tmp_path / "events.parquet", {"payload": pa.array(['{"a": 1}', '{"a": 1, "a": 2}'])})
    error = _refused(rc, "log", "append", "A", "--file", str(file))
    assert (error["code"], error["message"]) == (
        "bad-event",
        f'{file}: row 2: field "a" appears more than once in one object',
    )


def test_a_folders_file_that_spark_reads_is_checked_though_its_name_starts_with_an_underscore(
    rc: Replctl, tmp_path: Path
) -> None:
    # Spark reads `_part=1.parquet` (a name holding `=` is a partition's), so it is checked like any file;
    # `_skipped.parquet` and `.hidden.parquet` are not read, and not checked.
    folder = tmp_path / "in"
    folder.mkdir()
    _parquet(folder / "a.parquet", {"key": pa.array(["a1"])})
    not_json = {"payload": pa.array(["not json"])}
    _parquet(folder / "_skipped.parquet", not_json)
    _parquet(folder / ".hidden.parquet", not_json)
    _parquet(folder / "_part=1.parquet", not_json)
    error = _refused(rc, "log", "append", "A", "--file", str(folder))
    assert (error["code"], error["message"]) == (
        "bad-event",
        f"{folder / '_part=1.parquet'}: row 1: payload is not JSON text (Expecting value)",
    )


def _refused_alike(rc: Replctl, *args: str) -> tuple[str, str, str | None]:
    """The run and its dry run refuse alike (exit 2), and the log keeps exactly the events it held."""
    before = rc.json("log", "show", "A")["events"]
    dry = _refused(rc, *args, "--dry-run")
    error = _refused(rc, *args)
    assert dry == error
    assert rc.json("log", "show", "A")["events"] == before
    return error["code"], error["message"], error["hint"]


def _folder_with_a_good_file(tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    folder.mkdir()
    _parquet(folder / "a.parquet", {"key": pa.array(["a1"])})
    return folder


NOT_JSON = {"payload": pa.array(["not json"])}


SUMMARY_LIKE = (
    "its name starts like a Parquet summary file's",
    "rename it, or give the event files directly",
)


@pytest.mark.parametrize(
    ("name", "kind", "refusal"),
    [
        # Spark reads the files of a folder so named; the check skipped them (a name starting with `_`), so
        # their events went in unchecked.
        ("_metadata_old", "folder", SUMMARY_LIKE),
        ("_metadata", "folder", SUMMARY_LIKE),
        ("_common_metadata_x", "folder", SUMMARY_LIKE),
        # Spark merges such a file's columns like a data file's: the dry run said ok, the run failed in Spark.
        ("_metadata.bak", "file", SUMMARY_LIKE),
        ("_common_metadata.old", "file", SUMMARY_LIKE),
        # Spark follows the link and reads the files there; the check and the input's digest (REP3) did not,
        # so their events went in unchecked, and a re-run after they changed was taken for the same input.
        (
            "linked",
            "link",
            ("it is a symbolic link to a folder", "give the linked folder's files directly"),
        ),
    ],
)
def test_m2_rep3_a_name_that_spark_reads_unlike_the_check_is_refused(
    rc: Replctl, tmp_path: Path, name: str, kind: str, refusal: tuple[str, str]
) -> None:
    rc.append("A", "e1")
    folder = _folder_with_a_good_file(tmp_path)
    if kind == "file":
        _parquet(folder / name, {"key": pa.array(["b1"]), "seq": pa.array([1])})
    elif kind == "folder":
        (folder / name).mkdir()
        _parquet(folder / name / "p.parquet", NOT_JSON)
    else:
        (tmp_path / "other").mkdir()
        _parquet(tmp_path / "other" / "p.parquet", NOT_JSON)
        (folder / name).symlink_to(Path("..") / "other", target_is_directory=True)
    why, hint = refusal
    assert _refused_alike(rc, "log", "append", "A", "--file", str(folder)) == (
        "bad-file",
        f"{folder / name}: Spark and the input check could read this differently: {why}",
        hint,
    )


def test_m2_hidden_names_and_the_exact_summary_names_are_still_allowed(rc: Replctl, tmp_path: Path) -> None:
    # Spark skips `.hidden/` (also when it is a link) and reads only the columns of `_common_metadata`: the
    # refusals above are for names it reads, nothing more.
    folder = _folder_with_a_good_file(tmp_path)
    (folder / ".hidden").symlink_to(tmp_path, target_is_directory=True)
    pq.write_metadata(pa.schema([("key", pa.string())]), folder / "_common_metadata")
    doc = rc.json("log", "append", "A", "--file", str(folder), "--dry-run")
    assert (doc["ok"], doc["dry_run"]) == (True, True)


def _not_utf8(column: str) -> pa.Array:
    """Two rows; the second holds bytes that are not UTF-8 (Parquet stores them; Arrow does not check)."""
    values = pa.array([b'"ok"', b'"a\xff"'], pa.binary()).view(pa.string())
    if column == "tags":
        return pa.ListArray.from_arrays(pa.array([0, 1, 2], pa.int32()), values)
    return values


@pytest.mark.parametrize("column", ["type", "key", "tags", "payload"])
@pytest.mark.parametrize("in_folder", [False, True])
def test_issue19_8_parquet_strings_that_are_not_utf8_are_refused(
    rc: Replctl, tmp_path: Path, column: str, in_folder: bool
) -> None:
    # The check passed them (a payload crashed it), the JVM-free run refused, and Spark stored the bytes.
    rc.append("A", "e1")
    folder = _folder_with_a_good_file(tmp_path)
    file = _parquet(folder / "b.parquet", {column: _not_utf8(column)})
    given = folder if in_folder else file
    assert _refused_alike(rc, "log", "append", "A", "--file", str(given)) == (
        "bad-event",
        f"{file}: row 2: {column} is not UTF-8 (byte 2)",
        None,
    )


@pytest.mark.parametrize("name", ["_events.parquet", ".events.parquet", "_metadata_x.parquet"])
def test_m2_a_file_named_as_spark_skips_is_refused_whatever_its_size(
    rc: Replctl, tmp_path: Path, name: str
) -> None:
    # Spark skips a file so named even when given directly (no schema, or no events: exit 2); the JVM-free
    # run of a small file appended it, so whether it was appended depended on its size.
    rc.append("A", "e1")
    file = _parquet(tmp_path / name, {"key": pa.array(["b1"])})
    link = tmp_path / "events.parquet"
    link.symlink_to(name)
    for given in (file, link):
        assert _refused_alike(rc, "log", "append", "A", "--file", str(given)) == (
            "bad-file",
            f"{given}: Spark and the input check could read this differently: Spark skips a file so named",
            "rename the file",
        )


@pytest.mark.parametrize("kind", ["a device", "a FIFO"])
def test_an_event_file_that_is_no_regular_file_is_named_for_what_it_is(
    rc: Replctl, tmp_path: Path, kind: str
) -> None:
    path = "/dev/null"
    if kind == "a FIFO":
        path = str(tmp_path / "events.jsonl")
        os.mkfifo(path)
    assert _refused(rc, "log", "append", "A", "--file", path) == {
        "code": "bad-file",
        "message": f"{path} is {kind}, not a file",
        "hint": None,
    }


def test_an_event_file_that_is_not_there_is_no_such_file(rc: Replctl, tmp_path: Path) -> None:
    missing = tmp_path / "events.jsonl"
    assert _refused(rc, "log", "append", "A", "--file", str(missing)) == {
        "code": "bad-file",
        "message": f"no such file: {missing}",
        "hint": None,
    }
