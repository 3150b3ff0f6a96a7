"""Topology use cases: locations, connections, filters, groups, fail-over, retirement, validation.

Each one loads the recorded history, asks the core for a decision, and either refuses (nothing changed) or
records the changes and updates the run-time tables in one transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from replctl.core import topology_plans as plans
from replctl.core.model import (
    Change,
    ChangeKind,
    Connection,
    ConnectionState,
    HistoryMode,
    Location,
    LocationState,
    Role,
    Violation,
)
from replctl.core.outcomes import AllOrNothing, Completion
from replctl.core.retirement import stranded_violation
from replctl.core.startrule import (
    history_baseline,
    history_stored,
    merge_baseline,
    new_connection,
    start_rule,
)
from replctl.core.topology import TopologyState
from replctl.core.topology_rules import admission_projection
from replctl.errors import EnvironmentFailure, InvalidInput, LockHeld, Refused, UnknownName
from replctl.failpoints import hit
from replctl.services.damage import refuse_damaged
from replctl.services.lookup import get_location
from replctl.services.operations import (
    TOPOLOGY,
    OperationContext,
    current_actor,
    location_resource,
    operation,
)
from replctl.services.ports import Catalog, CatalogTransaction, DataPlane
from replctl.services.topology_state import is_rule_id, load_state, violation_json
from replctl.services.views import change_json, connection_json, location_json


@dataclass(frozen=True)
class TopologyOutcome:
    """What a topology command did (or, under --dry-run, would do)."""

    dry_run: bool
    changes: tuple[Change, ...]
    warnings: tuple[Violation, ...] = ()
    connections: tuple[dict[str, Any], ...] = ()  # per new connection: starts now or waits, and why
    operation_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def completion(self) -> Completion:
        """A topology change is recorded whole or refused."""
        return Completion.COMPLETE

    def to_json(self) -> dict[str, Any]:
        """The `--json` document of a topology change command (cli.md)."""
        return {
            "ok": True,
            "dry_run": self.dry_run,
            "operation": self.operation_id,
            "changes": [change_json(c) for c in self.changes],
            "connections": list(self.connections),
            "warnings": [violation_json(w) for w in self.warnings],
        }


def raise_violations(violations: tuple[Violation, ...] | list[Violation]) -> None:
    """Turn the first blocking violation into the error the CLI maps to an exit code."""
    errors = [v for v in violations if not v.warning]
    if not errors:
        return
    first = errors[0]
    # The first refusal's own details (RET1's stranded events) come along for scripts.
    details: dict[str, Any] = {**first.details, "violations": [violation_json(v) for v in errors]}
    if first.cycle:
        details["cycle"] = first.render_cycle()
    if first.code.startswith("unknown-"):
        raise UnknownName(first.message, code=first.code, hint=first.hint, details=details)
    if not is_rule_id(first.code):  # connection-exists, bad-group, name-taken: the request itself is wrong
        raise InvalidInput(first.message, code=first.code, hint=first.hint, details=details)
    raise Refused(
        f"refused [{first.code}]: {first.message}", code=first.code, hint=first.hint, details=details
    )


def _apply(
    ctx: OperationContext,
    tx: CatalogTransaction,
    change: Change,
    reason: str | None,
) -> dict[str, Any] | None:
    """Record one change and bring the run-time tables in line; returns a start report for new connections."""
    # H1: the history says who made each change (`topology history`'s who column), as the journal does.
    tx.record_change(change, actor=current_actor(), reason=reason, operation_id=ctx.id)
    kind = change.kind
    if kind is ChangeKind.LOCATION_ADDED:
        assert change.location is not None
        tx.put_location(Location(name=change.location, role=change.role or Role.READ_WRITE))
    elif kind is ChangeKind.LOCATION_RETIRED:
        assert change.location is not None
        loc = get_location(tx, change.location)
        tx.put_location(replace(loc, state=LocationState.RETIRED))
    elif kind is ChangeKind.CONNECTION_ADDED:
        return _connect(tx, change)
    elif kind is ChangeKind.CONNECTION_REMOVED:
        assert change.source is not None and change.target is not None
        conn = tx.connection(change.source, change.target)
        if conn is not None:
            tx.put_connection(replace(conn, state=ConnectionState.REMOVED, reason=None))
    elif kind in (ChangeKind.FILTER_SET, ChangeKind.FILTER_CLEARED):
        assert change.source is not None and change.target is not None
        conn = tx.connection(change.source, change.target)
        if conn is not None:
            filtered = change.filter if kind is ChangeKind.FILTER_SET else None
            conn = replace(conn, filter=filtered, ever_filtered=conn.ever_filtered or bool(filtered))
            if conn.state is ConnectionState.FAILED:
                # The filter that failed is gone; the next pass runs the new one (issue 14).
                conn = replace(conn, state=ConnectionState.ACTIVE, reason=None)
            tx.put_connection(conn)
    return None


def _connect(tx: CatalogTransaction, change: Change) -> dict[str, Any]:
    """A new (or re-made) connection: ADD3 baseline at the target, the ADD1 start rule, ADD4 progress 0."""
    assert change.source is not None and change.target is not None
    source, target = get_location(tx, change.source), get_location(tx, change.target)
    mode = change.history or HistoryMode.COMPLETE
    baseline = history_baseline(mode, source, target)
    held = history_stored(mode, source, baseline)
    if baseline:
        target = merge_baseline(target, baseline, held)
        tx.put_location(target)
    conn = new_connection(
        change.source,
        change.target,
        filter=change.filter,
        history=mode,
        verdict=start_rule(source, target),
        previous=tx.connection(change.source, change.target),
    )
    tx.put_connection(conn)
    return {
        "source": conn.source,
        "target": conn.target,
        "state": conn.state.value,
        "history": mode.value,
        "baseline": baseline.to_dict(),
        "held_back": held.to_dict(),
        "reason": conn.reason,
    }


def refuse_history_into_recovering(tx: CatalogTransaction, changes: tuple[Change, ...]) -> None:
    """Exit 4 (`recovering`, DR0) when a new connection would merge an ADD3 baseline (`--history current` or
    `none`) into a location that is recovering, dry run and run alike.

    While Y recovers its CVV is what survived the loss (DR1), not what Y knew: ADD3's "foreign" entries,
    computed against it, would include origins Y knew up to the loss, and merging them into CVV, DVV and
    baseline would declare Y's own history of them deleted. Event recovery then drops (CF1) the events the
    sources still store, and its report of what was lost, measured against that CVV, says nothing. Nothing may
    be merged into Y's clocks outside the recovery (DR0, DR1); as replication into Y, the change waits for
    the recovery's end. A `complete` connection merges nothing (ADD1's start rule only reads CVV-Y, and a
    smaller CVV only keeps it pending longer), and the recovery decides about its source like any neighbour
    (DR3-DR5), so it stays allowed.
    """
    for change in changes:
        mode = change.history or HistoryMode.COMPLETE
        if change.kind is not ChangeKind.CONNECTION_ADDED or mode is HistoryMode.COMPLETE:
            continue
        assert change.source is not None and change.target is not None
        target = tx.location(change.target)
        if target is None or target.state is not LocationState.RECOVERING:
            continue
        vector = "DVV" if mode is HistoryMode.CURRENT else "CVV"
        raise LockHeld(
            f"{target.name} is recovering; --history {mode.value} would merge the entries of "
            f"{vector}-{change.source} that {target.name}'s CVV lacks, but until the recovery ends that CVV "
            f"holds only what survived the loss, so events {target.name} held before it would be given up "
            f"unreported; nothing is merged into it until recovery ends (DR0, DR1, ADD3)",
            code="recovering",
            hint=f"finish it: replctl recover location {target.name}; then add the connection again",
            details={"location": target.name, "source": change.source, "history": mode.value},
        )


def _run(
    catalog: Catalog,
    *,
    command: str,
    args: dict[str, Any],
    reason: str | None,
    dry_run: bool,
    plan: Callable[[TopologyState, CatalogTransaction], plans.Decision] | None = None,
    read: Callable[[OperationContext], Callable[[TopologyState, CatalogTransaction], plans.Decision]]
    | None = None,
    resources: list[str] | None = None,
) -> TopologyOutcome:
    """Shared path of every topology change: decide under the lease, refuse or apply.

    `plan` decides inside the writing transaction from the catalog alone. A change that needs the logs read
    first (RET1's stored identities) gives `read` instead: it runs under the leases but before the writing
    transaction, so the data-plane job never holds the catalog's write lock (every other operator's write
    would wait for the job's length, and give up with exit 6 after the busy timeout); it returns the plan,
    which raises `StaleRead` when the catalog moved under what was read, and the read runs again.
    """

    def body(ctx: OperationContext) -> TopologyOutcome:
        for _ in range(READ_ATTEMPTS):
            decide = read(ctx) if read is not None else plan
            assert decide is not None
            try:
                return _decide_and_apply(ctx, decide, reason)
            except StaleRead:
                continue
        raise EnvironmentFailure(
            f"the logs {command} reads changed under it {READ_ATTEMPTS} times in a row; nothing was changed",
            code="concurrent-change",
            hint=f"re-run: replctl {command} {' '.join(str(v) for v in args.values())}",
        )

    return operation(
        catalog,
        command=command,
        args=args,
        reason=reason,
        resources=[TOPOLOGY, *(resources or [])],
        dry_run=dry_run,
        body=body,
    )


# The journal's name of a retirement (`retire_location`).
RETIRE_COMMAND = "location retire"


# How often a change that reads the logs first (`_run`'s `read`) reads them again when another operation
# moved them meanwhile, before it gives up (nothing changed; exit 6, `concurrent-change`).
READ_ATTEMPTS = 3


class StaleRead(Exception):
    """What a change read outside the writing transaction no longer matches the catalog: read again."""


def _decide_and_apply(
    ctx: OperationContext,
    plan: Callable[[TopologyState, CatalogTransaction], plans.Decision],
    reason: str | None,
) -> TopologyOutcome:
    """One writing transaction: decide on the history as it is now, refuse or record the changes."""
    with ctx.transaction() as tx:
        decision = plan(load_state(tx), tx)
        raise_violations(decision.violations)
        refuse_history_into_recovering(tx, decision.changes)
        warnings = tuple(v for v in decision.violations if v.warning)
        if ctx.dry_run:
            return TopologyOutcome(
                True,
                decision.changes,
                warnings,
                tuple(_dry_start(tx, c) for c in decision.changes if c.kind is ChangeKind.CONNECTION_ADDED),
            )
        reports = [r for c in decision.changes if (r := _apply(ctx, tx, c, reason)) is not None]
        ctx.step(tx, "record-changes", {"changes": [c.kind.value for c in decision.changes]})
        return TopologyOutcome(False, decision.changes, warnings, tuple(reports), ctx.id)


def _dry_start(tx: CatalogTransaction, change: Change) -> dict[str, Any]:
    """What `_connect` would report, computed without writing."""
    assert change.source is not None and change.target is not None
    source, target = tx.location(change.source), tx.location(change.target)
    if source is None or target is None:
        return {"source": change.source, "target": change.target, "state": "pending", "reason": None}
    mode = change.history or HistoryMode.COMPLETE
    baseline = history_baseline(mode, source, target)
    held = history_stored(mode, source, baseline)
    verdict = start_rule(source, merge_baseline(target, baseline, held))
    return {
        "source": change.source,
        "target": change.target,
        "state": "active" if verdict.may_start else "pending",
        "history": mode.value,
        "baseline": baseline.to_dict(),
        "held_back": held.to_dict(),
        "reason": verdict.reason,
    }


def add_location(
    catalog: Catalog, name: str, role: Role, *, reason: str | None = None, dry_run: bool = False
) -> TopologyOutcome:
    """`location add NAME --role ROLE` (M1: an id is never reused)."""
    return _run(
        catalog,
        command="location add",
        args={"name": name, "role": role.value},
        reason=reason,
        dry_run=dry_run,
        plan=lambda state, _tx: plans.plan_location_add(state, name, role),
    )


def retire_location(
    catalog: Catalog,
    engine: DataPlane,
    name: str,
    *,
    reason: str | None = None,
    dry_run: bool = False,
) -> TopologyOutcome:
    """`location retire NAME` (RET1: refused while it has a current connection, or while it stores own
    events no other remaining location stores; `engine` reads the stored identities)."""
    return _run(
        catalog,
        command=RETIRE_COMMAND,
        args={"name": name},
        reason=reason,
        dry_run=dry_run,
        read=lambda ctx: _read_for_retire(ctx, engine, name),
        resources=[location_resource(name)],
    )


@dataclass(frozen=True)
class _StoredIdentities:
    """What RET1's scan found: the own origin times only `name`'s log stores, and the segments it read, by path
    (a path is fresh for every segment written; a row id is not: SQLite hands a deleted row's id out again)."""

    name: str
    only_here: tuple[int, ...]
    mine: frozenset[str]
    elsewhere: frozenset[str]
    others: tuple[tuple[str, tuple[int, ...]], ...] = ()  # per other origin, the times only `name` stores

    def still_true(self, tx: CatalogTransaction) -> bool:
        """Whether the scan's answer still holds: the retiring log is as read (its lease keeps it so), and every
        segment read as storing an event elsewhere is still a segment of a remaining location (segment files
        never change, so its events are still there). A deletion, compaction or recovery elsewhere that
        dropped one may have left an own event at `name` alone; segments added meanwhile only store more."""
        mine = frozenset(s.path for s in tx.segments(self.name))
        remaining = {
            s.path
            for x in tx.locations()
            if x.name != self.name and not x.retired
            for s in tx.segments(x.name)
        }
        return mine == self.mine and self.elsewhere <= remaining


def _read_for_retire(
    ctx: OperationContext, engine: DataPlane, name: str
) -> Callable[[TopologyState, CatalogTransaction], plans.Decision]:
    """RET1 on the logs: read the stored identities in a read-only snapshot and run the scan outside the
    write lock; the returned plan decides on it in the writing transaction, once it has checked that no
    segment the scan counted on is gone (`StaleRead` otherwise)."""
    with ctx.transaction(readonly=True) as tx:
        decision = plans.plan_retire(load_state(tx), name)
        if not decision.ok or not decision.changes:
            # Refused on the topology, or already retired: no scan; the plan decides again under the lock.
            return lambda state, tx: _plan_retire(state, tx, name, None)
        locations = tx.locations()
        elsewhere = [s for x in locations if x.name != name and not x.retired for s in tx.segments(x.name)]
        mine = tx.segments(name)
    # DR0: a damaged log is neither read nor decided on. The scan reads only the files still there, so a
    # truncated or missing segment would count as holding nothing and its events, stored only here, would go
    # with the retirement; the dry run refuses as the run does.
    refuse_damaged(engine.store, name, mine)
    # Every origin: a relay, or the last holder of events their origin deleted (DEL3 counted on it) or whose
    # origin retired, strands them as surely as its own.
    unheld = engine.unheld(mine, seq_from=0, seq_below=None, elsewhere=elsewhere) if mine else {}
    scan = _StoredIdentities(
        name,
        tuple(unheld.get(name, [])),
        frozenset(s.path for s in mine),
        frozenset(s.path for s in elsewhere),
        tuple((o, tuple(t)) for o, t in sorted(unheld.items()) if o != name),
    )
    hit("retire.after-scan")
    return lambda state, tx: _plan_retire(state, tx, name, scan)


def _plan_retire(
    state: TopologyState, tx: CatalogTransaction, name: str, scan: _StoredIdentities | None
) -> plans.Decision:
    """RET1 on the topology first (no current connection), then on the logs: retiring must not strand events
    (its own or of any other origin) no other remaining location stores (`core.retirement.stranded_violation`),
    as `scan` read them."""
    decision = plans.plan_retire(state, name)
    if not decision.ok or not decision.changes:
        return decision
    if scan is None or not scan.still_true(tx):
        raise StaleRead(name)

    def may_connect(target: str) -> bool:
        # A connection the hint names must be one `topology add` accepts and whose passes no admission
        # projection can block (RFC2).
        return plans.plan_connection_add(state, name, target).ok and not admission_projection(
            state, name, target
        )

    stranded = stranded_violation(
        tx.locations(),
        tx.connections(),
        name,
        list(scan.only_here),
        {o: list(t) for o, t in scan.others},
        may_connect=may_connect,
    )
    return decision if stranded is None else plans.Decision(violations=(stranded,))


def add_connection(
    catalog: Catalog,
    source: str,
    target: str,
    *,
    both: bool = False,
    filter_expr: str | None = None,
    history: HistoryMode = HistoryMode.COMPLETE,
    reason: str | None = None,
    dry_run: bool = False,
) -> TopologyOutcome:
    """`topology add SRC DST` (F2 check on the history with the new edge; ADD1/ADD3 at the target)."""
    normalised = _normalise(filter_expr)
    return _run(
        catalog,
        command="topology add",
        args={
            "source": source,
            "target": target,
            "both": both,
            "filter": filter_expr,
            "history": history.value,
        },
        reason=reason,
        dry_run=dry_run,
        plan=lambda state, _tx: plans.plan_connection_add(
            state, source, target, both=both, filter=normalised, history=history
        ),
        resources=[location_resource(target)] + ([location_resource(source)] if both else []),
    )


def remove_connection(
    catalog: Catalog,
    source: str,
    target: str,
    *,
    both: bool = False,
    reason: str | None = None,
    dry_run: bool = False,
) -> TopologyOutcome:
    """`topology remove SRC DST` (the edge stays in the history projection, H2)."""
    return _run(
        catalog,
        command="topology remove",
        args={"source": source, "target": target, "both": both},
        reason=reason,
        dry_run=dry_run,
        plan=lambda state, _tx: plans.plan_connection_remove(state, source, target, both=both),
    )


def set_filter(
    catalog: Catalog,
    source: str,
    target: str,
    filter_expr: str | None,
    *,
    reason: str | None = None,
    dry_run: bool = False,
) -> TopologyOutcome:
    """`topology filter SRC DST --set EXPR | --clear` (F2 on set; SRC/DST may name a group, RFC2)."""
    normalised = _normalise(filter_expr)
    return _run(
        catalog,
        command="topology filter",
        args={"source": source, "target": target, "filter": filter_expr},
        reason=reason,
        dry_run=dry_run,
        plan=lambda state, _tx: plans.plan_filter(state, source, target, normalised),
    )


def declare_group(
    catalog: Catalog, name: str, members: list[str], *, reason: str | None = None, dry_run: bool = False
) -> TopologyOutcome:
    """`topology group NAME MEMBER...` (RFC1)."""
    return _run(
        catalog,
        command="topology group",
        args={"name": name, "members": members},
        reason=reason,
        dry_run=dry_run,
        plan=lambda state, _tx: plans.plan_group_declare(state, name, members),
    )


def remove_group(
    catalog: Catalog, name: str, *, reason: str | None = None, dry_run: bool = False
) -> TopologyOutcome:
    """`topology group NAME --remove`."""
    return _run(
        catalog,
        command="topology group --remove",
        args={"name": name},
        reason=reason,
        dry_run=dry_run,
        plan=lambda state, _tx: plans.plan_group_remove(state, name),
    )


def failover(
    catalog: Catalog, location: str, old: str, new: str, *, reason: str | None = None, dry_run: bool = False
) -> TopologyOutcome:
    """`topology failover LOC --from OLD --to NEW` (FO1)."""
    return _run(
        catalog,
        command="topology failover",
        args={"location": location, "from": old, "to": new},
        reason=reason,
        dry_run=dry_run,
        plan=lambda state, _tx: plans.plan_failover(state, location, old, new),
        resources=[location_resource(location), location_resource(new)],
    )


@dataclass(frozen=True)
class TopologyHistory(AllOrNothing):
    """`topology history`: the recorded changes, oldest first (H1)."""

    changes: tuple[Change, ...]

    def to_json(self) -> dict[str, Any]:
        """`topology history --json`."""
        return {"ok": True, "changes": [change_json(c) for c in self.changes]}


def history(catalog: Catalog, location: str | None = None) -> TopologyHistory:
    """`topology history [--location NAME]`."""
    with catalog.transaction(readonly=True) as tx:
        if location is not None:
            get_location(tx, location)
        return TopologyHistory(tuple(tx.changes(location)))


@dataclass(frozen=True)
class TopologyView(AllOrNothing):
    """Everything `topology show` draws."""

    locations: tuple[Location, ...]
    connections: tuple[Connection, ...]
    state: TopologyState

    def to_json(self) -> dict[str, Any]:
        """`topology show --json` (and `--format json`)."""
        state = self.state
        return {
            "ok": True,
            "locations": [location_json(loc) for loc in self.locations],
            "connections": [connection_json(c) for c in self.connections],
            "history_edges": [
                {"source": s, "target": t, "ever_filtered": (s, t) in state.ever_filtered}
                for s, t in sorted(state.edges)
            ],
            "groups": {name: sorted(members) for name, members in sorted(state.groups.items())},
        }


def show(catalog: Catalog) -> TopologyView:
    """`topology show`: locations, connections and the history projection."""
    with catalog.transaction(readonly=True) as tx:
        return TopologyView(tuple(tx.locations()), tuple(tx.connections()), load_state(tx))


def _normalise(filter_expr: str | None) -> str | None:
    if filter_expr is None:
        return None
    from replctl.filterexpr import parse_filter

    return parse_filter(filter_expr).normalised
