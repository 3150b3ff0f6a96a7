"""Reconnects (ADD4), the clock and progress after a loss (DR1, DR2) and the pending deletion target (DEL4):
pure decisions of the core."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from replctl.core.deletion import PassOutlook, Target, changed_logs, pending_target, with_progress
from replctl.core.model import (
    Change,
    ChangeKind,
    Connection,
    ConnectionState,
    HistoryMode,
    Location,
    LocationState,
    Role,
)
from replctl.core.recovery import (
    Source,
    counted_now,
    deletions_known,
    eligible_sources,
    given_up,
    held_back,
    history_filters,
    least_loss,
    merge_accepted,
    own_not_held,
    progress_resets,
    recovered_clock,
    recovering,
    recovery_done,
    still_missing,
    stored_after_deletion,
    unrecovered,
    with_baseline,
)
from replctl.core.startrule import (
    history_baseline,
    history_stored,
    merge_baseline,
    new_connection,
    start_rule,
)
from replctl.core.topology import fold
from replctl.core.vectortime import VectorTime
from replctl.filterexpr import or_origin


def test_add4_a_reconnect_starts_at_zero_unfiltered_and_stays_ever_filtered() -> None:
    removed = Connection(
        "B", "A", ConnectionState.REMOVED, filter="key = 'k1'", ever_filtered=True, progress=7
    )
    verdict = start_rule(Location("B"), Location("A"))
    again = new_connection(
        "B", "A", filter=None, history=HistoryMode.COMPLETE, verdict=verdict, previous=removed
    )
    assert again == Connection("B", "A", ConnectionState.ACTIVE, None, True, HistoryMode.COMPLETE, 0, None)


def test_add4_a_reconnect_that_waits_for_the_start_rule_also_starts_at_zero() -> None:
    removed = Connection("B", "A", ConnectionState.REMOVED, progress=4)
    verdict = start_rule(Location("B", dvv=VectorTime({"B": 2})), Location("A"))
    again = new_connection("B", "A", filter=None, history=HistoryMode.NONE, verdict=verdict, previous=removed)
    assert (again.state, again.progress, again.reason) == (ConnectionState.PENDING, 0, verdict.reason)


def test_add3_current_holds_back_an_accepted_entry_over_events_the_source_still_stores() -> None:
    # X accepted C:4 while it stored C up to 3 (DR5), and deleted D up to 2 itself: Y must still receive
    # c1..c3 from X (CF1 would skip them under a CVV with C:4), while D:2 is known at once.
    x = merge_accepted(
        Location(
            "X", cvv=VectorTime({"C": 3, "D": 2}), dvv=VectorTime({"D": 2}), state=LocationState.RECOVERING
        ),
        VectorTime({"C": 4}),
    )
    baseline = history_baseline(HistoryMode.CURRENT, x, Location("Y"))
    stored = history_stored(HistoryMode.CURRENT, x, baseline)
    assert (baseline, stored) == (VectorTime({"C": 4, "D": 2}), VectorTime({"C": 3}))
    y = merge_baseline(Location("Y"), baseline, stored)
    assert (y.cvv, y.dvv, y.baseline_stored) == (VectorTime({"D": 2}), baseline, stored)
    assert start_rule(x, y).may_start  # the held entry waits only for what X itself delivers
    assert with_baseline(y, VectorTime({"C": 3, "D": 2})) == VectorTime({"C": 4, "D": 2})
    # A source that deleted c1, c2 itself would raise CVV-Y past them with c3 and c4 before X delivers c2:
    # it waits (ADD1) until Y counts the entry.
    deleted = Location("Z", cvv=VectorTime({"C": 4}), dvv=VectorTime({"C": 2}))
    assert not start_rule(deleted, y).may_start
    assert start_rule(deleted, replace(y, cvv=VectorTime({"C": 4, "D": 2}))).may_start
    # `none` takes CVV-X: only events emitted from now on, nothing held.
    assert history_stored(HistoryMode.NONE, x, VectorTime({"C": 4})) == VectorTime()


def test_del2_an_accepted_entry_whose_stored_events_are_all_deleted_stores_nothing_any_more() -> None:
    x = merge_accepted(ACCEPTED, VectorTime({"B": 4}))  # X stored b1, b2 under B:4
    assert stored_after_deletion(x, VectorTime({"B": 1})) == VectorTime({"B": 2})  # b2 still stored
    gone = replace(x, baseline_stored=stored_after_deletion(x, VectorTime({"B": 2, "X": 1})))
    assert gone.baseline_stored == VectorTime()
    # Nothing left to wait for: a `current` joiner takes the entry at once, and so does X after a loss.
    baseline = history_baseline(HistoryMode.CURRENT, gone, Location("Y"))
    assert history_stored(HistoryMode.CURRENT, gone, baseline) == VectorTime()
    assert recovered_clock(gone, VectorTime(), []).cvv == VectorTime({"B": 4})


def test_dr1_the_floor_is_the_seq_the_catalog_recorded_before_the_loss() -> None:
    before_loss = Location("A", seq=9, cvv=VectorTime({"A": 6, "B": 3}), dvv=VectorTime({"B": 1}))
    clock = recovered_clock(before_loss, VectorTime({"A": 2}), [VectorTime({"A": 5}), VectorTime({"C": 8})])
    assert (clock.cvv, clock.floor) == (VectorTime({"A": 2, "B": 1}), 9)


def test_dr1_the_floor_counts_every_other_location_ahead_of_the_catalog() -> None:
    # A backup restore or a catalog restored from an older copy may know less than another location.
    clock = recovered_clock(Location("A", seq=2), VectorTime(), [VectorTime({"A": 4}), VectorTime({"A": 3})])
    assert clock.floor == 4


def test_dr1_a_recovering_location_numbers_after_t_while_its_own_cvv_entry_stays_low() -> None:
    before_loss = Location("A", seq=9, cvv=VectorTime({"A": 9}))
    clock = recovered_clock(before_loss, VectorTime({"A": 2}), [])
    during = recovering(before_loss, clock, last_survivor=2)
    assert (during.seq, during.cvv, during.state) == (9, VectorTime({"A": 2}), LocationState.RECOVERING)


def test_dr2_resets_current_and_removed_connections_from_and_into_the_lost_location() -> None:
    connections = [
        Connection("A", "B", ConnectionState.REMOVED, progress=3),
        Connection("A", "C", ConnectionState.ACTIVE, progress=2),
        Connection("A", "D", ConnectionState.ACTIVE, progress=1),
        Connection("B", "A", ConnectionState.REMOVED, progress=3),
        Connection("C", "A", ConnectionState.BLOCKED, progress=0),
        Connection("B", "C", ConnectionState.ACTIVE, progress=5),
    ]
    resets = progress_resets(connections, "A", last_survivor=1)
    assert [r.to_json() for r in resets] == [
        {"source": "A", "target": "B", "from": 3, "to": 1},
        {"source": "A", "target": "C", "from": 2, "to": 1},
        {"source": "B", "target": "A", "from": 3, "to": 0},
    ]


@given(requests=st.lists(st.integers(min_value=0, max_value=50), min_size=1, max_size=6))
def test_del4_the_pending_target_only_grows_whatever_the_order_of_requests(requests: list[int]) -> None:
    pending: int | None = None
    for n in requests:
        pending = pending_target(n, pending)
    assert pending == max(requests)


def test_del4_a_full_run_may_write_to_every_log_reachable_from_a_pass_that_writes() -> None:
    # Round after round, what A→B writes into B may go on to C over B→C; D, which only feeds B, is unchanged.
    edges = [("A", "B"), ("B", "C"), ("D", "B")]
    assert changed_logs(["B"], edges) == frozenset({"B", "C"})
    assert changed_logs(["B"], None) == frozenset({"B"})  # one pass: only its own target


def test_del4_a_dry_run_decides_a_retry_on_the_progress_its_passes_reach_and_never_lowers_one() -> None:
    outlook = PassOutlook(reaches={("A", "B"): 4, ("C", "B"): 9}, changed=frozenset({"B", "D"}))
    assert outlook.assumed_progress("A") == {"B": 4}
    targets = [Target("B", 3, VectorTime()), Target("D", 7, VectorTime())]
    assert with_progress(targets, outlook.assumed_progress("A")) == [
        Target("B", 4, VectorTime()),
        Target("D", 7, VectorTime()),
    ]
    assert with_progress([Target("B", 6, VectorTime())], {"B": 4}) == [Target("B", 6, VectorTime())]
    assert outlook.depends_on(["D", "E"]) == ["D"]  # E's log does not change before the retry: decided


def test_dr5_the_loss_accepted_first_is_the_source_that_gives_up_fewest_origin_times() -> None:
    # B lacks A:2..3 (2 times), C lacks A:2..5 (4): accept B first; its round may bring what C deleted.
    dvvs = {"C": VectorTime({"A": 5}), "B": VectorTime({"A": 3, "X": 1})}
    cvv = VectorTime({"A": 1, "X": 1})
    assert least_loss([Source("C", None), Source("B", None)], dvvs, cvv) == Source("B", None)
    tie = {"C": VectorTime({"A": 2}), "B": VectorTime({"X": 2})}
    assert least_loss([Source("C", None), Source("B", None)], tie, cvv) == Source("B", None)  # by name


def test_dr5_accepting_merges_only_the_entries_the_cvv_lacks_and_names_them_as_given_up() -> None:
    # DVV-N = {A:6, B:1}; A's CVV already covers A:6 by real events: only B:1 is merged and given up.
    dvv, cvv = VectorTime({"A": 6, "B": 1}), VectorTime({"A": 6})
    assert still_missing(dvv, cvv) == VectorTime({"B": 1})
    assert given_up(VectorTime({"A": 2}), VectorTime({})) == {"A": (1, 2)}
    assert given_up(still_missing(dvv, cvv), cvv) == {"B": (1, 1)}


X, Y, Z = "key LIKE 'x%'", "key LIKE 'y%'", "key = 'z'"


def _history(*changes: tuple[ChangeKind, str | None]) -> list[Change]:
    """A↔N, A terminal; then the given changes of N→A with their filters, in order."""
    located = [Change(kind=ChangeKind.LOCATION_ADDED, location=n, role=Role.READ_WRITE) for n in "AN"]
    out = Change(kind=ChangeKind.CONNECTION_ADDED, source="A", target="N")
    into = [Change(kind=kind, source="N", target="A", filter=expression) for kind, expression in changes]
    return [*located, out, *into]


def _terminal_sources(changes: list[Change], current: str | None) -> list[Source]:
    connections = {
        ("A", "N"): Connection("A", "N", ConnectionState.ACTIVE),
        ("N", "A"): Connection("N", "A", ConnectionState.ACTIVE, filter=current, ever_filtered=True),
    }
    sources, refused = eligible_sources(fold(changes), "A", connections, or_origin)
    assert refused == []
    return sources


def test_dr3_a_terminal_source_is_read_through_every_filter_it_ever_had_across_a_reconnect() -> None:
    # ADD4: the removed connection's filters are history; the new one's current filter is not all A held.
    changes = _history(
        (ChangeKind.CONNECTION_ADDED, X),
        (ChangeKind.FILTER_SET, Y),
        (ChangeKind.CONNECTION_REMOVED, None),
        (ChangeKind.CONNECTION_ADDED, Z),
    )
    assert history_filters(fold(changes), "N", "A", Z) == (Z, X, Y)
    assert _terminal_sources(changes, Z) == [
        Source("N", "(key = 'z') OR (key LIKE 'x%') OR (key LIKE 'y%') OR origin = 'A'")
    ]


def test_dr3_a_terminal_source_with_one_filter_all_along_is_read_through_it() -> None:
    changes = _history((ChangeKind.CONNECTION_ADDED, X))
    assert _terminal_sources(changes, X) == [Source("N", "(key LIKE 'x%') OR origin = 'A'")]


def test_dr3_a_terminal_source_ever_unfiltered_is_read_unfiltered() -> None:
    cleared = _history(
        (ChangeKind.CONNECTION_ADDED, X), (ChangeKind.FILTER_CLEARED, None), (ChangeKind.FILTER_SET, Y)
    )
    unfiltered_before = _history(
        (ChangeKind.CONNECTION_ADDED, None),
        (ChangeKind.CONNECTION_REMOVED, None),
        (ChangeKind.CONNECTION_ADDED, Y),
    )
    for changes in (cleared, unfiltered_before):
        assert history_filters(fold(changes), "N", "A", Y) is None
        assert _terminal_sources(changes, Y) == [Source("N", None)]


# An accepted loss of B:3..4 while A stored B:1..2 (DR5): the entry B:4 covers b1, b2 by its number alone.
ACCEPTED = Location("A", cvv=VectorTime({"B": 2}), state=LocationState.RECOVERING)


def test_dr5_an_accepted_loss_merges_into_cvv_dvv_and_baseline_with_what_a_stored() -> None:
    after = merge_accepted(ACCEPTED, VectorTime({"B": 4}))
    assert (after.cvv, after.dvv) == (VectorTime({"B": 4}), VectorTime({"B": 4}))
    assert (after.baseline, after.baseline_stored) == (VectorTime({"B": 4}), VectorTime({"B": 2}))
    # A second accepted loss of the same origin keeps the larger of what A stored then and before.
    again = merge_accepted(replace(after, cvv=VectorTime({"B": 1})), VectorTime({"B": 6}))
    assert (again.baseline, again.baseline_stored) == (VectorTime({"B": 6}), VectorTime({"B": 2}))


def test_dr1_an_accepted_entry_waits_until_the_events_a_stored_under_it_are_back() -> None:
    accepted = merge_accepted(ACCEPTED, VectorTime({"B": 4}))
    # A total loss: nothing survived, so B:4 (in DVV-A too) is held back and CF1 does not skip b1, b2.
    assert deletions_known(accepted) == VectorTime()
    assert recovered_clock(accepted, VectorTime(), []).cvv == VectorTime()
    assert held_back(accepted, VectorTime({"B": 1})) == VectorTime({"B": 4})
    # b1, b2 back: the entry counts again, so a source whose DVV is B:4 is ready (DR4).
    assert with_baseline(accepted, VectorTime({"B": 2, "C": 1})) == VectorTime({"B": 4, "C": 1})
    assert held_back(accepted, VectorTime({"B": 2})) == VectorTime()
    # A complete recovery without b2 counts it too, and names b2 lost.
    assert unrecovered(accepted, VectorTime({"B": 1})) == {"B": (2, 2)}
    assert recovery_done(replace(accepted, cvv=VectorTime({"B": 1}))).cvv == VectorTime({"B": 4})


def test_dr1_a_deletion_beyond_the_accepted_entry_is_known_at_once() -> None:
    # A deleted an event of B with B:6 after accepting B:4: that deletion covers b1, b2 (they precede it).
    deleted = replace(merge_accepted(ACCEPTED, VectorTime({"B": 4})), dvv=VectorTime({"B": 6}))
    assert deletions_known(deleted) == VectorTime({"B": 6})
    assert recovered_clock(deleted, VectorTime(), []).cvv == VectorTime({"B": 6})


def test_dr1_a_baseline_with_nothing_stored_under_it_counts_at_once() -> None:
    # ADD3's history modes, and catalogs from before `baseline_stored`: the entry is known, as always.
    add3 = Location("Y", dvv=VectorTime({"X": 3}), baseline=VectorTime({"X": 3}))
    assert recovered_clock(add3, VectorTime(), []).cvv == VectorTime({"X": 3})
    assert held_back(add3, VectorTime()) == VectorTime()


def test_i3_i4_count_only_the_entries_a_recovering_cvv_holds() -> None:
    accepted = merge_accepted(ACCEPTED, VectorTime({"B": 4, "C": 2}))
    recovering_now = replace(accepted, cvv=VectorTime({"C": 2}))
    assert counted_now(recovering_now) == (VectorTime({"C": 2}), VectorTime({"C": 2}))
    active = replace(accepted, state=LocationState.ACTIVE)
    assert counted_now(active) == (accepted.dvv, accepted.baseline)


def test_i3_i4_outside_a_recovery_leave_out_only_an_entry_held_until_its_stored_events_are_back() -> None:
    # ADD3 `current` holds B:4 back at Y until Y stores B up to 2 (what its source stored under the entry).
    joined = Location(
        "Y",
        dvv=VectorTime({"B": 4}),
        baseline=VectorTime({"B": 4}),
        baseline_stored=VectorTime({"B": 2}),
    )
    assert counted_now(joined) == (VectorTime(), VectorTime())
    assert counted_now(replace(joined, cvv=VectorTime({"B": 4}))) == (joined.dvv, joined.baseline)
    # Y stored b1, b2 under the held entry and deleted b1: what it deleted is no more than CVV-Y.
    assert counted_now(replace(joined, cvv=VectorTime({"B": 1}))) == (VectorTime({"B": 1}), VectorTime())


def test_dr1_own_events_count_as_not_held_unless_an_accepted_entry_covers_own_events_stored() -> None:
    none_stored = merge_accepted(
        Location("A", cvv=VectorTime({"A": 1}), dvv=VectorTime({"A": 1})), VectorTime({"A": 5})
    )
    assert own_not_held(none_stored) == 0  # A stored a1 under the entry: every own event is checked
    deleted_only = Location("A", cvv=VectorTime({"A": 3}), dvv=VectorTime({"A": 3}))
    assert own_not_held(deleted_only) == 3


@given(
    baseline=st.dictionaries(st.sampled_from("BCD"), st.integers(1, 9)),
    stored=st.dictionaries(st.sampled_from("BCD"), st.integers(0, 9)),
    cvv=st.dictionaries(st.sampled_from("BCD"), st.integers(0, 9)),
)
def test_dr1_counting_the_baseline_only_grows_the_vector_and_is_whole_once_the_stored_part_is_back(
    baseline: dict[str, int], stored: dict[str, int], cvv: dict[str, int]
) -> None:
    loc = Location("A", baseline=VectorTime(baseline), baseline_stored=VectorTime(stored))
    vector = VectorTime(cvv)
    counted = with_baseline(loc, vector)
    assert vector <= counted <= vector | loc.baseline
    assert with_baseline(loc, counted) == counted
    assert (counted | held_back(loc, vector)) == vector | loc.baseline
    if loc.baseline_stored <= vector:
        assert counted == vector | loc.baseline


def test_held_past_says_whether_the_store_still_reads_a_row_at_or_past_the_gap() -> None:
    from replctl.core.recovery import FileRead, held_past

    read = {
        "A/s1": {"f": FileRead(2, 1, 2)},
        "A/s3": {"g": FileRead(1, 5, 5)},
        "A/s4": {"h": FileRead(0, None, None)},
    }
    assert held_past(read, 3) and held_past(read, 5)
    assert not held_past(read, 6)
    assert not held_past({}, 1)


def test_a_file_whose_bytes_changed_is_lost_from_its_first_seq_yet_still_held() -> None:
    # `FileRead.changed`: recovery discards it as a gap (DR0), but the store still holds it, so the events
    # it held need the consent intact ones past a gap need (`held_past`); they are named by the seq range
    # its row recorded, and the file is never read to decide it (`without_changed`).
    from replctl.core.model import Segment, SegmentFile
    from replctl.core.recovery import FileRead, held_past, lost_from, without_changed

    rotted = SegmentFile("f", 10, rows=2, seq_lo=3, seq_hi=4, sha256="x")
    intact = SegmentFile("g", 10, rows=1, seq_lo=5, seq_hi=5, sha256="y")
    segments = [
        Segment(1, "A", "A/s1", 1, 2, 2, files=(SegmentFile("e", 10, rows=2, seq_lo=1, seq_hi=2),)),
        Segment(2, "A", "A/s2", 3, 5, 3, files=(rotted, intact)),
    ]
    whole = {"A/s1": {"e": FileRead(2, 1, 2)}}
    read = {**whole, "A/s2": {"f": FileRead(0, None, None, changed=True), "g": FileRead(1, 5, 5)}}
    assert lost_from(segments, read) == 3
    assert held_past(read, 3)
    assert without_changed(segments, read) == (
        [segments[0], Segment(2, "A", "A/s2", 3, 5, 3, files=(intact,))],
        [(3, 4)],
    )
    assert without_changed(segments, whole) == (segments, [])
    assert not held_past(whole, 3)


def test_rows_below_keeps_the_segments_and_files_a_recovery_keeps() -> None:
    # The dry run reads only what the run keeps (DR1): a file past the first lost seq is never opened.
    from replctl.core.model import Segment, SegmentFile
    from replctl.core.recovery import rows_below

    first = SegmentFile("e", 10, rows=2, seq_lo=1, seq_hi=2)
    second, third = (
        SegmentFile("f", 10, rows=2, seq_lo=3, seq_hi=4),
        SegmentFile("g", 10, rows=1, seq_lo=5, seq_hi=5),
    )
    old = Segment(3, "A", "A/s0", 6, 6, 1, files=(SegmentFile("h", 10),))  # a row without per-file seqs
    segments = [
        Segment(1, "A", "A/s1", 1, 2, 2, files=(first,)),
        Segment(2, "A", "A/s2", 3, 5, 3, files=(second, third)),
        old,
    ]
    assert rows_below(segments, 5) == [segments[0], Segment(2, "A", "A/s2", 3, 5, 3, files=(second,))]
    assert rows_below(segments, 3) == [segments[0]]
    assert rows_below(segments, 7) == segments
    assert rows_below(segments, None) == segments
