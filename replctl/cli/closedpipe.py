"""A closed output ends replctl as it ends `cat`: quietly, with exit 141 (128 + SIGPIPE).

Runbooks pipe replctl into `head`, `grep -q` or `jq` under `set -o pipefail`. When that reader exits before
replctl has written everything, the next write fails with EPIPE. A C tool would die of SIGPIPE, which the shell
reports as 141; Python ignores SIGPIPE and raises BrokenPipeError instead, which each layer misread: the error
boundary took it for a bug (exit 1 and a traceback), Click's main loop and Rich's consoles exited 1 (Rich after
pointing stdout at /dev/null even when stderr was the closed stream), and text still buffered for the stream
failed once more in the interpreter's last flush, printing "Exception ignored ... BrokenPipeError" (exit 120).
Exit 1 is documented as a bug; a runbook under pipefail would report one.

So the root group (`cli.RootGroup`) runs every invocation inside `closed_pipe_exits`, which turns a closed pipe,
on stdout or stderr, into exit 141 with nothing printed. It exits rather than re-raising SIGPIPE so that the code
is the same in-process (`CliRunner`, `demo`, `apply`) as in a shell. The work is not undone: services commit
before the CLI renders their outcome, so what a closed pipe loses is the report, and the journal (`replctl ops
list`) still has it.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

from rich.console import Console

# What a shell reports for a process that SIGPIPE ended.
CLOSED_PIPE_EXIT = 128 + signal.SIGPIPE


def is_closed_pipe(exc: BaseException) -> bool:
    """Whether `exc` says that the reader of a pipe replctl writes to went away (EPIPE)."""
    return isinstance(exc, OSError) and exc.errno == errno.EPIPE


@contextmanager
def closed_pipe_exits() -> Iterator[None]:
    """Within the block, a closed pipe ends the process quietly with `CLOSED_PIPE_EXIT`."""
    try:
        yield
    except OSError as exc:
        if not is_closed_pipe(exc):
            raise
        _exit_quietly()


def _exit_quietly() -> NoReturn:
    # A stream whose write failed keeps the unwritten text in its buffer, and the interpreter flushes
    # sys.stdout and sys.stderr once more on its way out: that flush must find a descriptor that takes it.
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except OSError as exc:
            if is_closed_pipe(exc):
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, stream.fileno())
                os.close(devnull)
    raise SystemExit(CLOSED_PIPE_EXIT)


class PipeConsole(Console):
    """A Rich console whose closed pipe reaches `closed_pipe_exits` instead of ending the process itself."""

    def on_broken_pipe(self) -> None:
        """Raise the closed pipe again; Rich's own handling exits 1 and silences only stdout."""
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))
