"""Input through every path, appended exactly as given (issue 19 item 8): U+2028 inside JSON strings, and
Parquet paths read literally (never as Hadoop glob patterns)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from clitool import Replctl

pytestmark = pytest.mark.spark


def test_issue19_8_a_jsonl_line_holding_u2028_is_one_event(rc: Replctl, tmp_path: Path) -> None:
    rc("location", "add", "A")
    lines = tmp_path / "events.jsonl"
    lines.write_text(
        '{"key": "a\u2028b", "payload": {"text": "x\u2029y"}}\r\n{"key": "c\x85d", "tags": ["t\u2028"]}\n',
        encoding="utf-8",
    )
    rc("log", "append", "A", "--file", str(lines))
    events = rc.json("log", "show", "A")["events"]
    assert [(e["seq"], e["key"], e["tags"]) for e in events] == [
        (1, "a\u2028b", []),
        (2, "c\x85d", ["t\u2028"]),
    ]
    assert json.loads(events[0]["payload"]) == {"text": "x\u2029y"}


def _events(path: Path, *keys: str) -> Path:
    pq.write_table(pa.table({"key": pa.array(list(keys), pa.string())}), path)
    return path


def test_issue19_8_a_parquet_path_is_read_literally_not_as_a_glob(rc: Replctl, tmp_path: Path) -> None:
    rc("location", "add", "A")
    folder = tmp_path / "in"
    folder.mkdir()
    _events(folder / "events1.parquet", "other-1")
    bracketed = _events(folder / "events[1].parquet", "bracket-1", "bracket-2")
    starred = _events(folder / "*.parquet", "star-1")
    rc("log", "append", "A", "--file", str(bracketed))
    rc("log", "append", "A", "--file", str(starred))
    assert rc.keys("A") == ["bracket-1", "bracket-2", "star-1"]


def _show(rc: Replctl, location: str) -> list[tuple[int, str, list[str], str | None]]:
    return [(e["seq"], e["key"], e["tags"], e["payload"]) for e in rc.json("log", "show", location)["events"]]


# The same Spark column under different Arrow types (string and large_string, list and large_list) as well.
POOR = {"key": pa.array(["a1", "a2"], pa.large_string())}
RICH = {
    "key": pa.array(["b1", "b2"], pa.string()),
    "payload": pa.array(['{"x": 1}', '{"y": 2}'], pa.large_string()),
    "tags": pa.array([["t"], ["u", "v"]], pa.large_list(pa.string())),
}


@pytest.mark.parametrize(("poor_name", "rich_name"), [("part-a", "part-b"), ("part-b", "part-a")])
def test_m2_a_folder_of_files_with_different_columns_keeps_every_files_payload_and_tags(
    rc: Replctl, tmp_path: Path, poor_name: str, rich_name: str
) -> None:
    rc("location", "add", "A")
    folder = tmp_path / "in"
    folder.mkdir()
    pq.write_table(pa.table(POOR), folder / f"{poor_name}.parquet")
    pq.write_table(pa.table(RICH), folder / f"{rich_name}.parquet")
    assert rc.json("log", "append", "A", "--file", str(folder))["appended"] == 4
    poor: list[tuple[str, list[str], str | None]] = [("a1", [], None), ("a2", [], None)]
    rich: list[tuple[str, list[str], str | None]] = [
        ("b1", ["t"], '{"x": 1}'),
        ("b2", ["u", "v"], '{"y": 2}'),
    ]
    # The files in name order, each in row order; a column a file lacks is null (tags []) for its rows only.
    given = poor + rich if poor_name < rich_name else rich + poor
    assert _show(rc, "A") == [(seq, *event) for seq, event in enumerate(given, start=1)]


def test_m2_every_file_below_a_folder_is_read_as_it_is(rc: Replctl, tmp_path: Path) -> None:
    # A subfolder's files are events too (they were left out), and a folder named like a Hive partition is
    # just a folder (its name overrode the files' `key`).
    rc("location", "add", "A")
    folder = tmp_path / "in"
    (folder / "key=zzz").mkdir(parents=True)
    (folder / "sub").mkdir()
    pq.write_table(pa.table(POOR), folder / "a.parquet")
    pq.write_table(pa.table(RICH), folder / "key=zzz" / "b.parquet")
    pq.write_table(
        pa.table({"key": pa.array(["c1"]), "payload": pa.array(['{"z": 3}'])}), folder / "sub" / "c.parquet"
    )
    assert rc.json("log", "append", "A", "--file", str(folder))["appended"] == 5
    assert _show(rc, "A") == [
        (1, "a1", [], None),
        (2, "a2", [], None),
        (3, "b1", ["t"], '{"x": 1}'),
        (4, "b2", ["u", "v"], '{"y": 2}'),
        (5, "c1", [], '{"z": 3}'),
    ]


def test_m2_a_summary_file_with_fewer_columns_does_not_decide_the_columns(
    rc: Replctl, tmp_path: Path
) -> None:
    rc("location", "add", "A")
    folder = tmp_path / "in"
    folder.mkdir()
    pq.write_table(pa.table(RICH), folder / "b.parquet")
    # A stale summary (as older writers leave next to their part files) that lists `key` only.
    pq.write_metadata(pa.schema([("key", pa.string())]), folder / "_common_metadata")
    rc("log", "append", "A", "--file", str(folder))
    assert _show(rc, "A") == [(1, "b1", ["t"], '{"x": 1}'), (2, "b2", ["u", "v"], '{"y": 2}')]
