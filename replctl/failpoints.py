"""Failpoints: named step boundaries at which a test makes the process die, to prove crash safety (REP3).

`REPLCTL_FAILPOINT=<name>` kills the process with SIGKILL when it reaches that point, as a power cut would.
`REPLCTL_FAILPOINT_MODE=raise` raises `FailpointCrash` instead, so in-process tests can simulate the same
crash without losing their interpreter. Unset, a failpoint costs one dictionary lookup.
"""

from __future__ import annotations

import os
import signal


class FailpointCrash(BaseException):
    """Raised at a failpoint in `raise` mode; derives from BaseException so no handler swallows it."""


def hit(name: str) -> None:
    """Die here if the environment names this failpoint."""
    if os.environ.get("REPLCTL_FAILPOINT") != name:
        return
    if os.environ.get("REPLCTL_FAILPOINT_MODE") == "raise":
        raise FailpointCrash(name)
    os.kill(os.getpid(), signal.SIGKILL)
