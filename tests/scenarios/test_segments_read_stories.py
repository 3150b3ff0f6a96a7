"""Segments checked on read (issue 19, cases 4 and 5): readers read exactly the catalogued files and a
difference is damage (DR0), never a partial read that spreads."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from clitool import Replctl

pytestmark = pytest.mark.spark


def _segment_folders(rc: Replctl, location: str) -> list[Path]:
    return sorted(p for p in (rc.store / location).iterdir() if p.is_dir() and p.name.startswith("seg-"))


def _parts(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.parquet"))


def _chain(rc: Replctl) -> None:
    """A<->B<->C; A's events in three segments, so that the pass A→B writes one segment of several files
    (B holds b1 already: a pass into an empty log copies segments instead). The pass runs on Spark
    (`local_limit` 0), which writes a part file per segment read; the local pass writes one."""
    rc.env["REPLCTL_LOCAL_LIMIT"] = "0"
    for name in ("A", "B", "C"):
        rc("location", "add", name)
    rc("topology", "add", "A", "B", "--both")
    rc("topology", "add", "B", "C", "--both")
    rc.append("B", "b1")
    rc.append("A", "a1", "a2")
    rc.append("A", "a3", "a4")
    rc.append("A", "a5", "a6")


def test_a_lost_part_file_never_spreads_holds_deletion_back_and_is_recovered_from_its_gap(
    rc: Replctl,
) -> None:
    _chain(rc)
    rc("replicate", "A", "B")
    _, segment = _segment_folders(rc, "B")
    parts = _parts(segment)
    assert len(parts) == 2
    parts[0].unlink()  # from a1 (B's seq 2) on: a gap between b1 and the second part's events
    assert [d["reason"] for d in rc.location("B")["damage"]] == ["files differ"]
    run = rc.json("replicate", expect=5)
    assert {(p["source"], p["target"]): p["action"] for p in run["passes"]} == {
        ("A", "B"): "damaged",
        ("B", "A"): "damaged",
        ("B", "C"): "damaged",
        ("C", "B"): "damaged",
    }
    assert rc.stored("C") == []
    assert rc.location("C")["cvv"] == {}  # C claims nothing B lost
    # B's CVV says it holds a1..a6, but its store lost a3, a4: A deletes nothing B may need (DR0, DEL3).
    held = rc.json("delete", "A", "--upto", "6", expect=5)
    assert (held["pending"], held["pending_upto"], held["deleted_upto"]) == (True, 6, 0)
    assert held["blocked_by"] == [{"target": "B", "first_blocked_seq": 1}]
    recovered = rc.json("recover", "location", "B")
    assert recovered["lost_from"] == 2  # the gap, not after the last stored seq (8)
    assert recovered["survivors_upto"] == 1
    assert [r["sources"] for r in recovered["rounds"]] == [["A", "C"]]
    a = [("B", 1, "b1"), *(("A", t, f"a{t}") for t in range(1, 7))]
    assert rc.stored("B") == a
    rc("replicate")  # retries A's pending deletion (DEL4): B holds everything again
    assert rc.stored("C") == a
    assert rc.location("A")["deleted_upto"] == 6
    assert rc.json("log", "verify")["logs"] == [
        {"location": n, "ok": True, "violations": []} for n in ("A", "B", "C")
    ]


def test_a_stray_parquet_copied_into_another_segment_folder_is_never_read(rc: Replctl) -> None:
    _chain(rc)
    rc("replicate", "A", "B")
    rc.append("A", "a7")
    rc("replicate", "A", "B")
    _, first, second = _segment_folders(rc, "B")
    stray = _parts(first)[0]
    shutil.copy2(stray, second / stray.name)  # a1, a2 a second time, beside a7
    assert "damage" not in rc.location("B")  # never read, so not damage: garbage
    rc("replicate")
    a = [("B", 1, "b1"), *(("A", t, f"a{t}") for t in range(1, 8))]
    assert rc.stored("B") == a
    assert rc.stored("C") == a
    assert rc.location("C")["cvv"] == {"A": 7, "B": 1}
    assert rc.json("log", "verify", "B", "C")["logs"] == [
        {"location": n, "ok": True, "violations": []} for n in ("B", "C")
    ]


def test_an_emptied_segment_folder_is_refused_by_log_show_not_skipped(rc: Replctl) -> None:
    rc("location", "add", "A")
    rc.append("A", "a1")
    rc.append("A", "a2")
    first, _ = _segment_folders(rc, "A")
    for part in _parts(first):
        part.unlink()
    shown = rc.json("log", "show", "A", expect=6)
    assert shown["error"] == {
        "code": "store-damaged",
        "message": "A's log is damaged: 1 catalogued segment(s) from seq 1 on are missing from the store or "
        f"differ from their catalog rows (missing at A/{first.name})",
        "hint": "replctl recover location A",
    }


def test_log_show_shows_exactly_the_catalogued_events_beside_a_stray_file(rc: Replctl) -> None:
    # Issue 19 case 5 for the local reader: a1 copied into a2's folder is not a2's (its row does not name
    # it), so `log show` shows a1, a2 once each instead of reading the folder or calling it damage.
    rc("location", "add", "A")
    rc.append("A", "a1")
    rc.append("A", "a2")
    first, second = _segment_folders(rc, "A")
    stray = _parts(first)[0]
    shutil.copy2(stray, second / stray.name)
    shown = rc.json("log", "show", "A")
    assert [(e["seq"], e["origin"], e["origin_time"], e["key"]) for e in shown["events"]] == [
        (1, "A", 1, "a1"),
        (2, "A", 2, "a2"),
    ]
    assert rc.json("log", "show", "A", "--from", "2")["events"][0]["key"] == "a2"
