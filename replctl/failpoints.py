"""Failpoints: named step boundaries at which a test makes the process die, to prove crash safety (REP3).

`REPLCTL_FAILPOINT=<name>` kills the process with SIGKILL when it reaches that point, as a power cut would;
`<name>@<n>` kills it the n-th time it gets there (a point inside a loop, such as one replication pass of
many). `REPLCTL_FAILPOINT_MODE=raise` raises `FailpointCrash` instead, so in-process tests can simulate the
same crash without losing their interpreter; `REPLCTL_FAILPOINT_MODE=pause:SECONDS` only waits there, holding
whatever the operation holds, so that a test can make two operators meet. Unset, a failpoint costs one
dictionary lookup.

Every point is listed in `POINTS`, in the order an operation meets it, with the state a crash there leaves
behind; a test checks that the code hits no other name, so that a new boundary is listed (and then crashed
at) as soon as it is added. Files a crash leaves unreferenced are orphans: never read, collected by
`log compact LOC --gc`.
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter

# name -> what is committed and what is not when a process dies there.
POINTS: dict[str, str] = {
    "operation.after-lease": "leases taken and journalled as running; nothing done",
    "append.after-write": "the new segment written, the catalog not: an orphan",
    "replicate.after-write": "one pass's segment written, its rows and progress not: an orphan",
    "replicate.after-commit": "one pass committed (rows, CVV, progress); the next not begun",
    "delete.after-rewrite": "the straddling segment's survivors written, the catalog not: an orphan",
    "delete.after-commit": "the cut committed (rows, DVV, deleted_upto); the dropped files not yet removed",
    "backup.after-copy": "one segment copied into the backup store, the manifest not written: no backup yet",
    "restore.after-copy": "the backup's segments copied into the log store, the catalog not: orphans",
    "recover.before-metadata": "survivors of a straddling segment written, the catalog not: an orphan",
    "recover.after-metadata": "the location recovering with its metadata reset; lost files not yet removed",
    "recover.before-end": "events recovered; the clock floor (DR1) not yet applied",
    "compact.after-write": "one run's merged segment written, the catalog not: an orphan",
    "compact.after-commit": "the merged segment committed in place of its run; the run's files not removed",
    "compact.after-remove": "one run merged and its old files removed; the next run (or --gc) not begun",
    "compact.gc-after-remove": "one orphan folder removed by --gc; the others not yet",
    "retire.before-prune": "the retirement committed (RET1); the clock pruning (RET2) not begun",
    "prune.after-rewrite": "one log's pruned copies written, the catalog not: orphans",
    "prune.after-commit": "one log's pruned rows and parked CVV[Z] committed; its old files not removed",
    "prune.after-log": "one log pruned and its old files removed; the next log not begun",
    "prune.before-vectors": "every vt pruned, Z not yet recorded as pruned (new vts would still carry it)",
    "operation.before-finish": "every step committed; the journal's outcome and the lease release not",
}


class FailpointCrash(BaseException):
    """Raised at a failpoint in `raise` mode; derives from BaseException so no handler swallows it."""


# How often each named point was reached in this process, for `<name>@<n>`.
_reached: Counter[str] = Counter()


def reset() -> None:
    """Forget the visits counted so far (an in-process test runs many commands in one interpreter)."""
    _reached.clear()


def hit(name: str) -> None:
    """Die here if the environment names this failpoint (one of `POINTS`; with `@n`, on its n-th visit)."""
    wanted = os.environ.get("REPLCTL_FAILPOINT")
    if not wanted or not wanted.startswith(name):
        return
    point, _, nth = wanted.partition("@")
    if point != name:
        return
    _reached[name] += 1
    if nth and str(_reached[name]) != nth.strip():
        return
    mode = os.environ.get("REPLCTL_FAILPOINT_MODE", "")
    if mode == "raise":
        raise FailpointCrash(wanted)
    if mode.startswith("pause:"):
        time.sleep(float(mode.removeprefix("pause:")))
        return
    os.kill(os.getpid(), signal.SIGKILL)
