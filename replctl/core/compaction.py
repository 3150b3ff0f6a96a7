"""Which segments `log compact` merges: runs of consecutive small segments (pure).

Many small replication passes leave many small segment files; reading them costs a file listing and a task
each. Large segments are left alone so that compaction never rewrites a whole big log.
"""

from __future__ import annotations

from replctl.core.model import Segment


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
    """Segment folders in the store that no catalog row names: never read, safe to remove under the lease."""
    return sorted(path for path in stored if path not in catalogued)
