"""Ctrl-C (issue 18) and SIGTERM: one line, exit 130 or 143, the journal says `interrupted`; no py4j or Java
traceback.

PySpark installs its own SIGINT handler when it starts a SparkContext: it cancels every job through py4j from
inside the signal handler, which re-enters the py4j call the main thread is blocked in, and py4j then logs
each broken call with a full traceback on the root logger (~100 lines). replctl owns Ctrl-C instead: the
Spark adapter puts back the handler it found (`adapters.spark.session`), and the handler here silences the
root logger, then raises `KeyboardInterrupt` where the main thread is. The operation turns it into
`Interrupted` (services.operations), the boundary prints it, and the jobs the interrupted call left running
are cancelled on the way out (`AppContext.cancel_spark_jobs`).

SIGTERM (systemd, `timeout`, a container stop) is the same request from a supervisor: Python's default action
would end the process on the spot, its journal entry left `running` and its leases held until they expire (on
a shared catalog others wait the whole lease TTL for a dead operation). It goes the same way as Ctrl-C; only
the exit code differs, 128 + the signal's number as a shell reports a process a signal ended (130, 143).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING

from replctl.errors import Interrupted

if TYPE_CHECKING:
    from replctl.services.interruption import CommandProgress

# The signals that stop a command cleanly.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

# The signal that stopped the command, for its exit code; the handlers are the process's, so is this.
_received: list[int] = []

# How long an interrupted command may take to end once it has said so (`end_within`).
SHUTDOWN_GRACE_SECONDS = 5.0

# Whether the command runs as its own process (`replctl`, `python -m replctl`; set by `cli.main`), which
# `end_within` may end; a host that calls the Typer app in its own process (tests, embedding) is left alone.
OWNS_PROCESS = False


def _on_stop_signal(signum: int, _frame: FrameType | None) -> None:
    _received.append(signum)
    # What unwinds from here (py4j closing the connection it was reading) logs through the root logger, which
    # Python would configure to print on stderr; the one line the boundary prints is all the operator sees.
    root = logging.getLogger()
    root.addHandler(logging.NullHandler())
    root.setLevel(logging.CRITICAL + 1)
    raise KeyboardInterrupt


@contextmanager
def ctrl_c_stops_cleanly() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM raise KeyboardInterrupt through `_on_stop_signal` (main thread
    only); `interrupted_exit_code` then says which one it was."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _received.clear()
    previous = {signum: signal.signal(signum, _on_stop_signal) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def interrupted_exit_code() -> int:
    """The exit code of a command a signal stopped: 128 + the signal's number (130 for Ctrl-C, 143 for SIGTERM),
    as a shell reports a process that signal ended; 130 for a KeyboardInterrupt no handler here raised."""
    return 128 + (_received[0] if _received else signal.SIGINT)


def interrupted_outside_an_operation(done: CommandProgress | None, *, reporting: bool = False) -> Interrupted:
    """Ctrl-C outside an operation's body: before the first began, between two (`backup create A B`), after
    the last ended, or in a command that changes nothing. `done` says which operations ended and how, and
    which ones the command had yet to begin.

    `reporting`: the command's work has returned and only its report was left (every operation of it ended),
    so a re-run would resume nothing but an operation left incomplete: it would do the work again."""
    from replctl.services.interruption import CommandProgress

    done = done or CommandProgress()
    if reporting and done.ended:
        return Interrupted(done.text(report="replctl ops list"))
    return Interrupted(done.text())


def end_within(code: int, seconds: float = SHUTDOWN_GRACE_SECONDS) -> None:
    """End the process with `code` if it has not ended by itself `seconds` from now (only when the command
    owns the process, `OWNS_PROCESS`).

    An interrupted call can leave something behind that the normal way out waits for: a Spark Connect request
    still in flight, a client thread pool joined at exit. The command has committed or given up everything it
    had by then and has said so; a runbook must not hang on it. A daemon timer runs while the interpreter joins
    its threads and runs its exit handlers, so it ends the process even then; the streams are flushed first.
    """

    if not OWNS_PROCESS:
        return

    def force() -> None:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)

    timer = threading.Timer(seconds, force)
    timer.daemon = True
    timer.start()
