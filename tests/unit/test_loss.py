"""How a recovery names what it discards and loses (core.loss, rules.md DR0, DR1)."""

from __future__ import annotations

from replctl.core.loss import own_lost, own_runs, ranges, ranges_text, span, union, with_given_up
from replctl.core.vectortime import VectorTime


def test_origin_times_are_named_by_their_runs_per_origin() -> None:
    assert ranges([4, 1, 2, 2]) == [(1, 2), (4, 4)]
    assert ranges([]) == []
    assert ranges_text({"A": [2, 3, 5], "B": [1]}) == "A:2..3, A:5, B:1"
    assert span([5, 2, 3]) == (2, 5)


def test_own_events_lost_are_those_after_the_dvv_the_location_no_longer_stores_dr0() -> None:
    # Appended at seqs 1..5 (EM1: origin_time = seq), 1 deleted on purpose (DVV-A[A] = 1).
    assert own_lost(5, 1, {2, 4}, [(1, 5)]) == [3, 5]
    assert own_lost(5, 5, set(), [(1, 5)]) == []
    assert own_lost(3, 0, {1, 2, 3}, [(1, 3)]) == []


def test_own_origin_times_are_those_appended_not_every_seq_em1() -> None:
    # A appended at seqs 1 and 3 and received an event at seq 2: origin time 2 was never A's.
    assert own_lost(3, 0, {1, 3}, [(1, 1), (3, 3)]) == []
    assert own_lost(3, 0, set(), [(3, 3), (1, 1)]) == [1, 3]
    assert own_lost(9, 2, set(), [(1, 4), (8, 9)]) == [3, 4, 8, 9]


def test_what_an_accepted_loss_gave_up_is_lost_as_far_as_the_location_held_it_dr5() -> None:
    # Y held A:1..6 and B:1..2 before the loss; accepting merged A:1..2 and B:2..4 and C:1 (never held).
    before = VectorTime({"A": 6, "B": 2})
    given = {"A": [(1, 2)], "B": [(2, 4)], "C": [(1, 1)]}
    assert with_given_up({}, given, before) == {"A": [(1, 2)], "B": [(2, 2)]}
    assert with_given_up({"B": [(1, 1)]}, {"B": [(2, 2)]}, before) == {"B": [(1, 2)]}
    # A gap the given-up ranges do not touch stays apart (`lost_runs`), and so do two given-up ranges.
    assert with_given_up({"A": [(5, 6)]}, {"A": [(1, 2)]}, before) == {"A": [(1, 2), (5, 6)]}
    assert with_given_up({}, {"A": [(1, 2), (4, 9)]}, before) == {"A": [(1, 2), (4, 6)]}


def test_runs_merge_where_they_overlap_or_touch() -> None:
    assert union([(5, 6), (1, 2), (3, 3), (8, 9), (9, 12)]) == [(1, 3), (5, 6), (8, 12)]
    assert union([]) == []


def test_own_lost_runs_are_not_split_by_the_times_of_events_received_em1() -> None:
    # A appended at seqs 1, 3..4 and 6 (2 and 5 were received); it lost 1, 3 and 6 but still has 4.
    emitted = [(1, 1), (3, 4), (6, 6)]
    assert own_runs([1, 3, 6], emitted) == [(1, 3), (6, 6)]
    assert own_runs([1, 3, 4, 6], emitted) == [(1, 6)]
    assert own_runs([], emitted) == []
