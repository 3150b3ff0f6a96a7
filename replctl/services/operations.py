"""Running one mutating operation: journal row, leases with fencing, steps, outcome (architecture.md).

A service wraps its work in `operation(...)`; every catalog transaction it opens through the context checks the
fencing tokens of its leases before committing, so an operation that lost its lease cannot commit. A dry run
takes no lease and writes no journal: it runs the same planning code and stops before acting. It is refused
as the run would be (exit 4) while another operation holds one of its leases, so that it does not promise
what the run will refuse.

Reviewed plans (`--plan-out`, `replctl apply`) need two guarantees from here, whatever service runs: inside
`planning()` no operation may act (a command that forgot to turn `--plan-out` into a dry run is stopped as a
bug before it changes anything), and inside `applying(plan)` the first operation that acts checks, once it
holds its leases and in a transaction, that the catalog version is still the plan's. Checking there, not only
in `apply` before it starts, closes the window between that check and the leases: whatever committed in
between has moved the version. Both are context variables, so services keep their signatures and a Python
runbook can use them as the CLI does.
"""

from __future__ import annotations

import getpass
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

from replctl.errors import Incomplete, Interrupted, LockHeld, Refused, ReplctlError
from replctl.failpoints import FailpointCrash, hit
from replctl.services import interruption
from replctl.services.lease_keeper import LeaseKeeper
from replctl.services.plans import AppliedPlan, stale_plan
from replctl.services.ports import Catalog, CatalogTransaction

T = TypeVar("T")

LEASE_TTL_SECONDS = 300


def location_resource(name: str) -> str:
    """The lease name of a location's log and metadata."""
    return f"location:{name}"


def backup_resource(name: str) -> str:
    """The lease name of a location's backups in the backup store (BK1): held while a backup of it is made,
    restored or pruned, so that a prune never removes a file a backup being made or read still needs."""
    return f"backups:{name}"


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
    # For an operation left incomplete: the commands that finish it, which a Ctrl-C in its report says.
    again: list[str] = field(default_factory=list)
    closing: tuple[str, dict[str, Any]] | None = None
    # Every change the operation makes is committed (`all_committed`): what is left only reads and reports.
    committed_all: bool = False
    label: str = ""  # how a Ctrl-C names the operation (`interruption.what`)

    def all_committed(self) -> None:
        """The body's last commit is done; what follows only reads and reports. A Ctrl-C from here on stops
        the report, not the operation: it is journalled with its own outcome, not `interrupted` (issue 18)."""
        self.committed_all = True

    def mark_incomplete(self, again: str | None = None) -> None:
        """Part of the work waits (exit 5); the journal records the outcome `incomplete`. `again`: the command
        that finishes it (`replctl recover location A`), which a Ctrl-C that cuts the report short says; none
        when the rest is done by itself (a pending deletion, at the next replicate). Called once per part that
        waits, the commands add up, each once, in order."""
        self.incomplete = True
        if again is not None and again not in self.again:
            self.again.append(again)

    @contextmanager
    def transaction(self, *, readonly: bool = False) -> Iterator[CatalogTransaction]:
        """One catalog transaction; the fencing tokens are checked inside it, before commit.

        `readonly`: a snapshot that takes no write lock, for reads around a data-plane job (the catalog's write
        lock would hold every other operator's writes off for the job's length); it commits nothing, so it
        needs no fencing check."""
        with self.catalog.transaction(readonly=readonly) as tx:
            yield tx
            if not readonly:
                for resource, token in self.tokens.items():
                    tx.check_lease(resource, token)

    def lease(self, resource: str) -> None:
        """Take one more lease in the middle of the operation, held until it ends like the first ones.

        For what the operation comes to touch only as it runs (issue 19: a location added while a full
        `replicate` runs); `LockHeld` (exit 4) when another operation holds it. A dry run takes none, and is
        refused as its run would be when another operation holds it (`refuse_if_held`).
        """
        if self.dry_run:
            refuse_if_held(self.catalog, [resource])
            return
        if self.id is None or resource in self.tokens:
            return
        with self.catalog.transaction() as tx:
            self.tokens[resource] = tx.acquire_lease(
                resource, self.catalog.holder_name(current_actor()), self.id, LEASE_TTL_SECONDS
            )

    def release(self, resource: str) -> None:
        """Give back one lease before the operation ends (BK1: a backup holds its location's lease only while
        the catalog is read). Later transactions no longer check it; a dry run holds none.

        `LockHeld` (exit 4, the fencing check's) when the lease was no longer this operation's: what was read
        or checked under it may have changed under another holder, so the caller must not go on with it. A
        lease still current when given back was held without a break since it was granted (tokens only
        grow), so this one check stands for a fencing check of every read in between."""
        token = self.tokens.pop(resource, None)
        if token is None:
            return
        with self.catalog.transaction() as tx:
            if not tx.release_lease(resource, token):
                # No longer current: the fencing check refuses, saying who took the lease over.
                tx.check_lease(resource, token)

    def step(self, tx: CatalogTransaction, name: str, detail: dict[str, Any] | None = None) -> None:
        """Journal a completed step in the same transaction as its effect."""
        if self.id is not None:
            tx.record_step(self.id, name, detail or {})
        self.steps += 1

    def closing_step(self, name: str, detail: dict[str, Any] | None = None) -> None:
        """Journal the operation's last step in the transaction that ends it, with its outcome and the
        release of its leases, after the same fencing check as any of its commits (`operation`).

        For a last step whose effect lies outside the catalog (a backup's manifest, BK1), so that no state
        change has to commit with it: one catalog commit, and its disk flush, fewer. Call it last in the body;
        a dry run journals nothing."""
        self.closing = (name, detail or {})

    def set_plan(self, plan: dict[str, Any]) -> None:
        """Record the plan the operation is about to execute."""
        if self.id is not None:
            with self.catalog.transaction() as tx:
                tx.set_plan(self.id, plan)


@dataclass
class _PlanMode:
    """How operations run in this context: only as dry runs (planning), or executing a reviewed plan."""

    planning: bool = False
    applied: AppliedPlan | None = None
    verified: bool = False  # the plan's catalog version was checked by the first operation that acted


_PLAN_MODE: ContextVar[_PlanMode | None] = ContextVar("replctl_plan_mode", default=None)


@contextmanager
def planning() -> Iterator[None]:
    """Inside the block operations only plan (`--plan-out`): one that would act is refused as a bug (exit 1)."""
    token = _PLAN_MODE.set(_PlanMode(planning=True))
    try:
        yield
    finally:
        _PLAN_MODE.reset(token)


@contextmanager
def applying(plan: AppliedPlan) -> Iterator[None]:
    """Inside the block operations execute the reviewed `plan` (`replctl apply`).

    The first operation that acts refuses (exit 3, `stale-plan`) unless, holding its leases, it finds the
    catalog at the plan's version; every operation in the block journals the plan file in its `args`.
    """
    token = _PLAN_MODE.set(_PlanMode(applied=plan))
    try:
        yield
    finally:
        _PLAN_MODE.reset(token)


def applied_plan() -> AppliedPlan | None:
    """The reviewed plan this context executes (`replctl apply`), None outside one."""
    mode = _PLAN_MODE.get()
    return mode.applied if mode is not None else None


def _check_plan_version(ctx: OperationContext, mode: _PlanMode) -> None:
    """Refuse a stale plan once the leases are held; later operations of the same command run unchecked,
    since the version moved by the first one's own commits."""
    if mode.applied is None or mode.verified:
        return
    with ctx.transaction() as tx:
        now = tx.catalog_version()
    if now != mode.applied.catalog_version:
        raise stale_plan(mode.applied.catalog_version, now)
    mode.verified = True


def _acting_args(mode: _PlanMode | None, command: str, args: dict[str, Any]) -> dict[str, Any]:
    """The journal args of an operation about to act in `mode`; refuses to act while planning."""
    if mode is None:
        return args
    if mode.planning:
        # A bug in a command (it did not turn --plan-out into a dry run); nothing has been touched yet.
        raise ReplctlError(
            f"{command} would act while only planning (--plan-out); nothing was changed",
            code="internal",
            hint="this is a bug in replctl; please report it",
        )
    return {**args, **mode.applied.journal_args()} if mode.applied is not None else args


# Callers that want to hear of each journalled operation as it begins (`replctl -v` prints its id).
_OBSERVERS: ContextVar[tuple[Callable[[str, str], None], ...]] = ContextVar(
    "replctl_operation_observers", default=()
)


@contextmanager
def observing_operations(callback: Callable[[str, str], None]) -> Iterator[None]:
    """Call `callback(operation_id, command)` as each journalled operation begins inside the block."""
    token = _OBSERVERS.set((*_OBSERVERS.get(), callback))
    try:
        yield
    finally:
        _OBSERVERS.reset(token)


def _announce(operation_id: str, command: str) -> None:
    for observer in _OBSERVERS.get():
        observer(operation_id, command)


def current_actor() -> str:
    """Who runs this operation: the login name, as the journal and the topology history record it (H1)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def refuse_if_held(catalog: Catalog, resources: list[str]) -> None:
    """Raise the `LockHeld` (exit 4) the run would meet when another live operation holds a lease on one of
    `resources`: the dry run's (and `--plan-out`'s) check, which reads only, takes no lease and journals
    nothing. The same rules as taking the lease (`acquire_lease`): unreleased, unexpired, holder alive."""
    with catalog.transaction(readonly=True) as tx:
        for resource in sorted(set(resources)):  # in the order the run takes them, so it names the same one
            held = tx.lease_held(resource)
            if held is not None:
                raise held


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
        return _dry_run(catalog, resources, body)
    mode = _PLAN_MODE.get()
    args = _acting_args(mode, command, args)
    op_id, ctx = _begin(catalog, command, args, reason, resources)
    outcome, error = "failed", None
    keeper: LeaseKeeper | None = None
    crashed = finished = False
    try:
        _announce(op_id, command)
        keeper = LeaseKeeper(catalog, ctx.tokens, LEASE_TTL_SECONDS)
        keeper.start()
        if mode is not None:
            _check_plan_version(ctx, mode)
        hit("operation.after-lease")
        result = body(ctx)
        ctx.all_committed()  # a closing step's effect is made (a backup's manifest); only its journal is left
        hit("operation.before-finish")
        outcome = "incomplete" if ctx.incomplete else "succeeded"
        if ctx.closing is not None:
            _finish_checked(ctx, op_id, outcome)
            finished = True
        _ended(ctx)
        return result
    except FailpointCrash:
        # A simulated power cut (`REPLCTL_FAILPOINT_MODE=raise`, REP3): a killed process journals no outcome
        # and releases no lease, so neither does this. The in-process crash tests then meet what a real kill
        # leaves behind (the operation running, its leases held) and recover from it the same way.
        crashed = True
        raise
    except (Refused, LockHeld) as exc:
        outcome, error = "refused", exc.to_json()
        interruption.ended(ctx.label, interruption.REFUSED)
        raise
    except Incomplete as exc:
        outcome, error = "incomplete", exc.to_json()
        raise
    except ReplctlError as exc:
        error = exc.to_json()
        raise
    except KeyboardInterrupt:
        # Ctrl-C (issue 18): each step commits in its own transaction, so what the journal lists is done and
        # nothing after it; a re-run resumes (REP3). Said in one line, journalled as `interrupted` unless the
        # operation's last commit was already done (`_stopped`).
        stopped, outcome, finished = _stopped(ctx, op_id)
        error = None if outcome != "interrupted" else stopped.to_json()
        raise stopped from None
    except BaseException as exc:
        error = {"code": "internal", "message": f"{type(exc).__name__}: {exc}"}
        raise
    finally:
        if keeper is not None:
            keeper.stop()  # a dead process renews nothing either
        if not crashed and not finished:
            _finish(ctx, op_id, outcome, error)


def _dry_run(catalog: Catalog, resources: list[str], body: Callable[[OperationContext], T]) -> T:
    """Run `body` as a dry run: no lease, no journal. It exits as its run would when refused (cli.md): one
    that finds a lease it needs held by another operation is refused as the run is (exit 4), unjournalled."""
    refuse_if_held(catalog, resources)
    return body(OperationContext(catalog, None, True))


def _stopped(ctx: OperationContext, op_id: str) -> tuple[Interrupted, str, bool]:
    """A Ctrl-C in operation `op_id`: what to say, the outcome to journal, and whether it is journalled here.

    After the body's last commit (`OperationContext.all_committed`) the operation is done: it ends with its
    own outcome (a closing step committed with it) and the line says it completed (or was left incomplete),
    not "nothing committed". Only a command with nothing else to run is then told its report was cut short;
    one of several operations names those not begun and the command that runs them (`interruption.in_turn`).
    """
    progress = interruption.current()
    if ctx.committed_all:
        outcome = "incomplete" if ctx.incomplete else "succeeded"
        finished = ctx.closing is not None
        if finished:
            _finish_checked(ctx, op_id, outcome)
        _ended(ctx)
        return Interrupted(progress.text(report=f"replctl ops show {op_id}")), outcome, finished
    return Interrupted(progress.text(stopped=(ctx.label, ctx.steps))), "interrupted", False


def _ended(ctx: OperationContext) -> None:
    """The operation ended with its work committed: completed, or left incomplete (exit 5)."""
    if ctx.incomplete:
        interruption.ended(ctx.label, interruption.INCOMPLETE, " && ".join(ctx.again) or None)
    else:
        interruption.ended(ctx.label, interruption.COMPLETED)


def record_refusal(
    catalog: Catalog, *, command: str, args: dict[str, Any], reason: str | None, refusal: Refused | LockHeld
) -> str:
    """Journal a refusal that came before any operation began, as an operation with outcome `refused`.

    For `replctl apply`'s stale-plan refusals (issue 18): the operator looks for what was refused in
    `ops list` as for what ran. Only the journal is written, which moves no catalog version, so the refusal
    still changes nothing a plan depends on. Returns the operation id.
    """
    with catalog.transaction() as tx:
        op_id = tx.begin_operation(command, args, current_actor(), socket.gethostname(), reason)
        tx.finish_operation(op_id, "refused", refusal.to_json())
    _announce(op_id, command)
    return op_id


def record_applied_refusal(
    catalog: Catalog, *, command: str, args: dict[str, Any], reason: str | None, refusal: Refused
) -> str | None:
    """Under `replctl apply`, journal a refusal the recorded command met before its operation began (a `.jsonl`
    input that is no longer the plan's, read before the append's operation) as that operation refused, with
    the plan in its args as `operation` journals them: as the same refusal met inside the operation is (a
    Parquet input, read by the append's job; issue 18). Outside `apply` nothing is journalled; a failure to
    journal is left unsaid, the refusal matters more. Returns the operation id, None when none was written."""
    mode = _PLAN_MODE.get()
    if mode is None or mode.applied is None:
        return None
    with suppress(ReplctlError):
        return record_refusal(
            catalog, command=command, args=_acting_args(mode, command, args), reason=reason, refusal=refusal
        )
    return None


def _begin(
    catalog: Catalog, command: str, args: dict[str, Any], reason: str | None, resources: list[str]
) -> tuple[str, OperationContext]:
    """Journal the operation as running and take the lease of every resource, in one transaction: one commit
    (and one disk flush) for what took one per lease and one for the journal row.

    When a lease is held by another operation nothing of that commits, and the refusal is journalled on its
    own (`record_refusal`), as `ops list` showed it when the row came first: an operation refused (exit 4).
    """
    actor = current_actor()
    label = interruption.what(command, args)
    interruption.begun(label)  # as a Ctrl-C says it (`label`, `interruption.what`): no longer one not started
    try:
        with catalog.transaction() as tx:
            op_id = tx.begin_operation(command, args, actor, socket.gethostname(), reason)
            # Sorted so that two operators asking for the same pair agree on the order. The holder names this
            # process, so that a re-run after a crash can tell it died.
            holder = catalog.holder_name(actor)
            tokens = {
                resource: tx.acquire_lease(resource, holder, op_id, LEASE_TTL_SECONDS)
                for resource in sorted(set(resources))
            }
    except LockHeld as exc:
        interruption.ended(label, interruption.REFUSED)
        with suppress(ReplctlError):  # the refusal matters more than a failure to journal it
            record_refusal(catalog, command=command, args=args, reason=reason, refusal=exc)
        raise
    return op_id, OperationContext(catalog, op_id, False, tokens, label=label)


def _finish_checked(ctx: OperationContext, op_id: str, outcome: str) -> None:
    """End an operation that has a closing step (`OperationContext.closing_step`): its fencing tokens checked,
    then the step, the release of its leases and its outcome, in one transaction. `LockHeld` (exit 4) when a
    lease was lost; then `_finish` journals the refusal and the step, whose effect is done either way."""
    with ctx.catalog.transaction() as tx:
        for resource, token in ctx.tokens.items():
            tx.check_lease(resource, token)
        _close(tx, ctx, op_id, outcome, None)
    ctx.steps += 1


def _finish(ctx: OperationContext, op_id: str, outcome: str, error: dict[str, Any] | None) -> None:
    """Release the leases of operation `op_id` and journal how it ended, in one transaction."""
    try:
        with ctx.catalog.transaction() as tx:
            _close(tx, ctx, op_id, outcome, error)
    except ReplctlError:
        # The original error matters more; an expired lease is collected by the next holder.
        pass


def _close(
    tx: CatalogTransaction, ctx: OperationContext, op_id: str, outcome: str, error: dict[str, Any] | None
) -> None:
    """In `tx`: the closing step (its effect happened whatever the outcome), the leases given back, the end."""
    if ctx.closing is not None:
        name, detail = ctx.closing
        tx.record_step(op_id, name, detail)
    for resource, token in ctx.tokens.items():
        tx.release_lease(resource, token)
    tx.finish_operation(op_id, outcome, error)
