"""Failpoints: named step boundaries at which a test makes the process die, to prove crash safety (REP3).

`REPLCTL_FAILPOINT=<name>` kills the process with SIGKILL when it reaches that point, as a power cut would;
`<name>@<n>` kills it the n-th time it gets there (a point inside a loop, such as one replication pass of
many). `REPLCTL_FAILPOINT_MODE=raise` raises `FailpointCrash` instead, so in-process tests can simulate the
same crash without losing their interpreter; `REPLCTL_FAILPOINT_MODE=pause:SECONDS` only waits there, holding
whatever the operation holds, so that a test can make two operators meet. Unset, a failpoint costs one
dictionary lookup.

The points, in the order an operation meets them: `operation.after-lease` (leases taken, nothing done),
`append.after-write`, `replicate.after-write`, `replicate.after-commit`, `delete.after-rewrite`,
`delete.after-commit`, `recover.before-metadata`, `recover.after-metadata`, `recover.before-end`,
`prune.after-rewrite`, `prune.after-commit`, and `operation.before-finish` (every step committed, the
journal's outcome and the lease release not yet).
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter


class FailpointCrash(BaseException):
    """Raised at a failpoint in `raise` mode; derives from BaseException so no handler swallows it."""


# How often each named point was reached in this process, for `<name>@<n>`.
_reached: Counter[str] = Counter()


def reset() -> None:
    """Forget the visits counted so far (an in-process test runs many commands in one interpreter)."""
    _reached.clear()


def hit(name: str) -> None:
    """Die here if the environment names this failpoint (and, with `@n`, this is its n-th visit)."""
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
