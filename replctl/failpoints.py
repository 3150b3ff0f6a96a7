"""Failpoints: named step boundaries at which a test makes the process die, to prove crash safety (REP3).

`REPLCTL_FAILPOINT=<name>` kills the process with SIGKILL when it reaches that point, as a power cut would;
`<name>@<n>` kills it the n-th time it gets there (a point inside a loop, such as one replication pass of
many). `REPLCTL_FAILPOINT_MODE=raise` raises `FailpointCrash` instead, so in-process tests can simulate the
same crash without losing their interpreter; `REPLCTL_FAILPOINT_MODE=pause:SECONDS` only waits there, holding
whatever the operation holds, so that a test can make two operators meet; `REPLCTL_FAILPOINT_MODE=fifo:PATH`
waits there until a test opens the FIFO at PATH for writing and closes it, with no clock involved. Unset, a
failpoint costs one dictionary lookup.

In-process tests of races use `calling(name, callback)` instead: the first time the point is reached, the
callback runs right there (typically another command, as a second operator would run it), while the first
operation is paused inside its critical window holding its leases. No clock is involved: the interleaving is
exactly the one the test names.

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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

# name -> what is committed and what is not when a process dies there.
POINTS: dict[str, str] = {
    "operation.after-lease": "leases taken and journalled as running; nothing done",
    "damage.before-refusal": "the census found the log damaged (DR0); the refusal (exit 4) not yet given: "
    "nothing written",
    "append.after-write": "the new segment written, the catalog not: an orphan",
    "replicate.after-write": "one pass's segment written, its rows and progress not: an orphan",
    "replicate.after-commit": "one pass committed (rows, CVV, progress); the next not begun",
    "replicate.in-commit": "inside a pass's committing transaction, its compare-and-set on the connection row "
    "passed: the transaction is rolled back, the pass's segment an orphan",
    "delete.after-rewrite": "the straddling segment's survivors written, the catalog not: an orphan",
    "delete.in-commit": "inside the cut's committing transaction, its targets read again: the transaction is "
    "rolled back, the straddling segment's survivors an orphan",
    "delete.after-commit": "the cut committed (rows, DVV, deleted_upto); the dropped files not yet removed",
    "backup.before-aside-removed": "a recopy's whole copy renamed into place, the damaged copy it replaced "
    "still set aside (hidden, `.damaged`), the manifest not written: the next backup or prune removes it",
    "backup.after-copy": "one segment copied into the backup store, the manifest not written: no backup yet",
    "restore.after-copy": "the backup's segments copied into the log store, the catalog not: orphans",
    "recover.after-census": "the loss found (DR0); the location not yet marked recovering, nothing changed",
    "recover.before-metadata": "survivors of a straddling segment written, the catalog not: an orphan",
    "recover.after-metadata": "the location recovering with its metadata reset; lost files not yet removed",
    "recover.before-end": "events recovered; the clock floor (DR1) not yet applied",
    "recover.after-end": "the clock floor and A's state committed (`end`, the recovery's last commit); the loss "
    "report (reads only) and the journal's outcome not",
    "compact.after-write": "one run's merged segment written, the catalog not: an orphan",
    "compact.after-commit": "the merged segment committed in place of its run; the run's files not removed",
    "compact.after-remove": "one run merged and its old files removed; the next run (or --gc) not begun",
    "compact.gc-after-remove": "one orphan folder removed by --gc; the others not yet",
    "retire.after-scan": "RET1's scan of the stored identities done outside the write lock, the retirement not "
    "yet decided or recorded: nothing changed",
    "retire.before-prune": "the retirement committed (RET1); the clock pruning (RET2) not begun",
    "prune.after-rewrite": "one log's pruned copies written, the catalog not: orphans",
    "prune.after-commit": "one log's pruned rows and parked CVV[Z] committed; its old files not removed",
    "prune.after-log": "one log pruned and its old files removed; the next log not begun",
    "prune.before-vectors": "every vt pruned, Z not yet recorded as pruned (new vts would still carry it)",
    "operation.before-finish": "every step committed but a closing one (a backup's: its manifest written), "
    "which commits with the journal's outcome and the lease release: none of them",
}


class FailpointCrash(BaseException):
    """Raised at a failpoint in `raise` mode; derives from BaseException so no handler swallows it."""


# How often each named point was reached in this process, for `<name>@<n>`.
_reached: Counter[str] = Counter()


# Callbacks registered by `calling`, each run once, at the first visit of its point.
_callbacks: dict[str, Callable[[], None]] = {}


def reset() -> None:
    """Forget the visits counted so far (an in-process test runs many commands in one interpreter)."""
    _reached.clear()


@contextmanager
def calling(name: str, callback: Callable[[], object]) -> Iterator[list[str]]:
    """Within the block, run `callback` once, the first time the process reaches the point `name`.

    Yields a list that records `name` once the callback has run, so a test can assert that the interleaving
    it meant to create did happen. What `callback` returns is ignored (a test may pass a CLI call).
    """
    if name not in POINTS:
        raise ValueError(f"unknown failpoint {name}")
    ran: list[str] = []

    def once() -> None:
        del _callbacks[name]
        ran.append(name)
        callback()

    _callbacks[name] = once
    try:
        yield ran
    finally:
        _callbacks.pop(name, None)


def hit(name: str) -> None:
    """Die here if the environment names this failpoint (one of `POINTS`; with `@n`, on its n-th visit);
    run the callback a test registered for it (`calling`)."""
    callback = _callbacks.get(name)
    if callback is not None:
        callback()
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
    if mode.startswith("fifo:"):
        # Held until a test has opened the FIFO for writing and closed it again: the pause ends exactly when
        # the test says, however slowly either process started.
        with Path(mode.removeprefix("fifo:")).open("rb") as fifo:
            fifo.read()
        return
    if mode.startswith("pause:"):
        time.sleep(float(mode.removeprefix("pause:")))
        return
    os.kill(os.getpid(), signal.SIGKILL)
