"""Replication stories through the CLI with exact log contents (issue: the replication engine).

Each story ends with `log verify` passing on every log.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clitool import Replctl
from crashed import died

from replctl.failpoints import FailpointCrash

pytestmark = pytest.mark.spark


def verify_all(rc: Replctl) -> None:
    doc = rc.json("log", "verify")
    assert doc["ok"], doc


def test_appended_events_get_em1_numbers_and_clocks(rc: Replctl) -> None:
    rc("location", "add", "A")
    rc.append("A", "e1", "e2")
    rc("log", "append", "A", "--event", '{"key": "e3", "type": "t", "tags": ["x"], "payload": {"n": 1}}')
    events = rc.json("log", "show", "A")["events"]
    assert [(e["seq"], e["origin"], e["origin_time"], e["vt"], e["key"]) for e in events] == [
        (1, "A", 1, {"A": 1}, "e1"),
        (2, "A", 2, {"A": 2}, "e2"),
        (3, "A", 3, {"A": 3}, "e3"),
    ]
    assert (events[2]["type"], events[2]["tags"], json.loads(events[2]["payload"])) == ("t", ["x"], {"n": 1})
    verify_all(rc)


def test_appends_are_refused_at_hub_and_read_only_locations(rc: Replctl) -> None:
    rc("location", "add", "H", "--role", "hub")
    doc = rc.json("log", "append", "H", "--event", '{"key": "x"}', expect=3)
    assert doc["error"]["code"] == "ROLE1"


def test_a_malformed_event_file_exits_2_and_writes_nothing(rc: Replctl, tmp_path: Path) -> None:
    rc("location", "add", "A")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"key": "ok"}\n{"key": 3}\n')
    doc = rc.json("log", "append", "A", "--file", str(bad), expect=2)
    assert "bad.jsonl:2" in doc["error"]["message"]
    assert rc.json("log", "show", "A")["events"] == []
    assert rc.json("status")["locations"][0]["seq"] == 0


def test_anomaly_1_is_refused_and_a_legal_filtered_topology_converges(rc: Replctl) -> None:
    for name in "ABC":
        rc("location", "add", name)
    rc("topology", "add", "A", "B")
    rc("topology", "add", "A", "C")
    rc("topology", "add", "C", "B")
    doc = rc.json("topology", "filter", "A", "C", "--set", "key = 'e3'", expect=3)
    assert doc["error"]["code"] == "F1"
    # The legal variant: without C→B, A→C is a bridge and may carry the filter.
    legal = Replctl(rc.root / "legal")
    legal("init")
    for name in "ABC":
        legal("location", "add", name)
    legal("topology", "add", "A", "B")
    legal("topology", "add", "A", "C", "--filter", "key = 'e3'")
    legal.append("A", "e1", "e2", "e3")
    legal("replicate", "A", "C")
    legal("replicate")
    assert legal.keys("A") == ["e1", "e2", "e3"]
    assert legal.keys("B") == ["e1", "e2", "e3"]
    assert legal.keys("C") == ["e3"]
    status = {(c["source"], c["target"]): c for c in legal.json("status")["connections"]}
    assert status[("A", "C")]["progress"] == 3  # REP2: progress advances over filtered events
    verify_all(legal)


def test_a_cycle_converges_and_duplicates_are_dropped_by_the_causality_filter(rc: Replctl) -> None:
    for name in "ABC":
        rc("location", "add", name)
    rc("topology", "add", "A", "B", "--both")
    rc("topology", "add", "B", "C", "--both")
    rc("topology", "add", "C", "A", "--both")
    rc.append("A", "a1", "a2")
    rc.append("B", "b1")
    rc.append("C", "c1")
    out = rc.json("replicate")
    assert out["ok"]
    logs = {name: rc.keys(name) for name in "ABC"}
    assert logs["A"][:2] == ["a1", "a2"]
    for name in "ABC":
        assert sorted(logs[name]) == ["a1", "a2", "b1", "c1"], logs
    # A second run finds nothing to do.
    again = rc.json("replicate")
    assert all(p["written"] == 0 for p in again["passes"])
    verify_all(rc)


def test_history_none_delivers_only_events_emitted_after_joining(rc: Replctl) -> None:
    rc("location", "add", "A")
    rc.append("A", "old1", "old2")
    rc("location", "add", "D")
    rc("topology", "add", "A", "D", "--history", "none")
    rc.append("A", "new1")
    rc("replicate")
    assert rc.keys("D") == ["new1"]
    d = next(loc for loc in rc.json("status")["locations"] if loc["name"] == "D")
    assert d["cvv"] == {"A": 3} and d["dvv"] == {"A": 2}
    verify_all(rc)


def test_a_pass_that_skips_every_event_as_held_counts_them_in_the_dry_run_as_in_the_run(rc: Replctl) -> None:
    # REP1 (1), REP2: the pass advanced D's progress over old1 and old2 while it said it read and skipped none.
    rc("location", "add", "A")
    rc.append("A", "old1", "old2")
    rc("location", "add", "D")
    rc("topology", "add", "A", "D", "--history", "none")
    counted = {"examined": 2, "written": 0, "skipped_causal": 2, "skipped_filter": 0, "progress": 2}
    [planned] = rc.json("replicate", "A", "D", "--dry-run")["passes"]
    [ran] = rc.json("replicate", "A", "D")["passes"]
    for report in (planned, ran):
        assert report["action"] == "advanced"
        assert {key: report[key] for key in counted} == counted
    assert rc.keys("D") == []


def group_with_outside_location(rc: Replctl) -> None:
    for name in ("A", "B", "D"):
        rc("location", "add", name)
    rc("topology", "add", "A", "B", "--both")
    rc("topology", "group", "G", "A", "B")
    for member in ("A", "B"):
        rc("topology", "add", member, "D", "--filter", "key <> 'internal'")
        rc("topology", "add", "D", member, "--filter", "key <> 'internal'")


def test_a_redundant_group_blocks_an_event_whose_group_part_is_ahead_until_the_group_catches_up(
    rc: Replctl,
) -> None:
    group_with_outside_location(rc)
    rc.append("A", "g")
    rc("replicate", "A", "D")
    rc.append("D", "d1")  # d1 depends on g
    blocked = rc.json("replicate", "D", "B")["passes"][0]
    # REP1(3): already g, D's copy of a group event, is ahead of B in the group part {A, B}: it must reach B
    # through the group, and d1 behind it waits too.
    assert blocked["blocked_at"] == 1 and blocked["written"] == 0
    assert blocked["progress"] == 0  # REP2: the first event blocked, progress unchanged
    assert rc.keys("B") == []
    rc("replicate", "A", "B")
    delivered = rc.json("replicate", "D", "B")["passes"][0]
    assert delivered["blocked_at"] is None
    assert rc.keys("B") == ["g", "d1"]
    rc("replicate")
    for name in ("A", "B", "D"):
        assert sorted(rc.keys(name)) == ["d1", "g"]
    verify_all(rc)


def test_a_skipped_admission_check_still_holds_back_what_understated_segment_rows_hide(rc: Replctl) -> None:
    # The pass skips RFC2's check when the source's segment rows show no event ahead of the target in the
    # group part. Rows that understate a LUB (the catalog and the store disagree) must not let an event through:
    # the written segment's LUB gives them away and nothing is committed.
    group_with_outside_location(rc)
    rc.append("A", "g")
    rc("replicate", "A", "D")
    rc.append("D", "d1")  # d1 depends on g
    from sqlalchemy import create_engine, text

    engine = create_engine(rc.db_url)
    with engine.begin() as conn:
        for seg_id, raw in conn.execute(text("SELECT id, vt_lub FROM segments WHERE location = 'D'")).all():
            lub = json.loads(raw) if isinstance(raw, str) else raw
            understated = {k: v for k, v in lub.items() if k not in ("A", "B")}
            conn.execute(
                text("UPDATE segments SET vt_lub = :v WHERE id = :id"),
                {"v": json.dumps(understated), "id": seg_id},
            )
    engine.dispose()
    out = rc("replicate", "D", "B", expect=6)
    assert out.stderr.splitlines()[0] == (
        "error: the source's segment rows understate the vector clocks of its events (the catalog and the "
        "store disagree); nothing was replicated"
    )
    assert rc.keys("B") == []
    b_to_d = next(c for c in rc.json("status")["connections"] if (c["source"], c["target"]) == ("D", "B"))
    assert b_to_d["progress"] == 0


def test_a_crash_between_writing_segments_and_committing_them_leaves_no_trace(
    rc: Replctl, monkeypatch: pytest.MonkeyPatch
) -> None:
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B")
    rc.append("A", "e1", "e2")
    monkeypatch.setenv("REPLCTL_FAILPOINT", "replicate.after-write")
    monkeypatch.setenv("REPLCTL_FAILPOINT_MODE", "raise")
    with pytest.raises(FailpointCrash):
        rc("replicate", "A", "B", expect=None)
    died(rc.db_url)
    monkeypatch.delenv("REPLCTL_FAILPOINT")
    assert rc.keys("B") == []  # the written segment is not in the catalog, so it is never read
    rc("replicate", "A", "B")
    assert rc.keys("B") == ["e1", "e2"]
    verify_all(rc)


def test_verify_names_the_first_violating_seq_of_a_corrupted_log(rc: Replctl, tmp_path: Path) -> None:
    rc("location", "add", "A")
    rc.append("A", "e1", "e2")
    verify_all(rc)
    # Corrupt the catalog's clock for A: CVV no longer equals the LUB of the stored vts (I3).
    from sqlalchemy import create_engine, text

    engine = create_engine(rc.db_url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE locations SET cvv = :v WHERE name = 'A'"), {"v": json.dumps({"A": 5})})
    engine.dispose()
    doc = rc.json("log", "verify", "A", expect=3)
    assert doc["ok"] is False and doc["error"]["code"] == "I3"


def test_compaction_merges_small_segments_and_collects_files_a_crash_left_behind(
    rc: Replctl, monkeypatch: pytest.MonkeyPatch
) -> None:
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B")
    for key in ("e1", "e2", "e3"):
        rc.append("A", key)
    monkeypatch.setenv("REPLCTL_FAILPOINT", "replicate.after-write")
    monkeypatch.setenv("REPLCTL_FAILPOINT_MODE", "raise")
    with pytest.raises(FailpointCrash):
        rc("replicate", "A", "B", expect=None)
    died(rc.db_url)
    monkeypatch.delenv("REPLCTL_FAILPOINT")
    before = rc.json("log", "show", "A")["events"]
    doc = rc.json("log", "compact", "A")
    assert (doc["segments_before"], doc["segments_after"]) == (3, 1)
    assert rc.json("log", "show", "A")["events"] == before
    gc = rc.json("log", "compact", "B", "--gc")
    # B was empty, so the crashed pass was the fast bootstrap: it had copied A's three segments.
    assert len(gc["orphans_removed"]) == 3 and all(p.startswith("B/") for p in gc["orphans_removed"])
    rc("replicate")
    assert rc.keys("B") == ["e1", "e2", "e3"]
    verify_all(rc)
