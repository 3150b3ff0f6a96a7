"""How a recovery names what it discards and loses (core.loss, rules.md DR0, DR1)."""

from __future__ import annotations

from replctl.core.loss import own_lost, ranges, ranges_text, span


def test_origin_times_are_named_by_their_runs_per_origin() -> None:
    assert ranges([4, 1, 2, 2]) == [(1, 2), (4, 4)]
    assert ranges([]) == []
    assert ranges_text({"A": [2, 3, 5], "B": [1]}) == "A:2..3, A:5, B:1"
    assert span([5, 2, 3]) == (2, 5)


def test_own_events_lost_are_those_after_the_dvv_the_location_no_longer_stores_dr0() -> None:
    # A's own origin times are dense (EM1): 1..5 before the loss, 1 deleted on purpose (DVV-A[A] = 1).
    assert own_lost(5, 1, {2, 4}) == [3, 5]
    assert own_lost(5, 5, set()) == []
    assert own_lost(3, 0, {1, 2, 3}) == []
