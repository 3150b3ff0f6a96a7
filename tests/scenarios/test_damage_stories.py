"""Damage is a state (DR0): a damaged or recovering location is shown so and takes no write until recovered."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from clitool import Replctl, lose_what_the_neighbour_deleted

pytestmark = pytest.mark.spark


def _refused(rc: Replctl, code: str, location: str, *args: str) -> None:
    doc = rc.json(*args, expect=4)
    assert doc["error"]["code"] == code, args
    assert doc["error"]["hint"] in (
        f"replctl recover location {location}",
        f"finish it: replctl recover location {location}",
    )


def test_a_damaged_location_is_shown_damaged_takes_no_write_and_loses_nothing_when_recovered(
    rc: Replctl,
) -> None:
    # issue 14, case 2: after the drill B looked active, took appends and replication, and the recovery
    # that followed dropped the appended event.
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "a1", "a2")
    rc("replicate")
    rc("drill", "disaster", "B", "--from", "1")
    b = rc.location("B")
    assert b["state"] == "damaged"
    assert [d["reason"] for d in b["damage"]] == ["missing"]
    shown = rc.json("location", "show", "B")
    assert shown["state"] == "damaged"
    # The text said "(read-write, active)" while the JSON said damaged.
    assert rc("location", "show", "B").stdout.splitlines()[0].startswith("B (read-write, damaged) seq=2")
    assert rc("location", "show", "B").stdout.splitlines()[-2:] == [
        f"  damaged: {shown['damage'][0]['path']} from seq 1: missing",
        "hint: replctl recover location B",
    ]
    before = rc.snapshot()
    damaged = rc.json("log", "append", "B", "--event", '{"key": "b1"}', expect=4)
    assert damaged["error"]["code"] == "damaged"
    assert damaged["error"]["message"].startswith("B's log is damaged: 1 catalogued segment(s) from seq 1 on")
    assert damaged["error"]["hint"] == "replctl recover location B"
    _refused(rc, "damaged", "B", "replicate", "A", "B")
    _refused(rc, "damaged", "B", "delete", "B", "--upto", "1")
    _refused(rc, "damaged", "B", "log", "compact", "B")
    _refused(rc, "damaged", "B", "log", "append", "B", "--event", '{"key": "b1"}', "--dry-run")
    assert rc.snapshot() == before
    # A full run waits at the damaged log in both directions and says so (exit 5: the rest ran).
    run = rc.json("replicate", expect=5)
    assert [(p["source"], p["target"], p["action"]) for p in run["passes"]] == [
        ("A", "B", "damaged"),
        ("B", "A", "damaged"),
    ]
    assert run["passes"][0]["reason"] == "waits: B's log is damaged (DR0); run: replctl recover location B"
    assert rc.keys("A") == ["a1", "a2"]
    rc("recover", "location", "B")
    assert rc.location("B")["state"] == "active" and "damage" not in rc.location("B")
    rc.append("B", "b1")
    rc("replicate")
    assert rc.keys("B") == ["a1", "a2", "b1"]
    assert rc.keys("A") == ["a1", "a2", "b1"]


def test_a_rewritten_segment_whose_files_differ_from_its_row_is_damage(rc: Replctl) -> None:
    rc("location", "add", "A")
    rc.append("A", "a1", "a2")
    rc("drill", "disaster", "A", "--from", "2")  # rewrites the one segment in place with a1 only
    a = rc.location("A")
    assert a["state"] == "damaged"
    assert [d["reason"] for d in a["damage"]] == ["files differ"]
    shown = rc.json("log", "show", "A", expect=6)
    assert shown["error"]["code"] == "store-damaged"
    _refused(rc, "damaged", "A", "log", "append", "A", "--event", '{"key": "a3"}')


def _a_three_segments_both_ways(rc: Replctl, keys: tuple[str, str, str] = ("a1", "a2", "a3")) -> None:
    """A↔B, three events (`keys`) appended at A one segment each, replicated to B."""
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    for key in keys:
        rc.append("A", key)
    rc("replicate")


def test_a_compacted_segment_cut_short_is_recovered_from_its_neighbour_not_failed_on_its_checksum(
    rc: Replctl,
) -> None:
    # A segment Spark wrote (here by compaction) has Hadoop's `.crc` side file; the drill's cut left it stale,
    # and every read of the segment (the census, recovery, its dry run, `log verify`) then exited 6 with a
    # ChecksumException: the location stayed damaged for good. replctl's own checks find the damage (DR0).
    _a_three_segments_both_ways(rc)
    rc("log", "compact", "A")  # Spark merges the three segments into one
    [segment] = rc.json("location", "show", "A")["segments"]
    folder = rc.store / segment["path"]
    [data] = folder.glob("part-*.parquet")
    assert (folder / f".{data.name}.crc").is_file()  # what made the cut fail every read
    rc("drill", "disaster", "A", "--from", "2", "--yes")
    assert [d["reason"] for d in rc.location("A")["damage"]] == ["files differ"]
    plan = rc("recover", "location", "A", "--dry-run").stdout.splitlines()
    assert plan == [
        "A: events from seq 2 on are lost",
        "  would reset progress A→B: 3 → 1 (DR2)",
        "  would reset progress B→A: 3 → 0 (DR2)",
        "  round 1: from B (DR4)",
        "A: clock 3 (the events recovered take the seqs after it), CVV {A:3}",
    ]
    assert rc("recover", "location", "A").stdout.splitlines() == [
        "A: events from seq 2 on are lost",
        "  reset progress A→B: 3 → 1 (DR2)",
        "  reset progress B→A: 3 → 0 (DR2)",
        "  round 1: from B, 2 event(s) written (DR4)",
        "A: clock 3 → 6, CVV {A:3}",
    ]
    assert rc.location("A")["state"] == "active"
    # a1 survived the cut (DR1); a2 and a3 came back from B under new seqs.
    assert [(e["seq"], e["key"]) for e in rc.json("log", "show", "A")["events"]] == [
        (1, "a1"),
        (5, "a2"),
        (6, "a3"),
    ]
    assert rc("log", "verify", "A").stdout.splitlines() == ["A: ok (I1–I7)"]


def test_an_incomplete_recovery_leaves_the_location_recovering_with_the_same_refusals(rc: Replctl) -> None:
    # issue 14, case 2 (second half): after a recovery that exited 5 the location looked active and took appends.
    lose_what_the_neighbour_deleted(rc, lost_from=1)
    rc("recover", "location", "A", expect=5)  # B fails DR4: A's own events were deleted at B
    assert rc.location("A")["state"] == "recovering"
    _refused(rc, "recovering", "A", "log", "append", "A", "--event", '{"key": "a4"}')
    _refused(rc, "recovering", "A", "delete", "A", "--upto", "1")
    _refused(rc, "recovering", "A", "log", "compact", "A")
    _refused(rc, "recovering", "A", "replicate", "B", "A")
    rc("recover", "location", "A", expect=5)  # still refused: still recovering
    assert rc.location("A")["state"] == "recovering"
    rc("recover", "location", "A", "--accept-loss")
    assert rc.location("A")["state"] == "active"
    rc.append("A", "a4")
    assert [(e["seq"], e["key"]) for e in rc.json("log", "show", "A")["events"]] == [(4, "a4")]


def _a_b_c_in_a_line(rc: Replctl, a_key: str, c_key: str) -> None:
    """A↔B↔C, one event appended at A (`a_key`) and one at C (`c_key`), replicated everywhere."""
    for name in ("A", "B", "C"):
        rc("location", "add", name)
    rc("topology", "add", "A", "B", "--both")
    rc("topology", "add", "B", "C", "--both")
    rc.append("A", a_key)
    rc.append("C", c_key)
    rc("replicate")


def test_pruning_a_retired_clock_refuses_a_damaged_log_in_the_dry_run_as_in_the_run(rc: Replctl) -> None:
    # The dry run listed B's missing segments as "to rewrite" and exited 0; the run then retired C, read B,
    # and refused with exit 4, half done.
    _a_b_c_in_a_line(rc, "a1", "c1")
    rc("drill", "disaster", "B", "--from", "1")
    rc("topology", "remove", "B", "C")
    rc("topology", "remove", "C", "B")
    before = rc.snapshot()
    for dry in (["--dry-run"], []):
        refused = rc.json("location", "retire", "C", "--prune-clock", *dry, expect=4)
        assert refused["error"]["code"] == "damaged"
        assert refused["error"]["message"].startswith(
            "B's log is damaged: 2 catalogued segment(s) from seq 1 on"
        )
        assert refused["error"]["hint"] == "replctl recover location B"
        assert rc.snapshot() == before
    assert rc.location("C")["state"] == "active"  # RET1 and the census come before anything is recorded
    rc("recover", "location", "B")
    rc("location", "retire", "C", "--prune-clock")
    assert rc.location("C")["state"] == "retired"
    assert rc.keys("B") == ["a1", "c1"]
    assert all("C" not in event["vt"] for event in rc.json("log", "show", "B")["events"])


def test_a_recovering_locations_pending_deletion_waits_and_replication_of_the_rest_goes_on(
    rc: Replctl,
) -> None:
    # DEL4's retry after a full replicate refused the whole run (exit 4, `recovering`) when the recovering
    # location had a pending deletion; the deletion waits for the recovery's end, as every write to it (DR0).
    for name in ("A", "B", "C", "D"):
        rc("location", "add", name)
    rc("topology", "add", "A", "B", "--both")
    rc("topology", "add", "A", "C")
    rc("topology", "add", "D", "C")
    rc.append("A", "a1", "a2")
    rc("replicate", "A", "B")
    pending = rc.json("delete", "A", "--upto", "2", expect=5)  # C has not received a1, a2 (DEL3)
    assert pending["pending_upto"] == 2
    rc("replicate", "B", "A")
    rc("delete", "B", "--upto", "2")  # B's reader A holds them
    rc("drill", "disaster", "A", "--from", "1")
    rc("recover", "location", "A", expect=5)  # B fails DR4: it deleted what A lost
    assert rc.location("A")["state"] == "recovering"
    rc.append("D", "d1")
    # B→A waits for A's recovery (DR0), as a pass at a damaged log does: the run is incomplete (exit 5).
    run = rc.json("replicate", expect=5)
    assert ("D", "C", "copied") in [(p["source"], p["target"], p["action"]) for p in run["passes"]]
    assert {(p["source"], p["action"], p["reason"]) for p in run["passes"] if p["target"] == "A"} == {
        ("B", "wait", "waits: A is recovering (DR0)")
    }
    assert run["deletions"] == []
    assert rc.keys("C") == ["d1"]
    assert [(p["location"], p["requested_upto"]) for p in rc.json("status")["pending_deletions"]] == [
        ("A", 2)
    ]
    # `status` said "no target holds it back now; it runs at the next replicate": the run above left it.
    assert (
        "pending deletion at A up to 2, waits: A is recovering (DR0); run: replctl recover location A\n"
    ) in rc("status").stdout


def test_a_damaged_logs_pending_deletion_that_no_target_holds_back_waits_for_its_recovery(
    tmp_path: Path,
) -> None:
    # `status` said "no target holds it back now; it runs at the next replicate", and the next replicate left
    # it pending, saying it "still waits for ;" (no target): a damaged log decides no deletion (DR0).
    rc = Replctl.initialised(tmp_path, "A", "B")
    rc("topology", "add", "A", "B")
    rc.append("A", "a1", "a2", "a3")
    # B lacks them (DEL3); then A loses its whole log.
    assert rc.json("delete", "A", "--upto", "3", expect=5)["pending"] is True
    rc("drill", "disaster", "A", "--from", "1")
    assert rc.location("A")["state"] == "damaged"
    waits = "waits: A's log is damaged (DR0); run: replctl recover location A"
    assert f"pending deletion at A up to 3, {waits}; held back by B too\n" in rc("status").stdout
    rc("topology", "remove", "A", "B")
    assert rc.json("status")["pending_deletions"] == [
        {"location": "A", "requested_upto": 3, "blocked_by": []}
    ]
    assert f"pending deletion at A up to 3, {waits}\n" in rc("status").stdout
    ran = rc("replicate")
    assert (
        ran.stdout.splitlines()[-1] == f"pending deletion at A still {waits}; physically deleted up to 0 of 3"
    )
    planned = rc("replicate", "--dry-run")
    assert (
        planned.stdout.splitlines()[-1]
        == f"pending deletion at A: would still {waits.replace('waits', 'wait')}"
    )
    assert [p["location"] for p in rc.json("status")["pending_deletions"]] == ["A"]


def test_a_connection_that_ran_after_the_recovery_no_longer_says_it_waits_for_one_dr0(rc: Replctl) -> None:
    # A pass that waited for A's recovery stored why on the connection; once the connection ran again, that
    # reason was kept and sent the operator to recover a healthy location.
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "a1")
    rc("replicate")
    rc("drill", "disaster", "A", "--from", "1", "--yes")
    rc("replicate", expect=5)
    waits = "waits: A's log is damaged (DR0); run: replctl recover location A"
    connections = rc.json("status")["connections"]
    assert [(c["source"], c["target"], c["reason"]) for c in connections] == [
        ("A", "B", waits),
        ("B", "A", waits),
    ]
    rc("recover", "location", "A")
    rc.append("A", "a2")
    planned = rc.json("replicate", "--dry-run")["passes"]
    assert [(p["source"], p["target"], p["reason"]) for p in planned] == [
        ("A", "B", None),
        ("B", "A", "decided once A→B has run"),
        ("A", "B", "decided once B→A has run"),
    ]
    ran = rc.json("replicate")["passes"]
    assert {(p["source"], p["target"]): p["reason"] for p in ran} == {("A", "B"): None, ("B", "A"): None}
    connections = rc.json("status")["connections"]
    assert [(c["source"], c["target"], c["state"], c["reason"]) for c in connections] == [
        ("A", "B", "active", None),
        ("B", "A", "active", None),
    ]
    assert rc.keys("A") == ["a1", "a2"] and rc.keys("B") == ["a1", "a2"]
    assert rc("status").stdout.count("recover location") == 0


def _damage_file(rc: Replctl, location: str, index: int, damage: str) -> None:
    """Truncate or remove the data file of `location`'s `index`-th segment (in seq order)."""
    folder = sorted((rc.store / location).glob("seg-*"))[index]
    data = next(f for f in folder.iterdir() if f.suffix == ".parquet")
    if damage == "truncated":
        data.write_bytes(data.read_bytes()[:100])
    elif damage == "zeroed":  # a torn write: the recorded size, no Parquet any more
        data.write_bytes(bytes(data.stat().st_size))
    else:
        data.unlink()


def _stored_bytes(rc: Replctl, location: str) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in (rc.store / location).rglob("*") if p.is_file()}


@pytest.mark.parametrize("damage", ["truncated", "zeroed", "missing"])
def test_intact_events_past_a_gap_in_the_middle_of_a_log_are_discarded_only_with_consent(
    rc: Replctl, damage: str
) -> None:
    # DR0: a gap in the middle of A's log counts as a suffix loss, so the recovery discards the intact events
    # after it. A alone stores a2 and a3: with a truncated a1 file the recovery removed them with exit 0.
    rc("location", "add", "A")
    for key in ("a1", "a2", "a3"):
        rc.append("A", key)
    _damage_file(rc, "A", 0, damage)
    files, before = _stored_bytes(rc, "A"), rc.snapshot()
    for dry_run in ([], ["--dry-run"]):
        assert rc.json("recover", "location", "A", *dry_run, expect=3)["error"] == {
            "code": "DR0",
            "message": "refused [DR0]: recover location A would discard A:2..3, which A still stores intact "
            "and no other location stores; nothing was changed",
            "hint": "replctl recover location A --accept-loss",
        }
    assert _stored_bytes(rc, "A") == files and rc.snapshot() == before
    done = rc.json("recover", "location", "A", "--accept-loss")
    assert done["discarded"] == {"A": [2, 3]}
    assert rc.keys("A") == []


def test_a_restore_asks_before_it_discards_intact_events_past_a_gap_after_the_backup(rc: Replctl) -> None:
    # BK2 with DR0's consent: a1 is in the backup, a2's file is truncated, a3 is intact and only A stores it.
    rc("location", "add", "A")
    rc.append("A", "a1")
    made = rc.json("backup", "create", "A")["backups"][0]["id"]
    rc.append("A", "a2")
    rc.append("A", "a3")
    _damage_file(rc, "A", 1, "truncated")
    files, before = _stored_bytes(rc, "A"), rc.snapshot()
    for dry_run in ([], ["--dry-run"]):
        error = rc.json("recover", "location", "A", "--from-backup", made, *dry_run, expect=3)["error"]
        assert error == {
            "code": "DR0",
            "message": f"refused [DR0]: recover location A --from-backup {made} would discard A:3, which A "
            "still stores intact and no other location stores; nothing was changed",
            "hint": f"replctl recover location A --from-backup {made} --accept-loss",
        }
    assert _stored_bytes(rc, "A") == files and rc.snapshot() == before
    done = rc.json("recover", "location", "A", "--from-backup", made, "--accept-loss")
    assert done["discarded"] == {"A": [3, 3]}
    assert rc.keys("A") == ["a1"]


@pytest.mark.parametrize("damage", ["truncated", "removed"])
def test_retiring_a_location_whose_log_is_damaged_is_refused_in_the_dry_run_as_in_the_run(
    rc: Replctl, damage: str
) -> None:
    # RET1's scan read A's log through the files still there: a2's segment, truncated or removed, counted as
    # holding nothing, so A retired (exit 0) and a2, stored only at A, was gone with it. DR0: a damaged log
    # is neither read nor decided on.
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B")
    rc.append("A", "a1")
    rc("replicate")
    rc.append("A", "a2")
    rc("topology", "remove", "A", "B")
    segment = rc.json("location", "show", "A")["segments"][-1]
    [data] = (rc.store / segment["path"]).glob("part-*.parquet")
    reason = {"truncated": "files differ", "removed": "missing"}[damage]
    if damage == "truncated":
        data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])
    else:
        data.unlink()
    damaged = data.read_bytes() if data.exists() else None
    before = rc.snapshot()
    shown = rc.json("location", "show", "A")
    for dry in (["--dry-run"], []):
        refused = rc.json("location", "retire", "A", *dry, expect=4)["error"]
        assert refused == {
            "code": "damaged",
            "message": "A's log is damaged: 1 catalogued segment(s) from seq 2 on are missing from the store or "
            f"differ from their catalog rows ({reason} at {segment['path']}); it is neither read nor written "
            "until it is recovered (DR0)",
            "hint": "replctl recover location A",
        }
        assert rc("location", "retire", "A", *dry, expect=None).code == 4  # the text run alike
        assert rc.snapshot() == before
    assert rc.json("location", "show", "A") == shown  # the log's segments as they were
    assert rc.location("A")["state"] == "damaged"
    assert (data.read_bytes() if data.exists() else None) == damaged


def test_a_gap_whose_later_events_a_neighbour_stores_is_recovered_without_asking(rc: Replctl) -> None:
    # The consent is for events no other location stores: B holds a2 and a3, so nothing is asked and all
    # three come back from B (DR3, DR4).
    _a_three_segments_both_ways(rc)
    _damage_file(rc, "A", 0, "truncated")
    done = rc.json("recover", "location", "A")
    assert (done["lost_from"], done["discarded"], done["lost"]) == (1, {}, {})
    assert rc.keys("A") == ["a1", "a2", "a3"]


def _rot_file(rc: Replctl, location: str, index: int, key: str | None) -> str:
    """Change one byte of `location`'s `index`-th segment's data file at its size: in the value `key` (bit
    rot the footer and the rows survive), or with `key` None in the first page's header (the footer still
    parses, the data no longer decodes). The file is the one holding `key` (a segment Spark wrote may have
    several); returns its name."""
    folder = sorted((rc.store / location).glob("seg-*"))[index]
    files = sorted(f for f in folder.iterdir() if f.suffix == ".parquet")
    data = files[0] if key is None else next(f for f in files if key.encode() in f.read_bytes())
    raw = bytearray(data.read_bytes())
    at = 4 if key is None else raw.find(key.encode()) + len(key) - 1
    raw[at] ^= 0xFF if key is None else 0x01
    data.write_bytes(bytes(raw))
    return data.name


def _changed_refusal(how: str = "") -> dict[str, str]:
    return {
        "code": "DR0",
        "message": f"refused [DR0]: recover location A{how} would discard the events of seq 2 of A's log, in a "
        "file whose bytes changed since it was written (log verify names it; what other locations store of "
        "them comes back from them); nothing was changed",
        "hint": f"replctl recover location A{how} --accept-loss (copy the changed file aside first to keep "
        "what it still reads)",
    }


@pytest.mark.parametrize("key", ["rot-a2", None], ids=["still-decodes", "no-longer-decodes"])
def test_a_file_whose_bytes_changed_at_its_size_is_recovered_from_its_neighbour_with_consent(
    rc: Replctl, key: str | None
) -> None:
    # `log verify` reports a file whose SHA-256 differs from its row (SEG) and sends the operator to
    # `recover`, which read the file (its footer parsed) and found "nothing to recover", or failed on its
    # bytes (exit 6), as `log verify` itself did. Now the file is never read: `log verify` reports it, and
    # recovery counts it lost from its first seq (DR0). What it held is known only by its row's seq range, so
    # discarding it needs consent; then B serves the events again (DR4) and nothing is lost.
    _a_three_segments_both_ways(rc, ("rot-a1", "rot-a2", "rot-a3"))
    name = _rot_file(rc, "A", 1, key)
    [seg] = [s for s in rc.json("location", "show", "A")["segments"] if s["seq_lo"] == 2]
    [log] = rc.json("log", "verify", "A", expect=3)["logs"]
    assert [(v["invariant"], v["seq"], v["message"]) for v in log["violations"]] == [
        ("SEG", 2, f"file {seg['path']}/{name} differs from its catalog row's SHA-256")
    ]
    files, before = _stored_bytes(rc, "A"), rc.snapshot()
    for dry_run in ([], ["--dry-run"]):
        assert rc.json("recover", "location", "A", *dry_run, expect=3)["error"] == _changed_refusal()
    assert _stored_bytes(rc, "A") == files and rc.snapshot() == before
    assert rc("recover", "location", "A", "--accept-loss", "--dry-run").stdout.splitlines() == [
        "A: events from seq 2 on are lost",
        "  would reset progress A→B: 3 → 1 (DR2)",
        "  would reset progress B→A: 3 → 0 (DR2)",
        "  round 1: from B (DR4)",
        "A: clock 3 (the events recovered take the seqs after it), CVV {A:3}",
    ]
    done = rc.json("recover", "location", "A", "--accept-loss")
    assert (done["lost_from"], done["discarded"], done["lost"]) == (2, {}, {})
    assert [(e["seq"], e["key"]) for e in rc.json("log", "show", "A")["events"]] == [
        (1, "rot-a1"),
        (5, "rot-a2"),
        (6, "rot-a3"),
    ]
    assert rc("log", "verify", "A").stdout.splitlines() == ["A: ok (I1–I7)"]


def test_events_only_a_file_whose_bytes_changed_holds_are_discarded_only_with_consent(rc: Replctl) -> None:
    # DR0: A alone stores rot-a2 (in the rotted file) and rot-a3 (intact, after it): the refusal names
    # rot-a3 by identity and rot-a2 by the seq range its file's row recorded, without calling it intact.
    rc("location", "add", "A")
    for key in ("rot-a1", "rot-a2", "rot-a3"):
        rc.append("A", key)
    _rot_file(rc, "A", 1, "rot-a2")
    files, before = _stored_bytes(rc, "A"), rc.snapshot()
    for dry_run in ([], ["--dry-run"]):
        assert rc.json("recover", "location", "A", *dry_run, expect=3)["error"] == {
            "code": "DR0",
            "message": "refused [DR0]: recover location A would discard A:3, which A still stores intact and no "
            "other location stores, and the events of seq 2 of A's log, in a file whose bytes changed since it "
            "was written (log verify names it; what other locations store of them comes back from them); "
            "nothing was changed",
            "hint": "replctl recover location A --accept-loss (copy the changed file aside first to keep what "
            "it still reads)",
        }
    assert _stored_bytes(rc, "A") == files and rc.snapshot() == before
    done = rc.json("recover", "location", "A", "--accept-loss")
    assert (done["discarded"], done["lost"]) == ({"A": [3, 3]}, {"A": [2, 3]})
    assert rc.keys("A") == ["rot-a1"]
    assert rc("log", "verify", "A").stdout.splitlines() == ["A: ok (I1–I7)"]


@pytest.mark.parametrize("reader", ["local", "spark"])
def test_a_file_whose_bytes_changed_is_neither_replicated_nor_compacted(rc: Replctl, reader: str) -> None:
    # A byte flipped inside a data page at the file's size (bit rot, a foreign overwrite) still decoded:
    # every read but `log verify`'s took the changed event as intact, `replicate` spread it, `log compact`
    # rewrote it under a fresh digest, and then `log verify` said ok and `recover` found nothing lost. Each
    # read now checks every page against its CRC, and a failed check is damage (DR0): nothing is read from
    # the file, written from it or committed, and the refusal names the file and sends to recovery.
    if reader == "spark":
        rc.env["REPLCTL_LOCAL_LIMIT"] = "0"  # the small pass runs on Spark, not the local reader
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B")
    rc.append("A", "rot-a1")
    rc("replicate")  # B holds an event already: the next pass reads A's events, it copies no segments
    rc.append("A", "rot-a2")
    rc.append("A", "rot-a3")
    name = _rot_file(rc, "A", 1, "rot-a2")
    [seg] = [s for s in rc.json("location", "show", "A")["segments"] if s["seq_lo"] == 2]
    b_log, a_files, before = rc.json("log", "show", "B")["events"], _stored_bytes(rc, "A"), rc.snapshot()
    for args in (["replicate", "A", "B"], ["log", "compact", "A"]):
        error = rc.json(*args, expect=4)["error"]
        assert (error["code"], error["hint"]) == ("damaged", "replctl recover location A"), args
        # Spark's words or the local reader's (under `pytest --engine` every read is Spark's): both name the
        # file and say it is damage (DR0).
        assert error["message"].startswith("A's log is damaged: "), error
        assert name in error["message"] and error["message"].endswith("(DR0)"), error
        assert rc(*args, expect=None).code == 4, args  # the text run alike
    # A full run waits at the damaged log and says so (exit 5: the rest ran).
    [waits] = rc.json("replicate", expect=5)["passes"]
    assert (waits["action"], waits["reason"].endswith("run: replctl recover location A")) == ("damaged", True)
    assert name in waits["reason"]
    assert rc.json("log", "show", "B")["events"] == b_log
    assert [(e["origin"], e["origin_time"], e["key"]) for e in b_log] == [("A", 1, "rot-a1")]
    assert _stored_bytes(rc, "A") == a_files and rc.snapshot() == before
    [log] = rc.json("log", "verify", "A", expect=3)["logs"]
    assert [(v["invariant"], v["seq"], v["message"]) for v in log["violations"]] == [
        ("SEG", 2, f"file {seg['path']}/{name} differs from its catalog row's SHA-256")
    ]


def test_a_file_whose_bytes_changed_is_not_rewritten_by_a_clock_pruning(rc: Replctl) -> None:
    # The pruning of a retired clock rewrote a segment whose file had changed at its size under a fresh
    # digest: `log verify` then said ok and the changed event passed for intact. Then its read failed the
    # file's page CRCs, but in the middle of the run: the dry run had said the pruning would go through, and
    # the run retired C and pruned A's log before it met B's file (RET2 half done). The files the pruning
    # would rewrite are now hashed first: dry run and run refuse alike (DR0), and nothing changes.
    _a_b_c_in_a_line(rc, "rot-a1", "rot-c1")
    name = _rot_file(rc, "B", 1, "rot-c1")  # B's seq 2, whose vt holds C: a segment the pruning rewrites
    rc("topology", "remove", "B", "C")
    rc("topology", "remove", "C", "B")
    [seg] = [s for s in rc.json("location", "show", "B")["segments"] if s["seq_lo"] == 2]
    files, before = {x: _stored_bytes(rc, x) for x in ("A", "B", "C")}, rc.snapshot()
    for dry_run in (["--dry-run"], []):
        error = rc.json("location", "retire", "C", "--prune-clock", *dry_run, expect=4)["error"]
        assert error == {
            "code": "damaged",
            "message": f"B's log is damaged: {seg['path']}/{name} changed since it was written (its SHA-256 "
            "differs from its catalog row's) and the pruning would rewrite it; nothing was retired, pruned or "
            "written (DR0)",
            "hint": "replctl recover location B",
        }, dry_run
        assert rc("location", "retire", "C", "--prune-clock", *dry_run, expect=None).code == 4
    assert {x: _stored_bytes(rc, x) for x in ("A", "B", "C")} == files and rc.snapshot() == before
    assert rc.location("C")["state"] == "active"
    assert [e["vt"] for e in rc.json("log", "show", "A")["events"]] == [{"A": 1}, {"C": 1}]
    [log] = rc.json("log", "verify", "B", expect=3)["logs"]
    assert [(v["invariant"], v["seq"], v["message"]) for v in log["violations"]] == [
        # The changed file is not read: C's entry, which only its event carried, is missing from the LUB.
        ("I3", None, "CVV {A:1,C:1} ≠ LUB of the stored vts ⊔ DVV ⊔ baselines = {A:1}"),
        ("SEG", 2, f"file {seg['path']}/{name} differs from its catalog row's SHA-256"),
    ]
    # The way out it names: B recovers the changed event from its neighbours, then the pruning goes through.
    rc("recover", "location", "B", "--accept-loss")
    rc("location", "retire", "C", "--prune-clock")
    assert rc.location("C")["state"] == "retired"
    assert rc("log", "verify").code == 0


def _three_rotted_events(rc: Replctl) -> None:
    """A alone, rot-a1..rot-a3 appended one by one: three segments of one event each."""
    rc("location", "add", "A")
    for key in ("rot-a1", "rot-a2", "rot-a3"):
        rc.append("A", key)


def _restored_exactly(rc: Replctl, backup: str) -> None:
    """`recover location A --from-backup BACKUP` loses and discards nothing, and A's log is then exactly
    rot-a1..rot-a3: identities, contents and seqs (BK2)."""
    done = rc.json("recover", "location", "A", "--from-backup", backup)
    assert (done["backup"], done["lost"], done["discarded"], done["refused"]) == (backup, {}, {}, [])
    assert [
        (e["seq"], e["origin"], e["origin_time"], e["key"]) for e in rc.json("log", "show", "A")["events"]
    ] == [
        (1, "A", 1, "rot-a1"),
        (2, "A", 2, "rot-a2"),
        (3, "A", 3, "rot-a3"),
    ]
    assert rc("log", "verify", "A").stdout.splitlines() == ["A: ok (I1–I7)"]


def test_a_changed_file_whose_events_a_backup_holds_is_sent_to_the_backup_not_to_accept_loss(
    rc: Replctl,
) -> None:
    # BK3 before DR0: A alone stores rot-a2 and rot-a3, and its backup holds both. One byte of the file of
    # seq 2 changed at its size (bit rot) after the backup. The recovery asked DR0 first, which refused for
    # the changed file with `--accept-loss` as the hint: an operator following it lost rot-a2 and rot-a3 for
    # good, though restoring the backup brings them back without any consent (BK2).
    _three_rotted_events(rc)
    made = rc.json("backup", "create", "A")["backups"][0]["id"]
    _rot_file(rc, "A", 1, "rot-a2")
    files = _stored_bytes(rc, "A")
    rc.refused_backup_held("A", "A: 2..3", made)
    assert _stored_bytes(rc, "A") == files
    # The hint, followed as it reads, restores A's exact events: identities, contents and seqs (BK2).
    _restored_exactly(rc, made)


def _said_of_the_rot(path: str) -> str:
    return (
        f"A's log holds the same changed bytes (its segment(s) {path} differ from the SHA-256 their catalog rows "
        "recorded: `replctl log verify A`), so a new backup would copy them again"
    )


def test_a_backup_taken_of_a_rotted_file_sends_the_operator_to_recovery_not_round_to_a_new_backup(
    rc: Replctl,
) -> None:
    # BK1: a backup copies a file under the digest its row recorded at write. The file of seq 2 rotted at its
    # size before the backup, which copied the changed bytes: `backup verify` found it damaged and said to
    # remove the copy and run `backup create` again, which copied the same bytes, damaged again, for ever.
    # The live file is hashed now: it changed too, so the way out is a recovery (no other backup holds seq 2).
    _three_rotted_events(rc)
    _rot_file(rc, "A", 1, "rot-a2")
    made = rc.json("backup", "create", "A")["backups"][0]["id"]
    [path] = [s["path"] for s in rc.json("location", "show", "A")["segments"] if s["seq_lo"] == 2]
    hint = (
        f"{_said_of_the_rot(path)}, and no other backup holds seq 2 whole: recover A without one, accepting the "
        "loss: `replctl recover location A --accept-loss`"
    )
    damaged = {
        "code": "backup-damaged",
        "message": f"backup {made} is damaged: {path}: digest differs from the manifest's",
        "hint": hint,
    }
    assert rc.json("backup", "verify", expect=6)["error"] == damaged
    assert rc("backup", "verify", expect=6).stdout.splitlines() == [
        f"{made}: DAMAGED: {path}: digest differs from the manifest's",
        f"hint: {hint}",
    ]
    assert rc.json("recover", "location", "A", "--from-backup", made, expect=6)["error"] == damaged
    # What the old hint led to: the copy removed and a new backup made, which is damaged alike.
    shutil.rmtree(rc.backups / "segments" / path)
    again = rc.json("backup", "create", "A")["backups"][0]["id"]
    assert rc.json("backup", "verify", again, expect=6)["error"]["hint"] == hint
    # The hint, followed: the changed file goes with what follows it in the log, which only A stored (DR0).
    done = rc.json("recover", "location", "A", "--accept-loss")
    assert (done["lost_from"], done["discarded"], done["lost"]) == (2, {"A": [3, 3]}, {"A": [2, 3]})
    assert rc.keys("A") == ["rot-a1"]
    assert rc("log", "verify", "A").stdout.splitlines() == ["A: ok (I1–I7)"]


def test_a_backup_taken_of_a_rotted_file_names_an_older_backup_that_holds_its_seqs_whole(rc: Replctl) -> None:
    # The older backup was taken before a compaction merged the three segments: the merged file rotted, and
    # the backup of it is damaged, but the older one holds seqs 1..3 in the segments it copied whole (BK2).
    _three_rotted_events(rc)
    older = rc.json("backup", "create", "A")["backups"][0]["id"]
    rc("log", "compact", "A")
    _rot_file(rc, "A", 0, None)  # the merged file holds the keys compressed: its first page header
    made = rc.json("backup", "create", "A")["backups"][0]["id"]
    [path] = [s["path"] for s in rc.json("location", "show", "A")["segments"]]
    hint = (
        f"{_said_of_the_rot(path)}: restore backup {older}, which holds seq 1..3 whole: "
        f"`replctl recover location A --from-backup {older}`"
    )
    out = rc.json("backup", "verify", expect=6)
    assert [(b["id"], b["ok"]) for b in out["backups"]] == [(older, True), (made, False)]
    assert out["error"]["hint"] == hint
    assert rc.json("recover", "location", "A", "--from-backup", made, expect=6)["error"]["hint"] == hint
    # The hint, followed: A's log is the older backup's, its exact events under their seqs (BK2).
    _restored_exactly(rc, older)


@pytest.mark.parametrize(
    ("older", "damage"),
    [("file_contents = NULL", "zeroed"), ("files = NULL, file_contents = NULL", "missing")],
)
def test_log_verify_reports_an_unreadable_segment_whose_older_row_records_no_digest(
    rc: Replctl, older: str, damage: str
) -> None:
    # A row from before revision 0005 records no digest (before 0004, no files either): `held` left out its
    # zeroed or removed data file and nothing reported it, so `log verify` said "A: ok (I1–I7)" while `log
    # show` failed on the file (or `status` said damaged).
    from sqlalchemy import create_engine, text

    rc("location", "add", "A")
    rc.append("A", "a1", "a2")
    rc.append("A", "a3")
    engine = create_engine(rc.db_url)
    with engine.begin() as conn:
        conn.execute(text(f"UPDATE segments SET {older} WHERE seq_lo = 1"))
    engine.dispose()
    _damage_file(rc, "A", 0, damage)
    [seg] = [s for s in rc.json("location", "show", "A")["segments"] if s["seq_lo"] == 1]
    [log] = rc.json("log", "verify", "A", expect=3)["logs"]
    assert [(v["invariant"], v["seq"], v["message"]) for v in log["violations"]] == [
        ("SEG", 1, f"segment {seg['path']} holds no events, the catalog says 2")
    ]


def test_a_target_caught_up_since_is_not_named_as_holding_a_pending_deletion_back(rc: Replctl) -> None:
    # DEL4's record names B from the deletion's last decision; B caught up through C while A was damaged (the
    # retry returns early there, so the record stays). `status` kept naming B, while the next replicate
    # completes the deletion. Without BK4's guard only what the catalog says now counts.
    for name in ("A", "B", "C"):
        rc("location", "add", name)
    rc("topology", "add", "A", "B")
    rc("topology", "add", "A", "C")
    rc("topology", "add", "C", "B")
    rc.append("A", "a1", "a2")
    rc("replicate", "A", "C")
    rc.append("A", "a3")
    assert rc.json("delete", "A", "--upto", "2", expect=5)["pending_upto"] == 2
    _damage_file(rc, "A", 1, "missing")
    rc("replicate", "C", "B")
    rc("recover", "location", "A", "--accept-loss")
    assert (
        "pending deletion at A up to 2, no target holds it back now; it runs at the next replicate\n"
        in rc("status").stdout
    )
    [done] = rc.json("replicate")["deletions"]
    assert (done["pending"], done["deleted_upto"]) == (False, 2)


def _zero_footer(rc: Replctl, location: str, index: int) -> str:
    """Zero the tail of the footer of `location`'s `index`-th segment's data file at its size (a torn write
    of its last block): its pages still decode, its footer no longer parses. Returns the file's store path."""
    folder = sorted((rc.store / location).glob("seg-*"))[index]
    data = next(f for f in folder.iterdir() if f.suffix == ".parquet")
    raw = bytearray(data.read_bytes())
    # The last 8 bytes (the footer's length and the magic) stay: a reader finds a footer, and fails on it.
    raw[-40:-8] = bytes(32)
    data.write_bytes(bytes(raw))
    return f"{location}/{folder.name}/{data.name}"


@pytest.mark.parametrize("reader", ["local", "spark"])
def test_a_file_whose_footer_no_longer_parses_is_damage_to_every_reader(rc: Replctl, reader: str) -> None:
    # A file whose footer was zeroed at its size is no Parquet any more: the page CRCs never ran, and each
    # reader said what its library said (exit 6, no hint: "Malformed schema", Spark's IndexOutOfBounds). Its
    # SHA-256 differs from its row's, so it is damage (DR0), named, with the way out; `log show --json` wrote
    # the events read before it and then a second document.
    if reader == "spark":
        rc.env["REPLCTL_LOCAL_LIMIT"] = "0"
    for name in ("A", "B", "C"):
        rc("location", "add", name)
    rc("topology", "add", "A", "B")  # B holds nothing: replicate copies A's segment files verbatim
    rc("topology", "add", "A", "C")
    rc.append("C", "torn-c1")  # C holds an event: replicate reads A's events in a pass
    for key in ("torn-a1", "torn-a2", "torn-a3"):
        rc.append("A", key)
    path = _zero_footer(rc, "A", 1)
    folder, name = path.rsplit("/", 1)
    a_files, before = _stored_bytes(rc, "A"), rc.snapshot()
    assert rc.json("replicate", "A", "B", expect=4)["error"] == {
        "code": "damaged",
        "message": f"A's log is damaged: segment {folder} (from seq 2): its file {name} changed since it was "
        "written and no longer parses; nothing was copied (DR0)",
        "hint": "replctl recover location A",
    }
    assert not (rc.store / "B").exists() or not list((rc.store / "B").iterdir())
    for args in (["replicate", "A", "C"], ["log", "compact", "A"]):
        error = rc.json(*args, expect=4)["error"]
        assert (error["code"], error["hint"]) == ("damaged", "replctl recover location A"), args
        assert error["message"].startswith("A's log is damaged: ") and error["message"].endswith("(DR0)"), (
            error
        )
        assert name in error["message"], error
    # One document, however far the stream got: the events read before the file, then ok false and why.
    shown = rc("log", "show", "A", "--json", expect=6)
    doc = json.loads(shown.stdout)
    assert [(e["seq"], e["key"]) for e in doc.pop("events")] == [(1, "torn-a1")]
    assert doc == {
        "location": "A",
        "seq": 3,
        "deleted_upto": 0,
        "logical_deleted_upto": 0,
        "ok": False,
        "error": {
            "code": "store-damaged",
            "message": f"A's log is damaged: segment {folder} (from seq 2) differs from its catalog row: its "
            f"file {name} changed since it was written and fails its read (DR0)",
            "hint": "replctl recover location A",
        },
    }
    assert rc.keys("B") == [] and rc.keys("C") == ["torn-c1"]
    assert _stored_bytes(rc, "A") == a_files and rc.snapshot() == before
