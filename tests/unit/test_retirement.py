"""The clock-pruning decision for a retired location (rules.md RET1–RET4): pure, from catalog rows."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from replctl.core.model import Connection, ConnectionState, Location, LocationState, Role, Segment
from replctl.core.recovery import with_baseline
from replctl.core.retirement import (
    LegacyPrune,
    clocks,
    needed_entry,
    parked_location,
    plan_prune,
    restored_location,
    stranded_events,
    stranded_violation,
)
from replctl.core.topology_plans import plan_retire
from replctl.core.vectortime import VectorTime
from unit.topology_net import Net

RETIRED = LocationState.RETIRED


def loc(
    name: str,
    cvv: Mapping[str, int],
    *,
    dvv: Mapping[str, int] | None = None,
    baseline: Mapping[str, int] | None = None,
    state: LocationState = LocationState.ACTIVE,
    seq: int = 0,
    deleted_upto: int = 0,
    clock_pruned: bool = False,
) -> Location:
    return Location(
        name=name,
        state=state,
        seq=seq,
        cvv=VectorTime(cvv),
        dvv=VectorTime(dvv or {}),
        baseline=VectorTime(baseline or {}),
        deleted_upto=deleted_upto,
        clock_pruned=clock_pruned,
    )


def seg(location: str, ident: int, lo: int, hi: int, lub: Mapping[str, int]) -> Segment:
    return Segment(ident, location, f"{location}/seg-{ident}", lo, hi, hi - lo + 1, VectorTime(lub))


def test_the_needed_entry_is_the_largest_z_entry_in_any_cvv_dvv_or_baseline_retired_ones_included() -> None:
    locations = [
        loc("A", {"A": 1, "Z": 2}, dvv={"Z": 2}),
        loc("B", {"B": 1}, baseline={"Z": 1}),
        loc("R", {"Z": 4}, state=RETIRED),
        loc("Z", {"Z": 3}, state=RETIRED),
    ]
    assert needed_entry(locations, "Z") == 4
    assert needed_entry(locations, "Q") == 0


def test_pruning_is_refused_naming_every_lagging_location_with_its_entry_ret3() -> None:
    locations = [
        loc("A", {"A": 1, "Z": 3}),
        loc("B", {"B": 2, "Z": 1}),
        loc("C", {"C": 1}),
        loc("Z", {"Z": 3}, state=RETIRED),
    ]
    plan = plan_prune(locations, {}, "Z")
    assert not plan.ok
    assert plan.logs == ()
    [violation] = plan.violations
    assert violation.code == "RET3"
    assert "B has Z:1" in violation.message and "C has Z:0" in violation.message
    assert "A has" not in violation.message
    assert "Z:3" in violation.message
    assert violation.hint == "replctl replicate, then re-run: replctl location retire Z --prune-clock"
    assert violation.details["lagging"] == [
        {"location": "B", "entry": 1, "needed": 3},
        {"location": "C", "entry": 0, "needed": 3},
    ]


def test_a_dvv_entry_beyond_every_cvv_of_the_remaining_locations_holds_pruning_back_ret3() -> None:
    # A deleted Z:2 (its DVV) but B got only Z:1: Z's events have not reached B yet.
    locations = [
        loc("A", {"A": 1, "Z": 2}, dvv={"Z": 2}),
        loc("B", {"Z": 1}),
        loc("Z", {"Z": 1}, state=RETIRED),
    ]
    plan = plan_prune(locations, {}, "Z")
    assert [(lag.location, lag.entry, lag.needed) for lag in plan.lagging] == [("B", 1, 2)]


def test_retired_locations_never_lag_ret3() -> None:
    locations = [
        loc("A", {"A": 1, "Z": 2}),
        loc("R", {"R": 5}, state=RETIRED),
        loc("Z", {"Z": 2}, state=RETIRED),
    ]
    assert plan_prune(locations, {}, "Z").ok


def test_once_every_remaining_location_has_z_only_segments_whose_lub_holds_z_are_rewritten_ret2() -> None:
    locations = [
        loc("A", {"A": 2, "Z": 2}),
        loc("B", {"B": 1, "Z": 2}, dvv={"Z": 1}),  # its Z-stamped segments were deleted: vectors only
        loc("C", {"C": 1, "Z": 2}),
        loc("D", {"D": 1}, state=RETIRED),  # never saw Z: nothing to do
        loc("Z", {"Z": 2}, state=RETIRED),
    ]
    segments = {
        "A": [seg("A", 1, 1, 1, {"A": 1}), seg("A", 2, 2, 4, {"A": 2, "Z": 2})],
        "B": [seg("B", 3, 3, 3, {"B": 1})],
        "C": [seg("C", 4, 1, 2, {"Z": 2}), seg("C", 5, 3, 3, {"C": 1}), seg("C", 6, 4, 4, {"C": 1, "Z": 2})],
        "D": [seg("D", 7, 1, 1, {"D": 1})],
        "Z": [seg("Z", 8, 1, 2, {"Z": 2})],
    }
    plan = plan_prune(locations, segments, "Z")
    assert plan.ok and not plan.done
    assert plan.needed == 2
    rewritten = {log.location: ([s.id for s in log.rewrite], log.untouched) for log in plan.logs}
    assert rewritten == {"A": ([2], 1), "C": ([4, 6], 1), "Z": ([8], 0)}
    assert plan.record


def test_a_retired_location_no_vt_holds_is_still_recorded_as_pruned_ret2() -> None:
    locations = [loc("A", {"A": 1}), loc("Z", {}, state=RETIRED, seq=3)]
    plan = plan_prune(locations, {"A": [seg("A", 1, 1, 1, {"A": 1})]}, "Z")
    assert plan.ok and not plan.done
    assert (plan.logs, plan.record, plan.needed) == ((), True, 0)


def test_once_recorded_as_pruned_there_is_nothing_left_even_with_a_newcomer_lacking_z_ret3_ret4() -> None:
    # W joined after the pruning: CVV-W[Z] = 0 is not lagging, W is about to receive Z's events (RET4).
    locations = [
        loc("A", {"A": 1, "Z": 2}),
        loc("W", {"W": 1}),
        loc("Z", {"Z": 2}, state=RETIRED, clock_pruned=True),
    ]
    segments = {"A": [seg("A", 1, 1, 3, {"A": 1, "Z": 2})]}  # Z's events keep Z through their identity
    plan = plan_prune(locations, segments, "Z")
    assert plan.done
    assert plan.violations == ()


def test_after_an_interrupted_run_only_the_logs_still_holding_z_and_the_vectors_are_left_ret2() -> None:
    # A's segments were rewritten before the crash; its CVV[Z] stayed, parked in its baseline, so RET3
    # still holds and the re-run needs no memory of the first run.
    a = parked_location(loc("A", {"A": 1, "Z": 2}), "Z", VectorTime({"A": 1}))
    locations = [a, loc("B", {"B": 1, "Z": 2}), loc("Z", {"Z": 2}, state=RETIRED)]
    segments = {
        "A": [seg("A", 1, 1, 3, {"A": 1})],
        "B": [seg("B", 2, 1, 3, {"B": 1, "Z": 2})],
        "Z": [seg("Z", 3, 1, 2, {"Z": 2})],
    }
    plan = plan_prune(locations, segments, "Z")
    assert plan.ok
    assert [log.location for log in plan.logs] == ["B", "Z"]
    assert plan.record


def test_a_log_whose_vts_lost_z_keeps_its_cvv_entry_in_the_baseline_for_good_i3_ret2() -> None:
    # Stored vts reach {A:3, Z:2}, Z:2 only through an event of A; C:1 came without events (a baseline);
    # Z:1 was deleted (DVV).
    before = loc("A", {"A": 3, "C": 1, "Z": 2}, dvv={"Z": 1}, baseline={"C": 1})
    parked = parked_location(before, "Z", VectorTime({"A": 3}))
    assert parked.cvv == before.cvv and parked.dvv == before.dvv
    assert parked.baseline == VectorTime({"C": 1, "Z": 2})
    # I3 once the stored vts lack Z: LUB(stored) ⊔ DVV ⊔ baseline still equals the CVV.
    assert VectorTime({"A": 3}).merge(parked.dvv, parked.baseline) == parked.cvv
    assert parked.baseline_stored == VectorTime()  # A stores no event of Z: the entry counts at once (DR1)


def test_a_parked_entry_records_the_events_of_z_the_log_stores_under_it_dr1() -> None:
    # A stores Z:1 (its identity keeps Z:1 in the LUB); Z:3 came through an event of another origin. After a
    # loss of Z:1 the parked entry Z:3 waits until Z:1 is back, or CF1 would skip it where it is stored.
    before = loc("A", {"A": 3, "Z": 3})
    parked = parked_location(before, "Z", VectorTime({"A": 3, "Z": 1}))
    assert (parked.baseline, parked.baseline_stored) == (VectorTime({"Z": 3}), VectorTime({"Z": 1}))
    assert with_baseline(parked, VectorTime({"A": 3})) == VectorTime({"A": 3})
    assert with_baseline(parked, VectorTime({"A": 3, "Z": 1})) == VectorTime({"A": 3, "Z": 3})


def test_nothing_is_parked_where_z_s_own_events_still_explain_the_entry_dr1_ret4() -> None:
    # A stores Z:1 and Z:2 itself (their identities keep Z in the LUB): a baseline would make a recovery of A
    # take them for received (DR1) and skip them.
    before = loc("A", {"A": 3, "Z": 2})
    assert parked_location(before, "Z", VectorTime({"A": 3, "Z": 2})) == before
    deleted = loc("A", {"A": 3, "Z": 2}, dvv={"Z": 2})
    assert parked_location(deleted, "Z", VectorTime({"A": 3})) == deleted


def test_an_active_location_is_pruned_only_when_retired_in_the_same_command_ret1_ret2() -> None:
    locations = [loc("A", {"A": 1, "Z": 1}), loc("Z", {"Z": 1})]
    refused = plan_prune(locations, {}, "Z")
    assert [v.code for v in refused.violations] == ["RET2"]
    assert "replctl location retire Z --prune-clock" in (refused.violations[0].hint or "")
    assert plan_prune(locations, {}, "Z", retiring=True).ok


def test_an_unknown_location_is_refused_by_name() -> None:
    plan = plan_prune([loc("A", {"A": 1})], {}, "Q")
    assert [v.code for v in plan.violations] == ["unknown-location"]


def test_retiring_an_already_retired_location_again_is_a_no_op_decision_ret1() -> None:
    net = Net("AZ")
    net.retire("Z")
    decision = plan_retire(net.state, "Z")
    assert decision.ok and decision.changes == ()


vectors = st.dictionaries(st.sampled_from("ABCZ"), st.integers(min_value=0, max_value=9))


@given(cvv=vectors, pruned=st.frozensets(st.sampled_from("ABCZ")))
def test_new_vts_leave_pruned_ids_out_and_vectors_keep_them_em1_ret2(
    cvv: dict[str, int], pruned: frozenset[str]
) -> None:
    everyone = [loc(n, {}, state=RETIRED, clock_pruned=n in pruned) for n in "ABCZ"]
    clk = clocks(everyone)
    vector = VectorTime(cvv)
    assert clk.pruned == pruned and clk.retired == frozenset("ABCZ")
    assert clk.emission_base(vector) == vector.without(pruned)
    assert set(clk.vt_keys(vector)) == set(vector) - pruned
    assert clk.identity_origins == ["A", "B", "C", "Z"]


def test_a_legacy_pruning_gives_every_location_active_then_its_entry_back_and_a_newcomer_its_stored_ones() -> (
    None
):
    prune = LegacyPrune("Z", needed=3, spread_to=frozenset({"A", "B", "Z"}))
    # A stores Z:2 and Z:3 and deleted nothing: its entry is back.
    a = restored_location(loc("A", {"A": 4}), [prune], {"Z": (2, 3)})
    assert (a.cvv, a.dvv, a.baseline) == (VectorTime({"A": 4, "Z": 3}), VectorTime(), VectorTime())
    # B stores none of Z's events and deleted a prefix: it had them all (RET3), so they were deleted.
    b = restored_location(loc("B", {"B": 2}, deleted_upto=5), [prune], {})
    assert (b.cvv, b.dvv, b.baseline) == (
        VectorTime({"B": 2, "Z": 3}),
        VectorTime({"Z": 3}),
        VectorTime({"Z": 3}),
    )
    # B' deleted up to Z:1 and still stores Z:2..3.
    b2 = restored_location(loc("B", {"B": 2}, deleted_upto=5), [prune], {"Z": (2, 3)})
    assert (b2.cvv, b2.dvv) == (VectorTime({"B": 2, "Z": 3}), VectorTime({"Z": 1}))
    # W joined after the pruning: only what it stores counts (a file copy may have brought Z:1..2).
    w = restored_location(loc("W", {"W": 1}), [prune], {"Z": (1, 2)})
    assert w.cvv == VectorTime({"W": 1, "Z": 2})
    fresh = restored_location(loc("V", {"V": 1}), [prune], {})
    assert fresh.cvv == VectorTime({"V": 1})


def test_own_events_no_other_remaining_location_stores_are_stranded_ret1() -> None:
    # R stores R:2, R:3 that no other remaining location stores (the data plane's answer); S's CVV says R:1.
    everyone = [loc("R", {"R": 3}), loc("S", {"R": 1}), loc("T", {"R": 3}, state=RETIRED)]
    found = stranded_events(everyone, "R", [2, 3])
    assert found is not None
    assert (found.first, found.last, found.reached, found.times) == (2, 3, 1, (2, 3))


def test_own_events_stored_elsewhere_or_none_are_not_stranded_ret1() -> None:
    assert stranded_events([loc("R", {"R": 3}, dvv={"R": 3}), loc("S", {"R": 1})], "R", []) is None
    assert stranded_events([loc("R", {"R": 3}, state=RETIRED), loc("S", {})], "R", [1]) is None
    # A CVV that covers an event is no copy of it: S's CVV covers R:1 (a filtered connection) but S stores
    # only R:2, so R:1 is stranded.
    filtered = stranded_events([loc("R", {"R": 2}), loc("S", {"R": 2})], "R", [1])
    assert filtered is not None and (filtered.first, filtered.last, filtered.reached) == (1, 1, 2)


def test_ret1_hints_a_location_a_pass_would_bring_the_stranded_events_to() -> None:
    # Z last sent to B, whose CVV covers Z:1 (a filter kept it back): no pass brings it to B (CF1). C's
    # clock does not cover it and C lacks nothing Z deleted (ADD1): the hint names C.
    z = Location("Z", cvv=VectorTime({"Z": 2}))
    b = Location("B", cvv=VectorTime({"Z": 2}))
    c = Location("C")
    sent = [Connection("Z", "B", ConnectionState.REMOVED, filter="key = 'x1'", ever_filtered=True)]
    found = stranded_violation([b, c, z], sent, "Z", [1])
    assert found is not None and found.hint == (
        "replctl topology add Z C && replctl replicate Z C && replctl topology remove Z C, then: "
        "replctl location retire Z"
    )
    # Had Z deleted what C lacks, C's connection would wait (ADD1): only a new location is left.
    deleted = Location("Z", cvv=VectorTime({"Z": 3}), dvv=VectorTime({"Z": 1}))
    found = stranded_violation([b, c, deleted], sent, "Z", [2])
    assert found is not None and (found.hint or "").startswith(
        "keep them at a new location: replctl location add NEW"
    )
    assert found.message.endswith("; no remaining location would receive them over a connection now")
    # Nor is C named when the topology rules refuse Z→C (e.g. F1), or while C recovers (its pass waits, DR0).
    refused = stranded_violation([b, c, z], sent, "Z", [1], may_connect=lambda target: target != "C")
    recovering = stranded_violation([b, replace(c, state=LocationState.RECOVERING), z], sent, "Z", [1])
    for found in (refused, recovering):
        assert found is not None and (found.hint or "").startswith("keep them at a new location")


def test_ret1_at_a_read_only_location_names_the_only_way_out_rol1() -> None:
    # R received x1 and is its last holder; a read-only location has no connection out (ROLE1).
    r = Location("R", role=Role.READ_ONLY, seq=4, cvv=VectorTime({"X": 1}))
    found = stranded_violation([r, Location("B")], [], "R", [], {"X": [1]})
    assert found is not None
    assert found.message.endswith("; R is read-only and can pass nothing on (ROLE1)")
    assert found.hint == (
        "keep a copy (replctl backup create R), give them up on purpose (replctl delete R --upto 4), then: "
        "replctl location retire R"
    )
