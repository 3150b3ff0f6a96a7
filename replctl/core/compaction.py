"""Which segments `log compact` merges: runs of consecutive small segments (pure).

Many small replication passes leave many small segment files; reading them costs a file listing and a task
each. Large segments are left alone so that compaction never rewrites a whole big log.
"""

from __future__ import annotations

from dataclasses import dataclass

from replctl.core.model import Segment


@dataclass(frozen=True)
class CompactionPlan:
    """What `log compact` does to one log: the runs it merges and the segment count before and after.

    The dry run prints it and the run executes it, so both report the same counts (issue 14: the dry run once
    read the count after from the catalog it had not changed, "6 → 6", while the run did 6 → 1).
    """

    runs: list[list[Segment]]
    segments_before: int

    @property
    def segments_after(self) -> int:
        """Each merged run of k segments becomes one."""
        return self.segments_before - sum(len(run) - 1 for run in self.runs)


def plan_compaction(segments: list[Segment], target_size: int) -> CompactionPlan:
    """The plan for a log whose segment rows are `segments` (in seq order)."""
    return CompactionPlan(merge_runs(segments, target_size), len(segments))


def merge_runs(segments: list[Segment], target_size: int) -> list[list[Segment]]:
    """Consecutive segments smaller than `target_size`, grouped while a group stays under it; singles dropped."""
    runs: list[list[Segment]] = []
    current: list[Segment] = []
    total = 0
    for seg in segments:
        if seg.count >= target_size or total + seg.count > target_size:
            if len(current) > 1:
                runs.append(current)
            current, total = ([], 0) if seg.count >= target_size else ([seg], seg.count)
            continue
        current.append(seg)
        total += seg.count
    if len(current) > 1:
        runs.append(current)
    return runs


def orphans(stored: list[str], catalogued: set[str]) -> list[str]:
    """Segment folders in the store that no catalog row names: never read, safe to remove under the lease.

    Compared regardless of case: on a store whose file system ignores case, `eu/seg-…` and `EU/seg-…` are one
    folder, so a folder that a row of a location whose id differs only in case names (passed in `catalogued`)
    is that location's segment, not an orphan. On a case-sensitive store this keeps at most a folder whose
    name differs from a row's only in case, which no writer makes: the safe way to be wrong.
    """
    named = {path.casefold() for path in catalogued}
    return sorted(path for path in stored if path.casefold() not in named)
