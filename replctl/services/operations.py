"""Running one mutating operation: journal row, leases with fencing, steps, outcome (architecture.md).

A service wraps its work in `operation(...)`; every catalog transaction it opens through the context checks the
fencing tokens of its leases before committing, so an operation that lost its lease cannot commit. A dry run
takes no lease and writes no journal: it runs the same planning code and stops before acting.
"""

from __future__ import annotations

import getpass
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from replctl.adapters.catalog.leases import holder_name
from replctl.adapters.catalog.repository import Catalog, CatalogTransaction
from replctl.errors import Incomplete, LockHeld, Refused, ReplctlError
from replctl.failpoints import hit

T = TypeVar("T")

LEASE_TTL_SECONDS = 300


def location_resource(name: str) -> str:
    """The lease name of a location's log and metadata."""
    return f"location:{name}"


TOPOLOGY = "topology"


@dataclass
class OperationContext:
    """What a service body gets: the operation id, a dry-run flag and fenced transactions."""

    catalog: Catalog
    id: str | None
    dry_run: bool
    tokens: dict[str, int] = field(default_factory=dict)
    steps: int = 0
    incomplete: bool = False

    def mark_incomplete(self) -> None:
        """Part of the work waits (exit 5); the journal records the outcome `incomplete`."""
        self.incomplete = True

    @contextmanager
    def transaction(self) -> Iterator[CatalogTransaction]:
        """One catalog transaction; the fencing tokens are checked inside it, before commit."""
        with self.catalog.transaction() as tx:
            yield tx
            for resource, token in self.tokens.items():
                tx.check_lease(resource, token)

    def step(self, tx: CatalogTransaction, name: str, detail: dict[str, Any] | None = None) -> None:
        """Journal a completed step in the same transaction as its effect."""
        if self.id is not None:
            tx.record_step(self.id, name, detail or {})
        self.steps += 1

    def set_plan(self, plan: dict[str, Any]) -> None:
        """Record the plan the operation is about to execute."""
        if self.id is not None:
            with self.catalog.transaction() as tx:
                tx.set_plan(self.id, plan)


def _actor() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def operation(
    catalog: Catalog,
    *,
    command: str,
    args: dict[str, Any],
    reason: str | None,
    resources: list[str],
    dry_run: bool,
    body: Callable[[OperationContext], T],
) -> T:
    """Run `body` as one journalled operation holding leases on `resources`."""
    if dry_run:
        return body(OperationContext(catalog, None, True))
    with catalog.transaction() as tx:
        op_id = tx.begin_operation(command, args, _actor(), socket.gethostname(), reason)
    ctx = OperationContext(catalog, op_id, False)
    outcome, error = "failed", None
    try:
        # Sorted so that two operators asking for the same pair agree on the order.
        for resource in sorted(set(resources)):
            with catalog.transaction() as tx:
                # The holder names this process, so that a re-run after a crash can tell it died.
                ctx.tokens[resource] = tx.acquire_lease(
                    resource, holder_name(_actor()), op_id, LEASE_TTL_SECONDS
                )
        hit("operation.after-lease")
        result = body(ctx)
        hit("operation.before-finish")
        outcome = "incomplete" if ctx.incomplete else "succeeded"
        return result
    except Refused as exc:
        outcome, error = "refused", exc.to_json()
        raise
    except Incomplete as exc:
        outcome, error = "incomplete", exc.to_json()
        raise
    except LockHeld as exc:
        outcome, error = "refused", exc.to_json()
        raise
    except ReplctlError as exc:
        error = exc.to_json()
        raise
    except BaseException as exc:
        error = {"code": "internal", "message": f"{type(exc).__name__}: {exc}"}
        raise
    finally:
        try:
            with catalog.transaction() as tx:
                for resource, token in ctx.tokens.items():
                    tx.release_lease(resource, token)
                tx.finish_operation(op_id, outcome, error)
        except ReplctlError:
            # The original error matters more; an expired lease is collected by the next holder.
            pass
