"""Planners for topology requests: state + request → the changes to record, or the violations (rules.md §4).

Each planner applies the request to H first and then checks every ever-filtered edge (F2), so a request is
judged on the history it would leave behind. Planners never raise for a refused request: the `Decision`
carries the violations, and the service maps `unknown-*` codes to exit 2 and rule ids to exit 3. Removing a
connection and clearing a filter are never refused by F1 (they cannot create a cycle, F2); RFC2 still refuses
clearing one redundant connection alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from replctl.core.model import Change, ChangeKind, HistoryMode, Role, Violation
from replctl.core.topology import Pair, TopologyState
from replctl.core.topology_graph import contract
from replctl.core.topology_rules import identical_filter_violations, structural_violations, validate

__all__ = [
    "Decision",
    "case_twins",
    "plan_connection_add",
    "plan_connection_remove",
    "plan_failover",
    "plan_filter",
    "plan_group_declare",
    "plan_group_remove",
    "plan_location_add",
    "plan_retire",
    "validate",
]


@dataclass(frozen=True)
class Decision:
    """What a planner decided: the changes to record, or the violations that refuse the request."""

    changes: tuple[Change, ...] = ()
    violations: tuple[Violation, ...] = ()

    @property
    def ok(self) -> bool:
        """True when no violation refuses the request (warnings do not)."""
        return not any(not violation.warning for violation in self.violations)


# A location id names its log's folder in every store (local, HDFS, S3) and a catalog key of 64 characters.
LOCATION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def plan_location_add(state: TopologyState, name: str, role: Role = Role.READ_WRITE) -> Decision:
    """`location add`: a new id only (M1: never reused, not even after retirement)."""
    if not LOCATION_ID.fullmatch(name):
        return _refuse(
            "bad-name",
            f"location id {name!r} is not allowed: use 1 to 64 letters, digits, '_', '.' or '-', "
            "starting with a letter or digit",
            hint="e.g. replctl location add eu-west-1",
        )
    if name in state.roles and name not in state.retired:
        if state.roles[name] is role:
            # Adding what exists is done already (cli.md: idempotent, exit 0 "nothing to do"): no change.
            return Decision()
        return _refuse(
            "location-exists",
            f"location {name} exists as {state.roles[name].value}; a location's role is set when it is added (M1)",
            hint=f"replctl location show {name}",
        )
    if name in state.roles:
        return _refuse(
            "M1",
            f"location id {name} was already used and retired; a location id is never reused (M1)",
            hint="choose a new location id: replctl location add NEW-NAME",
        )
    taken = _name_taken(state, name)
    if taken is not None:
        return Decision(violations=(taken,))
    return Decision(changes=(Change(kind=ChangeKind.LOCATION_ADDED, location=name, role=role),))


def _name_taken(state: TopologyState, name: str) -> Violation | None:
    """Why a new location id `name` is taken (`name-taken`): a declared group's name, or the id of a location,
    retired ones included (M1: a retired log's folder may still hold segments), differing from it only in case.
    On a store whose file system ignores case (macOS and Windows defaults, SMB and NAS mounts) such twins share
    one folder, and `log compact --gc` of one would collect the other's segments as orphans."""
    if name in state.groups:
        return Violation(
            code="name-taken",
            message=f"{name} names a declared group; a location id must differ from every group name",
            hint="choose another location id",
        )
    twins = case_twins(name, state.roles)
    if not twins:
        return None
    twin = twins[0]
    retired = " (retired)" if twin in state.retired else ""
    return Violation(
        code="name-taken",
        message=f"location id {name} differs only in case from location {twin}{retired}; on a store whose file "
        "system ignores case (macOS and Windows defaults, SMB and NAS mounts) both logs would share one "
        "folder, so an id must differ from every other in more than case (M1)",
        hint="choose a location id that differs in more than case: replctl location add NEW-NAME",
        details={"twin": twin},
    )


def case_twins(name: str, locations: Iterable[str]) -> list[str]:
    """The ids among `locations` that differ from `name` only in case. On a store whose file system ignores
    case their logs share `name`'s folder: `location add` refuses such an id (M1), and `log compact --gc`
    spares their segments, for a catalog an older version let hold such a pair."""
    folded = name.casefold()
    return sorted(other for other in locations if other != name and other.casefold() == folded)


def plan_connection_add(
    state: TopologyState,
    src: str,
    dst: str,
    *,
    both: bool = False,
    filter: str | None = None,
    history: HistoryMode = HistoryMode.COMPLETE,
) -> Decision:
    """`topology add SRC DST [--both] [--filter EXPR] [--history MODE]` (F1, F2, RFC1, RFC2, ROLE1).

    A reconnect of a removed connection is a new connection-added change and is checked again (F2).
    """
    problems = _check_endpoints(state, src, dst)
    if problems:
        return Decision(violations=tuple(problems))
    pairs = [(src, dst), (dst, src)] if both else [(src, dst)]
    existing = [pair for pair in pairs if pair in state.current]
    if existing:
        missing = [pair for pair in pairs if pair not in state.current]
        hint = f"replctl topology add {missing[0][0]} {missing[0][1]}" if missing else None
        return _refuse(
            "connection-exists",
            "connection " + ", ".join(f"{s}→{d}" for s, d in existing) + " already exists",
            hint=hint or f"replctl topology filter {src} {dst} --set EXPR changes its filter",
        )
    read_only = [s for s, _ in pairs if state.roles.get(s) is Role.READ_ONLY]
    if read_only:
        return _refuse(
            "ROLE1",
            f"{read_only[0]} is read-only and can have no outgoing connection (ROLE1)",
            hint=f"replctl topology add {dst} {src}" if both else None,
        )
    changes = tuple(
        Change(kind=ChangeKind.CONNECTION_ADDED, source=s, target=d, filter=filter, history=history)
        for s, d in pairs
    )
    decision = _checked(state, changes)
    if filter is None or decision.ok:
        return decision
    # The filter itself is what F1 refuses when it sits on the new edge: say how to add it without one.
    unfiltered = f"replctl topology add {src} {dst}" + (" --both" if both else "")
    return Decision(
        violations=tuple(
            replace(v, hint=f"add it without a filter: {unfiltered}" + (f"; or {v.hint}" if v.hint else ""))
            if v.code == "F1" and {src, dst} == set(v.details.get("edge", ()))
            else v
            for v in decision.violations
        )
    )


def plan_connection_remove(state: TopologyState, src: str, dst: str, *, both: bool = False) -> Decision:
    """`topology remove SRC DST [--both]`: removes the current connection(s); never refused by F1 (F2).

    The edge stays in H (H2). With `--both`, the directions that exist are removed; it is refused only when
    neither exists.
    """
    unknown = [_unknown_location(name) for name in dict.fromkeys((src, dst)) if name not in state.roles]
    if unknown:
        return Decision(violations=tuple(unknown))
    pairs = [(src, dst), (dst, src)] if both else [(src, dst)]
    present = [pair for pair in pairs if pair in state.current]
    if not present:
        return _refuse(
            "unknown-connection",
            "no current connection " + " or ".join(f"{s}→{d}" for s, d in pairs),
            hint="replctl topology show",
        )
    return Decision(
        changes=tuple(Change(kind=ChangeKind.CONNECTION_REMOVED, source=s, target=d) for s, d in present)
    )


def plan_filter(state: TopologyState, src: str, dst: str, filter: str | None) -> Decision:
    """`topology filter SRC DST (--set EXPR | --clear)`; `filter` None clears.

    SRC or DST may name a declared group: the change applies in one step to every current connection between
    that group's members and the other side (RFC2 refuses changing one redundant connection alone). Setting is
    checked by F1/RFC1/RFC2 on the resulting history; clearing only by RFC2 (F2).
    """
    sources, source_problem = _side(state, src)
    targets, target_problem = _side(state, dst)
    problems = [problem for problem in (source_problem, target_problem) if problem is not None]
    if problems:
        return Decision(violations=tuple(problems))
    pairs = sorted(pair for pair in state.current if pair[0] in sources and pair[1] in targets)
    if not pairs:
        return _refuse(
            "unknown-connection",
            f"no current connection from {src} to {dst}",
            hint=f"replctl topology add {src} {dst}" if src in state.roles and dst in state.roles else None,
        )
    if filter is None:
        # Clearing a connection that has no filter changes nothing, so nothing is recorded (H1 lists changes).
        changes = tuple(
            Change(kind=ChangeKind.FILTER_CLEARED, source=s, target=d)
            for s, d in pairs
            if state.current[(s, d)] is not None
        )
        if not changes:
            return Decision()
        after = state.apply(changes)
        violations = identical_filter_violations(after, contract(after))
        return Decision(violations=tuple(violations)) if violations else Decision(changes=changes)
    changes = tuple(Change(kind=ChangeKind.FILTER_SET, source=s, target=d, filter=filter) for s, d in pairs)
    return _checked(state, changes)


def plan_group_declare(state: TopologyState, name: str, members: Iterable[str]) -> Decision:
    """`topology group NAME MEMBER...`: declare or change a group (RFC1), checked like every change (F2)."""
    wanted = list(dict.fromkeys(members))
    if not LOCATION_ID.fullmatch(name):
        # A group name is printed and recorded as a location id is: the same characters (issue 19).
        return _refuse(
            "bad-name",
            f"group name {name!r} is not allowed: use 1 to 64 letters, digits, '_', '.' or '-', "
            "starting with a letter or digit",
            hint="e.g. replctl topology group app-eu A B",
        )
    if name in state.roles:
        return _refuse(
            "name-taken",
            f"{name} is a location id; a group name must differ from every location id",
            hint="choose another group name",
        )
    problems = [_unknown_location(member) for member in wanted if member not in state.roles]
    problems += [_retired(member) for member in wanted if member in state.retired]
    if problems:
        return Decision(violations=tuple(problems))
    if len(wanted) < 2:
        return _refuse("bad-group", f"group {name} needs at least two members (RFC1)")
    for other, other_members in sorted(state.groups.items()):
        shared = sorted(set(wanted) & other_members)
        if other != name and shared:
            return _refuse(
                "bad-group",
                f"{', '.join(shared)} already belong to group {other}; a location is a member of one group",
                hint=f"replctl topology group {other} {' '.join(sorted(other_members | set(wanted)))}",
            )
    change = Change(kind=ChangeKind.GROUP_DECLARED, group=name, members=tuple(sorted(wanted)))
    return _checked(state, (change,))


def plan_group_remove(state: TopologyState, name: str) -> Decision:
    """`topology group NAME --remove`: refused while redundant filtered connections still need it (F2)."""
    if name not in state.groups:
        return _refuse("unknown-group", f"no declared group {name}", hint="replctl topology show")
    return _checked(state, (Change(kind=ChangeKind.GROUP_REMOVED, group=name),))


def plan_failover(state: TopologyState, location: str, old: str, new: str) -> Decision:
    """`topology failover LOC --from OLD --to NEW` (FO1).

    OLD and NEW must be members of one declared group. Every current connection between LOC and OLD (either
    direction) is replaced by the same connection, with the identical filter, between LOC and NEW, in one
    step; a FAILOVER marker is recorded first. New connections start in the `complete` history mode (ADD1).
    """
    refusal = _failover_refusal(state, location, old, new)
    if refusal:
        return Decision(violations=refusal)
    moved = sorted(pair for pair in state.current if set(pair) == {location, old})
    replaced = {
        pair: (new if pair[0] == old else pair[0], new if pair[1] == old else pair[1]) for pair in moved
    }
    read_only = [s for s, _ in replaced.values() if state.roles.get(s) is Role.READ_ONLY]
    if read_only:
        return _refuse("ROLE1", f"{read_only[0]} is read-only and can have no outgoing connection (ROLE1)")
    changes: list[Change] = [
        Change(kind=ChangeKind.FAILOVER, location=location, failover_from=old, failover_to=new)
    ]
    changes += [Change(kind=ChangeKind.CONNECTION_REMOVED, source=s, target=d) for s, d in moved]
    for pair in moved:
        s, d = replaced[pair]
        if (s, d) in state.current:
            # Already redundant: the connection stays; RFC2 checks that its filter is the identical one.
            continue
        changes.append(
            Change(
                kind=ChangeKind.CONNECTION_ADDED,
                source=s,
                target=d,
                filter=state.current[pair],
                history=HistoryMode.COMPLETE,
            )
        )
    return _checked(state, tuple(changes))


def _failover_refusal(state: TopologyState, location: str, old: str, new: str) -> tuple[Violation, ...]:
    """FO1's preconditions: known live names, OLD and NEW in one group, LOC outside it and linked to OLD."""
    names = dict.fromkeys((location, old, new))
    problems = [_unknown_location(name) for name in names if name not in state.roles]
    problems += [_retired(name) for name in names if name in state.retired]
    if problems:
        return tuple(problems)
    if len(names) < 3:
        return _refuse(
            "FO1", f"fail-over of {location} from {old} to {new} names one location twice (FO1)"
        ).violations
    group = next(
        (g for g, members in sorted(state.groups.items()) if old in members and new in members), None
    )
    if group is None:
        return _refuse(
            "FO1",
            f"{old} and {new} are not members of one declared group; fail-over switches between the "
            "redundant members of a group (FO1)",
            hint=f"declare it first: replctl topology group NAME {old} {new}",
        ).violations
    if location in state.groups[group]:
        return _refuse(
            "FO1",
            f"{location} is itself a member of group {group}; fail-over moves a location outside the group "
            "(FO1)",
        ).violations
    if not any(set(pair) == {location, old} for pair in state.current):
        return _refuse(
            "unknown-connection",
            f"{location} has no current connection with {old}",
            hint="replctl topology show",
        ).violations
    return ()


def plan_retire(state: TopologyState, name: str) -> Decision:
    """`location retire NAME` (RET1): no current connection in either direction; idempotent once retired.

    Retiring removes the location and its edges from H, so it can only lift refusals (F2): it is not checked.
    """
    if name not in state.roles:
        return Decision(violations=(_unknown_location(name),))
    if name in state.retired:
        return Decision()
    attached = sorted(pair for pair in state.current if name in pair)
    if attached:
        return _refuse(
            "RET1",
            f"{name} still has current connections "
            + ", ".join(f"{s}→{d}" for s, d in attached)
            + "; a location is retired only once it has none (RET1)",
            hint="; ".join(_remove_commands(attached)),
            details={"connections": [list(pair) for pair in attached]},
        )
    return Decision(changes=(Change(kind=ChangeKind.LOCATION_RETIRED, location=name),))


def _checked(state: TopologyState, changes: tuple[Change, ...]) -> Decision:
    """F2: apply the changes to H, then check every ever-filtered edge (F1, RFC1) and RFC2."""
    violations = structural_violations(state.apply(changes))
    if violations:
        return Decision(violations=tuple(violations))
    return Decision(changes=changes)


def _check_endpoints(state: TopologyState, src: str, dst: str) -> list[Violation]:
    problems = [_unknown_location(name) for name in dict.fromkeys((src, dst)) if name not in state.roles]
    if problems:
        return problems
    retired = [_retired(name) for name in dict.fromkeys((src, dst)) if name in state.retired]
    if retired:
        return retired
    if src == dst:
        return [
            Violation(code="bad-connection", message=f"a connection joins two locations, not {src} to itself")
        ]
    return []


def _side(state: TopologyState, name: str) -> tuple[frozenset[str], Violation | None]:
    """A `topology filter` endpoint: a location, or a declared group standing for its members."""
    if name in state.groups:
        return state.groups[name] - state.retired, None
    if name in state.roles:
        return frozenset({name}), None
    return frozenset(), Violation(
        code="unknown-location",
        message=f"{name} is neither a location nor a declared group",
        hint="replctl location list",
    )


def _remove_commands(pairs: list[Pair]) -> list[str]:
    """The `topology remove` commands that remove the given connections (`--both` for a pair)."""
    commands: list[str] = []
    done: set[Pair] = set()
    for s, d in pairs:
        if (s, d) in done:
            continue
        if (d, s) in pairs:
            commands.append(f"replctl topology remove {s} {d} --both")
            done.add((d, s))
        else:
            commands.append(f"replctl topology remove {s} {d}")
        done.add((s, d))
    return commands


def _unknown_location(name: str) -> Violation:
    return Violation(code="unknown-location", message=f"no location {name}", hint="replctl location list")


def _retired(name: str) -> Violation:
    return Violation(
        code="RET1",
        message=f"{name} is retired; a retired location has left the topology for good (RET1, M1)",
        hint="replctl location list",
    )


def _refuse(
    code: str, message: str, *, hint: str | None = None, details: dict[str, object] | None = None
) -> Decision:
    return Decision(
        violations=(Violation(code=code, message=message, hint=hint, details=dict(details or {})),)
    )
