"""After a clock pruning, coverage is asked through identities (rules.md RET2, RET4, CF1, DEL3, DR1, ADD3).

Each story prunes a retired location X whose events every remaining location holds, then adds, deletes or
recovers, and asserts the exact logs as (origin, origin_time, key) in seq order. Before RET4 a pruned event's vt
was `{}`, so a location added later took X's events for its causal past and never received them.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from clitool import Replctl

pytestmark = pytest.mark.spark

Row = tuple[str, int, str]


def log(rc: Replctl, location: str) -> list[Row]:
    return [(e["origin"], e["origin_time"], e["key"]) for e in rc.json("log", "show", location)["events"]]


def vts(rc: Replctl, location: str) -> list[dict[str, int]]:
    return [e["vt"] for e in rc.json("log", "show", location)["events"]]


def passes(doc: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """The first pass of each connection in a `replicate --json` document (later rounds only catch up)."""
    first: dict[tuple[str, str], dict[str, Any]] = {}
    for p in doc["passes"]:
        first.setdefault((p["source"], p["target"]), p)
    return first


X_EVENTS: list[Row] = [("X", 1, "x1"), ("X", 2, "x2")]
# B's log after `x_pruned`: X's events from A, its own b1, then A's a1 (both emitted after X's).
B_LOG: list[Row] = [*X_EVENTS, ("B", 3, "b1"), ("A", 3, "a1")]


def x_spread(rc: Replctl) -> None:
    """A↔B and X↔A; X emits x1, x2; everything replicates, so every log holds X's events."""
    for name in "ABX":
        rc("location", "add", name)
    rc("topology", "add", "X", "A", "--both")
    rc("topology", "add", "A", "B", "--both")
    rc.append("X", "x1", "x2")
    rc("replicate")
    rc.append("A", "a1")
    rc.append("B", "b1")
    rc("replicate")
    assert log(rc, "B") == B_LOG


def x_pruned(rc: Replctl, *, before_pruning: tuple[str, ...] = ()) -> None:
    """`x_spread`, then `replctl BEFORE_PRUNING` if given; X is disconnected, retired and pruned (RET2)."""
    x_spread(rc)
    if before_pruning:
        rc(*before_pruning)
    rc("topology", "remove", "X", "A", "--both")
    rc("location", "retire", "X", "--prune-clock")
    assert all("X" not in vt for name in "ABX" for vt in vts(rc, name))
    # RET2: the vectors keep X's entry; the identities keep X's events apart (RET4).
    assert {name: rc.location(name)["cvv"].get("X") for name in "ABX"} == {"A": 2, "B": 2, "X": 2}


def test_a_location_added_after_a_pruning_receives_the_pruned_origin_s_events_in_order_ret4_cf1(
    rc: Replctl,
) -> None:
    x_pruned(rc)
    rc("location", "add", "W")
    rc.append("W", "w1")  # W holds an event of its own: no file copy, an ordinary pass
    rc("topology", "add", "B", "W", "--both")
    done = passes(rc.json("replicate"))
    assert (done[("B", "W")]["action"], done[("B", "W")]["written"]) == ("ran", 4)
    assert done[("B", "W")]["skipped_causal"] == 0
    assert log(rc, "W") == [("W", 1, "w1"), *B_LOG]
    assert rc.location("W")["cvv"] == {"A": 3, "B": 3, "W": 1, "X": 2}
    # EM1 after the pruning: W's next event carries no X entry, though CVV-W has one.
    rc.append("W", "w2")
    w2 = rc.json("log", "show", "W")["events"][-1]
    assert (w2["key"], w2["vt"]) == ("w2", {"A": 3, "B": 3, "W": 6})
    rc("replicate")
    assert log(rc, "B") == [*B_LOG, ("W", 1, "w1"), ("W", 6, "w2")]
    assert rc.json("log", "verify", "A", "B", "W", "X")["ok"]


def test_an_empty_location_added_after_a_pruning_gets_them_by_the_file_copy_with_its_clock_ret4(
    rc: Replctl,
) -> None:
    x_pruned(rc)
    rc("location", "add", "W")
    rc("topology", "add", "B", "W", "--both")
    done = passes(rc.json("replicate"))
    assert done[("B", "W")]["action"] == "copied"
    assert log(rc, "W") == B_LOG
    # The copied segment rows carry X's identities, so CVV-W covers X's events: nothing comes twice.
    assert rc.location("W")["cvv"] == {"A": 3, "B": 3, "X": 2}
    again = passes(rc.json("replicate", "B", "W"))[("B", "W")]
    assert (again["action"], again["written"]) == ("nothing-new", 0)
    rc("topology", "add", "A", "W")
    rc("replicate")
    assert log(rc, "W") == B_LOG
    assert rc.json("log", "verify", "W")["ok"]


def test_a_deletion_after_a_pruning_waits_for_a_new_target_that_lacks_the_pruned_events_del3_ret4(
    rc: Replctl,
) -> None:
    x_pruned(rc)
    rc("location", "add", "W")
    rc.append("W", "w1")
    rc("topology", "add", "B", "W")
    # W lacks x1, x2: DEL3 asks CVV-W[X] ≥ origin_time, not vt ≤ CVV-W (the vts lost X).
    upto = max(e["seq"] for e in rc.json("log", "show", "B")["events"])
    held = rc.json("delete", "B", "--upto", str(upto), expect=5)
    first_x = rc.json("log", "show", "B")["events"][0]["seq"]
    assert held["deleted_upto"] == 0
    assert held["blocked_by"] == [{"target": "W", "first_blocked_seq": first_x}]
    assert log(rc, "B") == B_LOG
    # Replication delivers them; the pending deletion is retried after it (DEL4) and completes.
    rc("replicate")
    assert log(rc, "W") == [("W", 1, "w1"), *B_LOG]
    b = rc.location("B")
    assert b["deleted_upto"] == upto
    assert [row for row in log(rc, "B") if row[0] != "W"] == []
    # DEL2 through identities: the DVV keeps X's entry though no deleted vt held it.
    assert b["dvv"] == {"A": 3, "B": 3, "X": 2}
    assert rc.json("log", "verify", "B", "W")["ok"]


def test_a_location_recovered_after_a_pruning_gets_the_pruned_origin_s_events_back_dr1_dr4_ret4(
    rc: Replctl,
) -> None:
    x_pruned(rc)
    a_before = log(rc, "A")
    assert a_before == [*X_EVENTS, ("A", 3, "a1"), ("B", 3, "b1")]
    rc("drill", "disaster", "A", "--from", "1")
    recovered = rc.json("recover", "location", "A")
    assert [r["sources"] for r in recovered["rounds"]] == [["B"]]
    # A's log is rebuilt from B, in B's order; X's events are not taken for A's causal past.
    assert log(rc, "A") == B_LOG
    assert rc.location("A")["cvv"] == {"A": 3, "B": 3, "X": 2}
    rc.append("A", "a2")
    a2 = rc.json("log", "show", "A")["events"][-1]
    assert a2["origin_time"] > 3 and "X" not in a2["vt"]
    assert rc.json("log", "verify", "A", "B")["ok"]


def test_two_retired_locations_pruned_one_after_the_other_keep_both_origins_apart_ret2_ret4(
    rc: Replctl,
) -> None:
    for name in "ABXY":
        rc("location", "add", name)
    rc("topology", "add", "X", "A", "--both")
    rc("topology", "add", "Y", "B", "--both")
    rc("topology", "add", "A", "B", "--both")
    rc.append("X", "x1")
    rc.append("Y", "y1", "y2")
    rc("replicate")
    rc.append("A", "a1")
    rc("replicate")
    rc("topology", "remove", "X", "A", "--both")
    rc("topology", "remove", "Y", "B", "--both")
    rc("location", "retire", "X", "--prune-clock")
    rc("location", "retire", "Y", "--prune-clock")
    for name in "ABXY":
        assert all("X" not in vt and "Y" not in vt for vt in vts(rc, name)), name
    # x1 came straight from X in the first round, y1 and y2 through B in the second; a1 follows them all.
    a_log = log(rc, "A")
    assert a_log == [("X", 1, "x1"), ("Y", 1, "y1"), ("Y", 2, "y2"), ("A", 4, "a1")]
    # A newcomer receives both pruned origins' events, in A's order, and no duplicates later.
    rc("location", "add", "W")
    rc.append("W", "w1")
    rc("topology", "add", "A", "W", "--both")
    rc("topology", "add", "B", "W")
    rc("replicate")
    assert log(rc, "W") == [("W", 1, "w1"), *a_log]
    assert rc.location("W")["cvv"] == {"A": 4, "W": 1, "X": 1, "Y": 2}
    assert rc.json("log", "verify", "A", "B", "W")["ok"]
    again = rc.json("location", "retire", "Y", "--prune-clock")["prune"]
    assert (again["logs"], again["recorded"]) == ([], False)


def make_legacy(rc: Replctl, pruned: str) -> None:
    """Turn the catalog into what an earlier replctl's pruning left: the pruned id gone from every CVV, DVV,
    baseline and segment LUB, no record of the pruning but its journal (plan `needed`, step `prune-vectors`)."""
    from sqlalchemy import create_engine, text

    engine = create_engine(rc.db_url)
    try:
        with engine.begin() as conn:
            rows = conn.execute(text("select name, cvv, dvv, baseline from locations")).all()
            spread = sorted(r.name for r in rows if pruned in json.loads(r.cvv))
            needed = max(json.loads(r.cvv).get(pruned, 0) for r in rows)
            for r in rows:
                vectors = {
                    k: json.dumps(_without(json.loads(getattr(r, k)), pruned))
                    for k in ("cvv", "dvv", "baseline")
                }
                conn.execute(
                    text(
                        "update locations set cvv = :cvv, dvv = :dvv, baseline = :baseline, clock_pruned = false "
                        "where name = :name"
                    ),
                    {**vectors, "name": r.name},
                )
            for seg in conn.execute(text("select id, vt_lub from segments")).all():
                lub = json.dumps(_without(json.loads(seg.vt_lub), pruned))
                conn.execute(
                    text("update segments set vt_lub = :lub where id = :id"), {"lub": lub, "id": seg.id}
                )
            op = conn.execute(
                text("select id from operations where command = 'location retire --prune-clock'")
            ).scalar_one()
            conn.execute(
                text("update operations set plan = :plan where id = :id"),
                {"plan": json.dumps({"prune": pruned, "needed": needed}), "id": op},
            )
            conn.execute(
                text(
                    "update operation_steps set name = 'prune-vectors', detail = :detail where operation_id = :id "
                    "and name = 'prune-record'"
                ),
                {"detail": json.dumps({"pruned": pruned, "locations": spread}), "id": op},
            )
    finally:
        engine.dispose()


def _without(vector: dict[str, int], key: str) -> dict[str, int]:
    return {k: v for k, v in vector.items() if k != key}


def test_db_upgrade_gives_a_catalog_pruned_by_an_earlier_release_its_identities_back_ret2_ret4(
    rc: Replctl,
) -> None:
    x_pruned(rc)
    rc("location", "add", "W")  # joins after the pruning, before the upgrade: it has no X entry to restore
    make_legacy(rc, "X")
    assert rc.location("B")["cvv"] == {"A": 3, "B": 3}
    upgraded = rc.json("db", "upgrade")
    assert upgraded["repaired_prunings"] == ["X"]
    assert {name: rc.location(name)["cvv"].get("X") for name in "ABWX"} == {"A": 2, "B": 2, "W": None, "X": 2}
    assert rc.location("X")["clock_pruned"] is True
    assert rc.json("log", "verify", "A", "B", "X")["ok"]
    assert rc.json("db", "upgrade")["repaired_prunings"] == []  # idempotent
    # W now receives X's events like any newcomer (RET4).
    rc.append("W", "w1")
    rc("topology", "add", "B", "W")
    rc("replicate")
    assert log(rc, "W") == [("W", 1, "w1"), *B_LOG]


def test_a_restore_from_a_backup_taken_before_the_pruning_brings_no_pruned_id_back_ret2_bk2(
    rc: Replctl,
) -> None:
    # B is backed up while X is live; X is then retired and pruned; B loses everything and is restored from
    # the old backup. RET2: a pruned id never comes back into a vt, so the restore prunes the backup's copies
    # as the pruning did the live log; every event stays (BK2), in the order the backup held them.
    x_pruned(rc, before_pruning=("backup", "create", "B"))
    rc("drill", "disaster", "B", "--from", "1")
    dry = rc.json("recover", "location", "B", "--from-backup", "latest", "--dry-run")
    doc = rc.json("recover", "location", "B", "--from-backup", "latest")
    assert (doc["refused"], doc["lost"]) == ([], {})
    assert log(rc, "B") == B_LOG
    assert vts(rc, "B") == [{}, {}, {"B": 3}, {"A": 3}]
    # The dry run says the run prunes X from the backup's copies.
    assert (dry["clock_pruned"], doc["clock_pruned"]) == (["X"], ["X"])
    assert rc.location("B")["cvv"] == {"A": 3, "B": 3, "X": 2}
    assert rc.json("log", "verify", "A", "B")["ok"]
    # B's next event carries no X entry either (EM1 after the pruning).
    rc.append("B", "b2")
    assert vts(rc, "B")[-1] == {"A": 3, "B": 5}
