"""What a Ctrl-C says of the running command's operations (issue 18, REP3): those that ended and how, how far
the one it stopped got, those a command of several operations had not begun yet, and the command that does
what is left.

The boundary keeps one `CommandProgress` per command (`command_progress`) and `services.operations` records in
it each operation that begins and ends. A service that runs several operations one after the other
(`backup create A B`, `location retire Z --prune-clock`) declares them first (`in_turn`), with the command
that runs any of them again: a Ctrl-C after the first one's last commit then names the others as not started
and says how to finish, instead of reading as the whole command done.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any

# How an operation of the command ended, as the line says it.
COMPLETED = "completed"
INCOMPLETE = "left incomplete"  # its work is committed; part of it waits (exit 5)
REFUSED = "refused"


@dataclass(frozen=True)
class _Ended:
    label: str
    how: str
    again: str | None = None  # for one left incomplete: the command that finishes it, when it knows one


@dataclass
class CommandProgress:
    """How far the running command got with its operations, for what a Ctrl-C says."""

    ended: list[_Ended] = field(default_factory=list)
    # Declared by `in_turn`: the one running now (None between two), then those not begun, in order.
    running: str | None = None
    to_come: list[str] = field(default_factory=list)
    again: Callable[[list[str]], str] | None = None

    def text(self, *, stopped: tuple[str, int] | None = None, report: str | None = None) -> str:
        """The line a Ctrl-C prints.

        `stopped`: the operation it stopped before its last commit (its label, the steps it committed).
        `report`: where to read what the report it cut short would have said (`replctl ops show ID`), when
        the command's operations have all ended or the one it stopped had done its last commit.
        """
        said = [
            f"{', '.join(e.label for e in run)} {how}" for how, run in groupby(self.ended, lambda e: e.how)
        ]
        to_come = list(self.to_come)
        if stopped is None and self.running is not None:
            # Begun but neither stopped inside nor ended: the Ctrl-C came while it journalled its start and
            # took its leases (`operations._begin`), before any of its work; it is one not started.
            to_come.insert(0, self.running)
        left = list(to_come)
        if stopped is not None:
            label, steps = stopped
            lost = f"nothing committed after step {steps}"
            said.append(f"{label}: {lost}" if said or left else lost)
            if self.running == label:
                left.insert(0, label)
        elif report is not None and not to_come:
            said.append(f"the report was cut short: {report}")
        elif not to_come:
            said.append("nothing committed after them" if said else "nothing committed")
        if to_come:
            said.append(f"{', '.join(to_come)} not started")
        hints = [e.again for e in self.ended if e.how == INCOMPLETE and e.again is not None]
        if left and self.again is not None:
            hints.append(self.again(left))
        if hints:
            said.append(f"re-run to resume: {' && '.join(hints)}")
        elif stopped is not None or report is None:
            said.append("re-run to resume")
        return f"interrupted; {'; '.join(said)}"


_PROGRESS: ContextVar[CommandProgress | None] = ContextVar("replctl_command_progress", default=None)


@contextmanager
def command_progress() -> Iterator[CommandProgress]:
    """Within the block, record how the command's operations begin and end; yields the record."""
    progress = CommandProgress()
    token = _PROGRESS.set(progress)
    try:
        yield progress
    finally:
        _PROGRESS.reset(token)


def current() -> CommandProgress:
    """The running command's record (an empty one outside `command_progress`: a Python runbook's call)."""
    return _PROGRESS.get() or CommandProgress()


@contextmanager
def in_turn(labels: list[str], again: Callable[[list[str]], str]) -> Iterator[None]:
    """Within the block the command runs the operations `labels` (as `what` names them) one after the other.

    `again(left)`: the command that runs the operations `left` of them (the one a Ctrl-C stopped before its
    last commit, then those not begun). Left as it is when the block raises, so that a Ctrl-C between two
    operations, which reaches the boundary from outside any operation, still finds what had not begun."""
    progress = _PROGRESS.get()
    if progress is None:
        yield
        return
    progress.to_come, progress.again = list(labels), again
    yield
    progress.running, progress.to_come, progress.again = None, [], None


def begun(label: str) -> None:
    """Operation `label` begins: it is no longer one not started."""
    progress = current()
    if label in progress.to_come:
        progress.to_come.remove(label)
        progress.running = label
    else:
        progress.running = None


def ended(label: str, how: str, again: str | None = None) -> None:
    """Operation `label` ended (`COMPLETED`, `INCOMPLETE` with the command that finishes it, `REFUSED`)."""
    progress = current()
    progress.ended.append(_Ended(label, how, again))
    if progress.running == label:
        progress.running = None


def what(command: str, args: dict[str, Any]) -> str:
    """An operation as an interrupt message names it: the command and the location it is about, before the
    command's own option (`location retire Z --prune-clock`)."""
    about = args.get("location", args.get("name"))
    if not isinstance(about, str):
        return command
    words, dashes, option = command.partition(" --")
    return f"{words} {about}{dashes}{option}"
