"""Ctrl-C (issue 18): one line, exit 130, the journal says `interrupted`; no py4j or Java traceback.

PySpark installs its own SIGINT handler when it starts a SparkContext: it cancels every job through py4j from
inside the signal handler, which re-enters the py4j call the main thread is blocked in, and py4j then logs
each broken call with a full traceback on the root logger (~100 lines). replctl owns Ctrl-C instead: the
Spark adapter puts back the handler it found (`adapters.spark.session`), and the handler here silences the
root logger, then raises `KeyboardInterrupt` where the main thread is. The operation turns it into
`Interrupted` (services.operations), the boundary prints it, and the jobs the interrupted call left running
are cancelled on the way out (`AppContext.cancel_spark_jobs`).
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from replctl.errors import Interrupted


def _on_sigint(_signum: int, _frame: FrameType | None) -> None:
    # What unwinds from here (py4j closing the connection it was reading) logs through the root logger, which
    # Python would configure to print on stderr; the one line the boundary prints is all the operator sees.
    root = logging.getLogger()
    root.addHandler(logging.NullHandler())
    root.setLevel(logging.CRITICAL + 1)
    raise KeyboardInterrupt


@contextmanager
def ctrl_c_stops_cleanly() -> Iterator[None]:
    """Within the block, SIGINT raises KeyboardInterrupt through `_on_sigint` (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, _on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def interrupted_outside_an_operation() -> Interrupted:
    """Ctrl-C before an operation began or in a command that changes nothing: nothing was committed."""
    return Interrupted("interrupted; nothing committed; re-run to resume")
