"""Scenario stories through the services, each run on the in-memory data plane and on Spark (conftest `plane`).

The fake side needs no JVM and runs in seconds; the Spark side is the contract that keeps the fake honest: a
story that passes on one plane and fails on the other shows where the fake (or the adapter) is wrong. Each
story asserts the exact stored logs and clocks, or the exact refusal.
"""

from __future__ import annotations

from typing import Any

import pytest
from service_appends import append_keys

from replctl.core.model import Role
from replctl.errors import Refused
from replctl.services import compaction, deletion, logs, recovery, replication, retirement, topology
from replctl.services.backups import DeletionGuard
from replctl.services.ports import Catalog, DataPlane


def _locations(catalog: Catalog, *names: str) -> None:
    for name in names:
        topology.add_location(catalog, name, Role.READ_WRITE)


def _log(catalog: Catalog, plane: DataPlane, name: str) -> list[tuple[Any, ...]]:
    """(seq, origin, origin_time, vt, key) of every stored event of `name`'s log, in seq order."""
    events = logs.show(catalog, plane, name)["events"]
    return [(e["seq"], e["origin"], e["origin_time"], e["vt"], e["key"]) for e in events]


def _state(catalog: Catalog, name: str) -> tuple[int, dict[str, int], int, dict[str, int]]:
    """seq, CVV, deleted_upto and DVV of a location, as the catalog holds them."""
    with catalog.transaction(readonly=True) as tx:
        loc = tx.location(name)
    assert loc is not None
    return loc.seq, loc.cvv.to_dict(), loc.deleted_upto, loc.dvv.to_dict()


def _pass(outcome: replication.ReplicationOutcome, source: str, target: str) -> dict[str, Any]:
    passes = outcome.to_json()["passes"]
    found: list[dict[str, Any]] = [p for p in passes if (p["source"], p["target"]) == (source, target)]
    assert len(found) == 1, passes
    return found[0]


def test_appends_are_numbered_by_em1(catalog: Catalog, plane: DataPlane) -> None:
    _locations(catalog, "A", "B")
    append_keys(catalog, plane, "B", "b1")
    topology.add_connection(catalog, "B", "A")
    replication.replicate_one(catalog, plane, "B", "A")
    append_keys(catalog, plane, "A", "a1", "a2")
    # EM1: seq = origin_time, vt = CVV ⊔ {A: seq}: the events A emits after receiving b1 depend on it.
    assert _log(catalog, plane, "A") == [
        (1, "B", 1, {"B": 1}, "b1"),
        (2, "A", 2, {"A": 2, "B": 1}, "a1"),
        (3, "A", 3, {"A": 3, "B": 1}, "a2"),
    ]
    assert _state(catalog, "A") == (3, {"A": 3, "B": 1}, 0, {})


def test_a_filtered_connection_delivers_only_what_the_filter_affirms(
    catalog: Catalog, plane: DataPlane
) -> None:
    _locations(catalog, "A", "B")
    topology.add_connection(catalog, "A", "B", filter_expr="key <> 'e2'")
    append_keys(catalog, plane, "A", "e1", "e2", "e3")
    doc = replication.replicate_all(catalog, plane)
    report = _pass(doc, "A", "B")
    assert (report["examined"], report["written"], report["skipped_filter"], report["progress"]) == (
        3,
        2,
        1,
        3,
    )
    # REP1 (4): written events keep origin, origin_time and vt; M4 allows the gap the filter left.
    assert _log(catalog, plane, "B") == [(1, "A", 1, {"A": 1}, "e1"), (3, "A", 3, {"A": 3}, "e3")]
    seq, cvv, _, _ = _state(catalog, "B")
    assert (seq, cvv) == (3, {"A": 3})


def test_a_segment_another_path_delivered_is_skipped_whole(catalog: Catalog, plane: DataPlane) -> None:
    _locations(catalog, "A", "B", "C")
    topology.add_connection(catalog, "A", "B")
    topology.add_connection(catalog, "B", "C")
    topology.add_connection(catalog, "A", "C")
    append_keys(catalog, plane, "A", "e1", "e2")
    replication.replicate_one(catalog, plane, "A", "B")
    replication.replicate_one(catalog, plane, "B", "C")
    doc = replication.replicate_one(catalog, plane, "A", "C")
    report = _pass(doc, "A", "C")
    # CF1 from the segment rows: CVV-C covers the segment's LUB, so progress advances with no job run; the
    # two events are examined and skipped as held all the same (REP1 (1)), as a pass that read them says.
    assert (
        report["action"],
        report["examined"],
        report["written"],
        report["skipped_causal"],
        report["skipped_filter"],
        report["progress"],
    ) == ("advanced", 2, 0, 2, 0, 2)
    assert _log(catalog, plane, "C") == [(1, "A", 1, {"A": 1}, "e1"), (2, "A", 2, {"A": 2}, "e2")]


def test_the_causality_filter_skips_events_another_path_delivered(catalog: Catalog, plane: DataPlane) -> None:
    _locations(catalog, "A", "B", "C")
    topology.add_connection(catalog, "A", "B")
    topology.add_connection(catalog, "B", "C")
    topology.add_connection(catalog, "A", "C")
    append_keys(catalog, plane, "A", "e1")
    replication.replicate_one(catalog, plane, "A", "B")
    replication.replicate_one(catalog, plane, "B", "C")
    append_keys(catalog, plane, "A", "e2")
    # One segment holding e1 (which C has, through B) and e2 (which it lacks): the pass must read it.
    compacted = compaction.compact(catalog, plane, "A")
    assert compacted.segments_after == 1, compacted
    doc = replication.replicate_one(catalog, plane, "A", "C")
    report = _pass(doc, "A", "C")
    # REP1 (1): the pass skips e1 (CF1) and writes only e2, its seq shifted past C's (M4 allows the gap).
    assert (report["examined"], report["written"], report["skipped_causal"], report["progress"]) == (
        2,
        1,
        1,
        2,
    )
    assert _log(catalog, plane, "C") == [(1, "A", 1, {"A": 1}, "e1"), (3, "A", 2, {"A": 2}, "e2")]
    seq, cvv, _, _ = _state(catalog, "C")
    assert (seq, cvv) == (3, {"A": 2})


def test_a_pass_stops_at_an_admission_block_before_an_event_its_filter_fails_on_rep1(
    catalog: Catalog, plane: DataPlane
) -> None:
    """REP1: a pass decides its events in seq order and stops at the first one RFC2's admission check blocks;
    the events after it are not examined, so a filter that fails on one of them (a cast under ANSI rules)
    does not fail the pass, in the run as in its dry run. Once the group catches up, the pass examines that
    event and the filter's failure marks the connection failed (issue 14)."""
    _locations(catalog, "A", "B", "D")
    topology.add_connection(catalog, "A", "B", both=True)
    topology.declare_group(catalog, "G", ["A", "B"])
    for member in ("A", "B"):
        topology.add_connection(catalog, member, "D")
        topology.add_connection(catalog, "D", member, filter_expr="CAST(key AS INT) > 0")
    append_keys(catalog, plane, "A", "1")
    replication.replicate_one(catalog, plane, "A", "D")
    append_keys(catalog, plane, "D", "2", "abc")  # 2 depends on A's 1, which B lacks; 'abc' fails the cast
    planned = _pass(replication.replicate_one(catalog, plane, "D", "B", dry_run=True), "D", "B")
    ran = _pass(replication.replicate_one(catalog, plane, "D", "B"), "D", "B")
    assert {k: planned[k] for k in ("state", "action", "blocked_at", "progress", "reason")} == {
        "state": "active",
        "action": "would-run",
        "blocked_at": None,
        "progress": None,
        "reason": None,
    }
    keys = ("state", "action", "examined", "written", "blocked_at", "progress")
    assert tuple(ran[k] for k in keys) == ("active", "ran", 0, 0, 1, 0)
    assert ran["reason"].startswith("blocked [RFC2] at D seq 1: ")
    assert _log(catalog, plane, "B") == []
    replication.replicate_one(catalog, plane, "A", "B")
    failed = _pass(replication.replicate_one(catalog, plane, "D", "B"), "D", "B")
    assert (failed["state"], failed["action"], failed["progress"]) == ("failed", "failed", 0)
    assert _log(catalog, plane, "B") == [(1, "A", 1, {"A": 1}, "1")]


def test_deletion_drops_the_prefix_every_target_has(catalog: Catalog, plane: DataPlane) -> None:
    _locations(catalog, "A", "B")
    topology.add_connection(catalog, "A", "B")
    append_keys(catalog, plane, "A", "e1", "e2")
    append_keys(catalog, plane, "A", "e3", "e4")
    replication.replicate_all(catalog, plane)
    doc = deletion.delete(catalog, plane, "A", upto=3).to_json()
    assert (doc["deleted_upto"], doc["dvv"], doc["pending"]) == (3, {"A": 3}, False)
    # DEL1: the straddling segment (e3, e4) is rewritten to keep e4; DEL2: DVV is the LUB of what went.
    assert _log(catalog, plane, "A") == [(4, "A", 4, {"A": 4}, "e4")]
    assert _state(catalog, "A") == (4, {"A": 4}, 3, {"A": 3})


def test_deletion_waits_for_a_target_that_lacks_the_events(catalog: Catalog, plane: DataPlane) -> None:
    _locations(catalog, "A", "B")
    topology.add_connection(catalog, "A", "B")
    append_keys(catalog, plane, "A", "e1", "e2", "e3")
    replication.replicate_all(catalog, plane)
    append_keys(catalog, plane, "A", "e4", "e5")
    dry = deletion.delete(catalog, plane, "A", upto=5, dry_run=True).to_json()
    doc = deletion.delete(catalog, plane, "A", upto=5).to_json()
    # DEL3: B lacks seq 4 onward, so the cut stops at 3 and the rest waits as a pending deletion.
    assert (doc["deleted_upto"], doc["pending"], doc["pending_upto"], doc["blocked_by"]) == (
        3,
        True,
        5,
        [{"target": "B", "first_blocked_seq": 4}],
    )
    assert {k: dry[k] for k in ("deleted_upto", "dvv", "pending_upto")} == {
        k: doc[k] for k in ("deleted_upto", "dvv", "pending_upto")
    }
    assert _log(catalog, plane, "A") == [(4, "A", 4, {"A": 4}, "e4"), (5, "A", 5, {"A": 5}, "e5")]
    # DEL4: the next replication delivers them and retries the deletion.
    replication.replicate_all(catalog, plane)
    assert _log(catalog, plane, "A") == []
    assert _state(catalog, "A") == (5, {"A": 5}, 5, {"A": 5})


def test_a_retry_without_a_guard_still_holds_back_a_deletion_recorded_under_bk4(
    catalog: Catalog, plane: DataPlane
) -> None:
    # A deletion asked under BK4 keeps it at every retry (DEL4), even from a caller that read no backups: BK3
    # then starts from none, which errs towards waiting, never towards cutting what B alone would hold.
    _locations(catalog, "A", "B")
    topology.add_connection(catalog, "A", "B", both=True)
    append_keys(catalog, plane, "A", "a1")
    with catalog.transaction() as tx:
        tx.put_pending_deletion("A", 1, ["B"], require_recoverable=True)
    [retried] = replication.replicate_all(catalog, plane).to_json()["deletions"]
    assert (retried["pending"], retried["deleted_upto"], retried["reason"]) == (
        True,
        0,
        "waits [BK4]: deleting A up to 1 would make B unrecoverable (B would lose A: 1..1); "
        "run: replctl backup create B",
    )
    assert [e[4] for e in _log(catalog, plane, "A")] == ["a1"] and _state(catalog, "A")[2:] == (0, {})
    with catalog.transaction(readonly=True) as tx:
        kept = tx.pending_deletion("A")
    assert kept is not None and (kept.requested_upto, kept.require_recoverable) == (1, True)


def test_a_retry_under_the_policy_keeps_a_plain_deletion_unguarded_once_the_policy_is_off(
    catalog: Catalog, plane: DataPlane
) -> None:
    # BK4 is recorded as the request was asked: a retry run under `require_recoverable` guards its own cut but
    # does not make a plain request guarded for good (the later runs' policy decides its other retries).
    _locations(catalog, "A", "B", "C")
    topology.add_connection(catalog, "A", "B")
    topology.add_connection(catalog, "A", "C")
    append_keys(catalog, plane, "A", "a1")
    assert deletion.delete(catalog, plane, "A", upto=1).pending
    [retried] = replication.replicate_one(catalog, plane, "A", "B", guard=DeletionGuard((), True)).to_json()[
        "deletions"
    ]
    assert (retried["pending"], retried["blocked_by"]) == (True, [{"target": "C", "first_blocked_seq": 1}])
    with catalog.transaction(readonly=True) as tx:
        kept = tx.pending_deletion("A")
    assert kept is not None and (kept.blocked_by, kept.require_recoverable) == (("C",), False)


def test_the_fast_bootstrap_copies_segments_and_ends_as_an_ordinary_pass(
    catalog: Catalog, plane: DataPlane
) -> None:
    _locations(catalog, "A", "FAST", "SLOW")
    append_keys(catalog, plane, "A", "a1", "a2")
    append_keys(catalog, plane, "A", "a3")
    topology.add_connection(catalog, "A", "FAST")
    # "true" admits everything but is a filter, so this connection takes the ordinary pass.
    topology.add_connection(catalog, "A", "SLOW", filter_expr="true")
    fast = _pass(replication.replicate_one(catalog, plane, "A", "FAST"), "A", "FAST")
    slow = _pass(replication.replicate_one(catalog, plane, "A", "SLOW"), "A", "SLOW")
    assert (fast["action"], slow["action"]) == ("copied", "ran")
    assert (fast["written"], fast["progress"]) == (slow["written"], slow["progress"]) == (3, 3)
    expected = [(1, "A", 1, {"A": 1}, "a1"), (2, "A", 2, {"A": 2}, "a2"), (3, "A", 3, {"A": 3}, "a3")]
    assert _log(catalog, plane, "FAST") == _log(catalog, plane, "SLOW") == expected
    assert _state(catalog, "FAST") == _state(catalog, "SLOW") == (3, {"A": 3}, 0, {})


def test_a_partial_loss_is_recovered_and_new_events_continue_past_it(
    catalog: Catalog, plane: DataPlane
) -> None:
    _locations(catalog, "A", "B")
    topology.add_connection(catalog, "A", "B", both=True)
    append_keys(catalog, plane, "A", "a1")
    replication.replicate_all(catalog, plane)
    append_keys(catalog, plane, "A", "a2", "a3")  # never reached B: lost for good below
    recovery.drill(catalog, plane, "A", 2)
    plan = recovery.recover(catalog, plane, "A", dry_run=True).to_json()
    assert (plan["lost_from"], plan["rounds"]) == (2, [{"round": 1, "sources": ["B"], "written": None}])
    doc = recovery.recover(catalog, plane, "A").to_json()
    # DR2: A re-reads B from the start; DR1: T is the seq recorded before the loss, never reused.
    assert doc["progress_resets"] == [{"source": "B", "target": "A", "from": 1, "to": 0}]
    assert doc["clock"] == {"before": 3, "after": 3, "floor": 3}
    append_keys(catalog, plane, "A", "a4")
    assert _log(catalog, plane, "A") == [(1, "A", 1, {"A": 1}, "a1"), (4, "A", 4, {"A": 4}, "a4")]
    replication.replicate_all(catalog, plane)
    assert [e[4] for e in _log(catalog, plane, "B")] == ["a1", "a4"]


def test_a_drill_counts_only_what_the_store_still_holds_from_its_seq_on(
    catalog: Catalog, plane: DataPlane
) -> None:
    _locations(catalog, "A")
    append_keys(catalog, plane, "A", "a1", "a2")  # seq 1..2: holds the drill's seq
    append_keys(catalog, plane, "A", "a3")
    with catalog.transaction(readonly=True) as tx:
        first, second = (s.path for s in tx.segments("A"))
    planned = recovery.drill(catalog, plane, "A", 2, dry_run=True)
    assert (planned.destroyed_segments, planned.truncated_segment) == ((second,), first)
    done = recovery.drill(catalog, plane, "A", 2)
    assert (done.destroyed_segments, done.truncated_segment) == ((second,), first)
    # The catalog rows are as before the drill; the store holds a1 only: nothing is left from seq 2 on.
    for dry_run in (True, False):
        again = recovery.drill(catalog, plane, "A", 2, dry_run=dry_run)
        assert (again.destroyed_segments, again.truncated_segment) == ((), None)
    assert (recovery.drill(catalog, plane, "A", 1, dry_run=True).destroyed_segments) == (first,)


def test_pruning_a_retired_clock_drops_it_from_every_vt_and_keeps_it_in_the_cvvs(
    catalog: Catalog, plane: DataPlane
) -> None:
    _locations(catalog, "A", "Z")
    topology.add_connection(catalog, "Z", "A", both=True)
    append_keys(catalog, plane, "Z", "z1", "z2")
    replication.replicate_one(catalog, plane, "Z", "A")
    append_keys(catalog, plane, "A", "a1")  # emitted after A stored z1, z2: its vt holds Z:2 (EM1)
    topology.remove_connection(catalog, "Z", "A", both=True)
    outcome = retirement.retire(catalog, plane, "Z", prune_clock=True)
    assert outcome.pruning is not None and outcome.pruning["recorded"] is True
    # RET2: no vt holds Z; the events keep their identity (M3) and the CVVs keep Z:2 (RET4).
    assert _log(catalog, plane, "A") == [
        (1, "Z", 1, {}, "z1"),
        (2, "Z", 2, {}, "z2"),
        (3, "A", 3, {"A": 3}, "a1"),
    ]
    assert _log(catalog, plane, "Z") == [(1, "Z", 1, {}, "z1"), (2, "Z", 2, {}, "z2")]
    assert _state(catalog, "A")[1] == {"A": 3, "Z": 2}


def test_pruning_is_refused_while_a_location_lacks_the_retired_clock_ret3(
    catalog: Catalog, plane: DataPlane
) -> None:
    _locations(catalog, "A", "B", "Z")
    topology.add_connection(catalog, "Z", "A", both=True)
    topology.add_connection(catalog, "A", "B", both=True)
    append_keys(catalog, plane, "Z", "z1", "z2")
    replication.replicate_one(catalog, plane, "Z", "A")
    topology.remove_connection(catalog, "Z", "A", both=True)
    with pytest.raises(Refused) as refused:
        retirement.retire(catalog, plane, "Z", prune_clock=True)
    assert (refused.value.code, refused.value.message) == (
        "RET3",
        "refused [RET3]: the events of Z have not finished spreading: B has Z:0, but Z:2 is held elsewhere; "
        "Z's clock is pruned only once every remaining location has it (RET3)",
    )
    assert refused.value.details["lagging"] == [{"location": "B", "entry": 0, "needed": 2}]
    # Refused before anything is recorded: Z is still active and every log keeps Z in its vts.
    with catalog.transaction(readonly=True) as tx:
        z = tx.location("Z")
    assert z is not None and not z.retired
    assert _log(catalog, plane, "A") == [(1, "Z", 1, {"Z": 1}, "z1"), (2, "Z", 2, {"Z": 2}, "z2")]


def test_a_location_added_after_a_deletion_waits_until_it_can_miss_nothing_add1(
    catalog: Catalog, plane: DataPlane
) -> None:
    _locations(catalog, "A", "B", "C")
    topology.add_connection(catalog, "A", "B", both=True)
    topology.add_connection(catalog, "B", "C", both=True)
    append_keys(catalog, plane, "A", "e1", "e2", "e3")
    replication.replicate_one(catalog, plane, "A", "B")  # B has e1..e3, C not yet
    deletion.delete(catalog, plane, "A", upto=2)  # allowed: A's only target B has them
    _locations(catalog, "D")
    topology.add_connection(catalog, "A", "D", both=True)
    topology.add_connection(catalog, "C", "D", both=True)
    with catalog.transaction(readonly=True) as tx:
        states = {c.key: c.state.value for c in tx.connections()}
    # ADD1: A deleted e1, e2, which D lacks: A→D waits while D may still get them through C.
    assert (states[("A", "D")], states[("D", "A")], states[("C", "D")]) == ("pending", "active", "active")
    replication.replicate_all(catalog, plane)
    with catalog.transaction(readonly=True) as tx:
        assert {c.key: c.state.value for c in tx.connections()}[("A", "D")] == "active"
    for name in "BCD":
        assert [(e[1], e[2], e[4]) for e in _log(catalog, plane, name)] == [
            ("A", 1, "e1"),
            ("A", 2, "e2"),
            ("A", 3, "e3"),
        ], name
    assert _log(catalog, plane, "A") == [(3, "A", 3, {"A": 3}, "e3")]


def test_a_declared_loss_over_events_their_origin_deleted_is_refused_on_what_is_stored_dr0(
    catalog: Catalog, plane: DataPlane
) -> None:
    # DR0: A's CVV-B entry is no copy of b1, b2 once B deleted them; they exist only at A.
    _locations(catalog, "A", "B")
    topology.add_connection(catalog, "A", "B", both=True)
    append_keys(catalog, plane, "A", "a1")
    append_keys(catalog, plane, "B", "b1", "b2")
    replication.replicate_all(catalog, plane)
    deletion.delete(catalog, plane, "B", upto=3)
    for dry_run in (True, False):
        with pytest.raises(Refused) as refused:
            recovery.recover(catalog, plane, "A", lost_from=2, dry_run=dry_run)
        assert (refused.value.code, refused.value.message) == (
            "DR0",
            "refused [DR0]: recover location A --lost-from 2 would discard B:1..2, which A still stores intact "
            "and no other location stores; nothing was changed",
        )
    assert [e[4] for e in _log(catalog, plane, "A")] == ["a1", "b1", "b2"]
    doc = recovery.recover(catalog, plane, "A", lost_from=2, accept_loss=True).to_json()
    assert doc["discarded"] == {"B": [1, 2]}
    assert [e[4] for e in _log(catalog, plane, "A")] == ["a1"]


def test_which_events_no_other_location_stores_reads_only_what_the_stores_hold(
    catalog: Catalog, plane: DataPlane
) -> None:
    # The data plane's anti-join on (origin, origin_time): B's CVV covers A:1..3, B stores only A:1 once a
    # drill took the rest, and A's rows from seq 2 on are asked.
    _locations(catalog, "A", "B")
    topology.add_connection(catalog, "A", "B", both=True)
    append_keys(catalog, plane, "A", "a1")
    append_keys(catalog, plane, "A", "a2", "a3")
    replication.replicate_all(catalog, plane)
    recovery.drill(catalog, plane, "B", 2)
    with catalog.transaction(readonly=True) as tx:
        mine, theirs = tx.segments("A"), tx.segments("B")
    assert plane.unheld(mine, seq_from=2, seq_below=None, elsewhere=theirs) == {"A": [2, 3]}
    assert plane.unheld(mine, seq_from=1, seq_below=3, elsewhere=theirs, origin="A") == {"A": [2]}
    assert plane.unheld(mine, seq_from=1, seq_below=None, elsewhere=mine) == {}
    assert plane.origin_times(theirs, "A", above=0, upto=3) == {1}
    assert plane.origin_times(mine, "A", above=1, upto=3, seq_below=3) == {2}


def test_retiring_a_location_whose_event_a_filter_kept_back_is_refused_ret1(
    catalog: Catalog, plane: DataPlane
) -> None:
    _locations(catalog, "B", "Z")
    topology.add_connection(catalog, "Z", "B", filter_expr="key = 'x1'")
    append_keys(catalog, plane, "Z", "y1", "x1")
    replication.replicate_all(catalog, plane)
    topology.remove_connection(catalog, "Z", "B")
    assert _state(catalog, "B")[1]["Z"] == 2  # x1's vt covers y1
    with pytest.raises(Refused) as refused:
        retirement.retire(catalog, plane, "Z", prune_clock=False)
    assert (refused.value.code, refused.value.details["stranded"]) == (
        "RET1",
        {"origin": "Z", "from": 1, "to": 1},
    )


def test_a_filtered_terminal_recovery_reports_the_own_events_no_one_stored_dr3(
    catalog: Catalog, plane: DataPlane
) -> None:
    _locations(catalog, "A", "N")
    topology.add_connection(catalog, "A", "N", filter_expr="key like 'x%'")
    topology.add_connection(catalog, "N", "A", filter_expr="key like 'x%'")
    append_keys(catalog, plane, "A", "x1", "y1", "x2")
    append_keys(catalog, plane, "N", "xn", "yn")
    replication.replicate_all(catalog, plane)
    recovery.drill(catalog, plane, "A", 1)
    plan = recovery.recover(catalog, plane, "A", dry_run=True).to_json()
    doc = recovery.recover(catalog, plane, "A").to_json()
    assert (plan["lost"], doc["lost"]) == ({"A": [2, 2], "N": None}, {"A": [2, 2]})
    assert [(e[1], e[2], e[4]) for e in _log(catalog, plane, "A")] == [
        ("N", 1, "xn"),
        ("A", 1, "x1"),
        ("A", 3, "x2"),
    ]
