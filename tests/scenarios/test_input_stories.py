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
