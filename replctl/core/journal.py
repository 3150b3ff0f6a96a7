"""The operation journal and deletion records as the rest of replctl sees them (architecture.md, Data).

Plain frozen values read from the catalog: who ran what, where, why, the plan, each completed step and how it
ended; and the physical deletions that wait for targets (DEL4). No I/O here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any


class Outcome(StrEnum):
    """How an operation ended; `running` until it does (or forever, if its process died)."""

    RUNNING = "running"
    SUCCEEDED = "succeeded"
    REFUSED = "refused"
    INCOMPLETE = "incomplete"
    FAILED = "failed"
    INTERRUPTED = "interrupted"  # Ctrl-C: the journalled steps are committed, nothing after them


@dataclass(frozen=True)
class OperationStep:
    """One completed step, journalled in the same transaction as its effect."""

    operation_id: str
    index: int  # 1, 2, ... in the order the steps committed
    name: str
    detail: Mapping[str, Any]
    at: datetime


@dataclass(frozen=True)
class Operation:
    """One run of a mutating command."""

    id: str
    command: str
    args: Mapping[str, Any]
    actor: str | None
    host: str | None
    reason: str | None
    plan: Mapping[str, Any]
    outcome: Outcome
    error: Mapping[str, Any] | None
    started_at: datetime
    ended_at: datetime | None
    steps: tuple[OperationStep, ...] = ()

    @property
    def finished(self) -> bool:
        """True once an outcome other than `running` was recorded."""
        return self.outcome is not Outcome.RUNNING


@dataclass(frozen=True)
class PendingDeletion:
    """A physical deletion of a location's prefix that waits until `blocked_by` have received it (DEL4).

    `require_recoverable`: the request was asked under BK4's guard (`--require-recoverable` or the policy), so
    its retries refuse to cut what would leave a location unrecoverable whatever the retrying run's policy.
    """

    location: str
    requested_upto: int
    blocked_by: tuple[str, ...]
    requested_at: datetime
    require_recoverable: bool = False
