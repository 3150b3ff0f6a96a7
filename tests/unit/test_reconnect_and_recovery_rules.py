"""Reconnects (ADD4), the clock and progress after a loss (DR1, DR2) and the pending deletion target (DEL4):
pure decisions of the core."""

from __future__ import annotations

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
    eligible_sources,
    given_up,
    history_filters,
    least_loss,
    progress_resets,
    recovered_clock,
    recovering,
    still_missing,
)
from replctl.core.startrule import new_connection, start_rule
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
