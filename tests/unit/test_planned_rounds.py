"""`PlannedRounds`: which passes of a full `replicate` its dry run decides, and which it lists as `depends`,
round after round (REP1, REP2, issue 14)."""

from __future__ import annotations

from replctl.core.planned_rounds import Key, PlannedRounds

# How a decided pass is recorded: (writes to its target, reads its source to the end, repeats in every round).
WRITES = (True, True, False)
IDLE = (False, True, False)
WAITS = (False, False, False)
DAMAGED = (False, False, True)


def listing(
    connections: list[Key], decided: dict[Key, tuple[bool, bool, bool]]
) -> list[tuple[int, str, str]]:
    """The passes a dry run lists, as `replicate_all` takes them: (round, "X→Y", what), round after round in
    the connections' order, until a round lists nothing; what is "decided" or "depends on P"."""
    planned = PlannedRounds(connections)
    listed: list[tuple[int, str, str]] = []
    for number in range(1, 100):
        before = len(listed)
        for key in connections:
            if planned.listed(key):
                continue
            label = f"{key[0]}→{key[1]}"
            earlier = planned.waits_for(key)
            if earlier is not None:
                planned.depends(key)
                listed.append((number, label, f"depends on {earlier}"))
                continue
            writes, reads_to_end, repeats = decided[key]
            planned.decided(key, writes=writes, reads_to_end=reads_to_end, state="active", repeats=repeats)
            listed.append((number, label, "decided"))
        if len(listed) == before:
            return listed
    raise AssertionError("the dry run's rounds did not end")


def test_a_pass_earlier_in_the_order_than_the_one_feeding_it_depends_in_the_next_round() -> None:
    yx, zy = ("Y", "X"), ("Z", "Y")
    assert listing([yx, zy], {yx: WRITES, zy: WRITES}) == [
        (1, "Y→X", "decided"),
        (1, "Z→Y", "decided"),
        (2, "Y→X", "depends on Z→Y"),
    ]


def test_every_pass_downstream_of_one_that_depends_depends_in_the_same_round() -> None:
    ab, bc, cd = ("A", "B"), ("B", "C"), ("C", "D")
    assert listing([ab, bc, cd], {ab: WRITES, bc: WRITES, cd: WRITES}) == [
        (1, "A→B", "decided"),
        (1, "B→C", "depends on A→B"),
        (1, "C→D", "depends on B→C"),
    ]


def test_a_cycle_against_the_order_ends_each_connection_listed_at_most_twice() -> None:
    # C→A feeds A→B, which feeds B→C, which feeds C→A: only running tells how many rounds the run takes.
    ab, bc, ca = ("A", "B"), ("B", "C"), ("C", "A")
    assert listing([ab, bc, ca], {ab: IDLE, bc: IDLE, ca: WRITES}) == [
        (1, "A→B", "decided"),
        (1, "B→C", "decided"),
        (1, "C→A", "decided"),
        (2, "A→B", "depends on C→A"),
        (2, "B→C", "depends on A→B"),
        (2, "C→A", "depends on B→C"),
    ]


def test_a_change_of_its_target_alone_lists_again_a_pass_that_waited_not_one_that_read_to_the_end() -> None:
    # A→B read all of A; C→B may write to B after it, and A→B's next pass still finds nothing new. D→B, which
    # waits (ADD1, pending) for what B holds, may start once A→B has written to B.
    ab, cb, db = ("A", "B"), ("C", "B"), ("D", "B")
    assert listing([ab, cb, db], {ab: WRITES, cb: WRITES, db: WAITS}) == [
        (1, "A→B", "decided"),
        (1, "C→B", "depends on A→B"),
        (1, "D→B", "depends on A→B"),
    ]
    assert listing([db, ab], {ab: WRITES, db: WAITS}) == [
        (1, "D→B", "decided"),
        (1, "A→B", "decided"),
        (2, "D→B", "depends on A→B"),
    ]


def test_a_wait_no_pass_ends_is_listed_once() -> None:
    # A→C waits at C's damaged log (DR0), which no pass of the run repairs, though B→A feeds A.
    ac, ba = ("A", "C"), ("B", "A")
    assert listing([ac, ba], {ac: DAMAGED, ba: WRITES}) == [(1, "A→C", "decided"), (1, "B→A", "decided")]
