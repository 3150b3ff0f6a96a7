"""A store that refuses to remove what a committed change left (the old segment folders of a deletion or a
compaction): the command says the change is committed and what is left, and the change stands."""

from __future__ import annotations

import os

import pytest
from clitool import Replctl
from unremovable import held_fast

# Held fast as root by an immutable file (EPERM), as anyone else by a read-only folder (EACCES).
REASON = "Operation not permitted" if os.geteuid() == 0 else "Permission denied"


def _segments(rc: Replctl, location: str) -> list[str]:
    """The segment folders of `location` in the store, in first-seq order (their names sort so)."""
    return sorted(
        f"{location}/{p.name}" for p in (rc.store / location).iterdir() if p.name.startswith("seg-")
    )


@pytest.mark.parametrize(
    "command",
    [pytest.param("delete"), pytest.param("compact", marks=pytest.mark.spark)],
)
def test_a_store_that_refuses_to_remove_what_a_committed_change_left_is_told_as_such_and_the_change_stands(
    rc: Replctl, command: str
) -> None:
    rc("location", "add", "A")
    rc.append("A", "a1", "a2")
    rc.append("A", "a3")
    first, second = _segments(rc, "A")
    if command == "delete":
        args: tuple[str, ...] = ("delete", "A", "--upto", "2")
        committed = "delete A: the deletion up to seq 2 is committed"
        consequence = "the deleted events' bytes stay on the storage until those folders are removed"
        stands = [("A", 3, "a3")]
    else:
        args = ("log", "compact", "A")
        stands = [("A", 1, "a1"), ("A", 2, "a2"), ("A", 3, "a3")]
    with held_fast(rc.store / first):
        doc = rc.json(*args, expect=6)
        if command == "compact":
            (merged,) = set(_segments(rc, "A")) - {first, second}
            committed = f"log compact A: the merge of seq 1..3 (2 segments) into {merged} is committed"
            consequence = "those folders hold copies of the merged events, which nothing reads"
        assert doc["error"] == {
            "code": "store-leftovers",
            "message": f"{committed}, but the store refused to remove 1 folder(s) the change left behind: {first} "
            f"({REASON}); the change stands and is not undone: {consequence}",
            "hint": "let the store remove them (permissions, locks), then: replctl log compact A --gc",
            "details": {"committed": committed, "left": [first]},
        }
        # The change stands: the log holds exactly what it committed, and the folder is still there.
        assert rc.stored("A") == stands
        assert (rc.store / first).is_dir()
    if command == "delete":
        assert rc.location("A")["deleted_upto"] == 2
    # Once the store lets go, the hint's command collects what was left, and nothing else.
    assert rc.json("log", "compact", "A", "--gc")["orphans_removed"] == [first]
    assert rc.stored("A") == stands
