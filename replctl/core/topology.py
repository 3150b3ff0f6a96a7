"""The topology state: the fold of the recorded topology changes (rules.md H1–H5).

`fold` turns the append-only history into a `TopologyState`. Two parts live in it:

- the *history projection* H (H2, H3): locations, retirements, every directed connection ever added
  between two non-retired locations, and those on which a filter was ever set. It depends only on the *set*
  of recorded changes (H5), never on their order, so every location that folds the same history sees the
  same H;
- the *current* view: connections not removed, with their current filter, and the declared groups (RFC1).
  These follow recording order (the change id when present, else the order given).

The fold never raises for rule violations: checking is the job of `topology_rules`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import pairwise
from types import MappingProxyType

from replctl.core.model import Change, ChangeKind, Role

Pair = tuple[str, str]


@dataclass(frozen=True)
class TopologyState:
    """The folded topology history: the projection H (H2–H5) and the current connections and groups."""

    # Every location ever added, retired ones included (M1: an id is never reused).
    roles: Mapping[str, Role] = field(default_factory=lambda: MappingProxyType({}))
    retired: frozenset[str] = frozenset()
    # H2: directed connections ever added between two non-retired locations; removal keeps them.
    edges: frozenset[Pair] = frozenset()
    # H3: edges of H on which a filter was ever set, even if it was cleared later.
    ever_filtered: frozenset[Pair] = frozenset()
    # Connections not removed → their current normalised filter (None = unfiltered).
    current: Mapping[Pair, str | None] = field(default_factory=lambda: MappingProxyType({}))
    # RFC1: declared groups → members, as currently declared.
    groups: Mapping[str, frozenset[str]] = field(default_factory=lambda: MappingProxyType({}))
    # Every directed connection ever added and every one ever filtered, retired endpoints included: H is these
    # minus retired locations. Kept so that `apply` continues a fold exactly (H5 holds for any later change).
    ever_connected: frozenset[Pair] = frozenset()
    ever_filter_set: frozenset[Pair] = frozenset()
    # Every filter each directed connection ever had, across removals and reconnects (ADD4: a removed
    # connection's filters are history), None standing for a time it had none (added unfiltered, or cleared).
    # A set of what was recorded, so it depends on the set of changes only (H5). DR3 recovers a terminal
    # location through all of them (core.recovery.history_filters).
    filters_ever: Mapping[Pair, frozenset[str | None]] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def locations(self) -> frozenset[str]:
        """The vertices of H: every location added and not retired (H2)."""
        return frozenset(self.roles) - self.retired

    def is_active(self, name: str) -> bool:
        """Known and not retired."""
        return name in self.roles and name not in self.retired

    def group_of(self, location: str) -> str | None:
        """The declared group that has `location` as a member, if any (the first by name when several)."""
        for name in sorted(self.groups):
            if location in self.groups[name]:
                return name
        return None

    def apply(self, changes: Iterable[Change]) -> TopologyState:
        """The state after recording `changes` after everything folded so far (the planners' what-if)."""
        builder = _Builder.from_state(self)
        for change in changes:
            builder.add(change)
        return builder.freeze()


def fold(changes: Iterable[Change]) -> TopologyState:
    """Fold recorded changes into a `TopologyState` (H1–H5).

    Changes are taken in recording order: by `id` where it is set, else in the order given (changes without an
    id follow those with one). Only the current connections and the groups depend on that order.
    """
    ordered = list(changes)
    ids = [change.id for change in ordered]
    # The catalog hands the history over in id order already, and a history without ids is in order by
    # definition; sorting is needed only for a mix or a shuffle.
    in_order = all(a is not None and b is not None and a < b for a, b in pairwise(ids))
    if not in_order and any(identifier is not None for identifier in ids):
        indexed = sorted(
            range(len(ordered)),
            key=lambda index: (0, ids[index]) if ids[index] is not None else (1, index),
        )
        ordered = [ordered[index] for index in indexed]
    builder = _Builder()
    for change in ordered:
        builder.add(change)
    return builder.freeze()


_ADDED = ChangeKind.CONNECTION_ADDED
_REMOVED = ChangeKind.CONNECTION_REMOVED
_FILTER_SET = ChangeKind.FILTER_SET
_FILTER_CLEARED = ChangeKind.FILTER_CLEARED
_CONNECTION_KINDS = frozenset({_ADDED, _REMOVED, _FILTER_SET, _FILTER_CLEARED})

# A location-added change's claim on a role; the smallest wins, so a duplicate addition (which M1 refuses, but
# a merged history may hold) resolves the same way whatever the order (H5).
_RoleClaim = tuple[bool, int, str]


class _Builder:
    """Mutable accumulator for one fold; `freeze` produces the immutable state."""

    def __init__(self) -> None:
        self.roles: dict[str, tuple[_RoleClaim, Role]] = {}
        self.retired: set[str] = set()
        self.ever_connected: set[Pair] = set()
        self.ever_filter_set: set[Pair] = set()
        self.current: dict[Pair, str | None] = {}
        self.groups: dict[str, frozenset[str]] = {}
        self.filters_ever: dict[Pair, set[str | None]] = {}

    @classmethod
    def from_state(cls, state: TopologyState) -> _Builder:
        builder = cls()
        # Claims of an already folded state are unknown; they rank before any new claim.
        builder.roles = {name: ((False, -1, ""), role) for name, role in state.roles.items()}
        builder.retired = set(state.retired)
        builder.ever_connected = set(state.ever_connected)
        builder.ever_filter_set = set(state.ever_filter_set)
        builder.current = dict(state.current)
        builder.groups = dict(state.groups)
        builder.filters_ever = {pair: set(filters) for pair, filters in state.filters_ever.items()}
        return builder

    def add(self, change: Change) -> None:
        kind = change.kind
        if kind in _CONNECTION_KINDS:
            # The hot path of a long history: connection and filter changes, most of all.
            source, target = change.source, change.target
            if source is not None and target is not None:
                self._change_connection(kind, (source, target), change.filter)
        elif kind is ChangeKind.LOCATION_ADDED:
            self._add_location(change)
        elif kind is ChangeKind.LOCATION_RETIRED and change.location is not None:
            self.retired.add(change.location)
        elif kind is ChangeKind.GROUP_DECLARED and change.group is not None:
            self.groups[change.group] = frozenset(change.members)
        elif kind is ChangeKind.GROUP_REMOVED and change.group is not None:
            self.groups.pop(change.group, None)
        # FAILOVER is a marker: the connection changes it implies are recorded beside it (model.Change).

    def _change_connection(self, kind: ChangeKind, pair: Pair, expression: str | None) -> None:
        if kind is _ADDED:
            self.filters_ever.setdefault(pair, set()).add(expression)
            self.ever_connected.add(pair)
            if expression is not None:
                self.ever_filter_set.add(pair)  # H3
            self.current[pair] = expression
        elif kind is _REMOVED:
            self.current.pop(pair, None)  # the edge stays in H (H2)
        elif kind is _FILTER_SET:
            if expression is not None:
                self.filters_ever.setdefault(pair, set()).add(expression)
                self.ever_filter_set.add(pair)  # H3
                if pair in self.current:
                    self.current[pair] = expression
        else:  # FILTER_CLEARED
            # Recorded whether or not the connection is current: an unfiltered time in the history makes DR3's
            # recovery unfiltered, which can bring more, never less.
            self.filters_ever.setdefault(pair, set()).add(None)
            if pair in self.current:
                self.current[pair] = None  # still ever filtered (H3)

    def _add_location(self, change: Change) -> None:
        if change.location is None:
            return
        role = change.role or Role.READ_WRITE
        claim: _RoleClaim = (change.id is None, change.id if change.id is not None else 0, role.value)
        known = self.roles.get(change.location)
        if known is None or claim < known[0]:
            self.roles[change.location] = (claim, role)

    def freeze(self) -> TopologyState:
        retired = frozenset(self.retired)

        def alive(pair: Pair) -> bool:
            return pair[0] not in retired and pair[1] not in retired

        edges = frozenset(pair for pair in self.ever_connected if alive(pair))
        return TopologyState(
            roles=MappingProxyType({name: role for name, (_, role) in self.roles.items()}),
            retired=retired,
            edges=edges,
            ever_filtered=frozenset(pair for pair in self.ever_filter_set if pair in edges),
            # RET1: a retired location has no current connection.
            current=MappingProxyType({pair: f for pair, f in self.current.items() if alive(pair)}),
            groups=MappingProxyType(dict(self.groups)),
            ever_connected=frozenset(self.ever_connected),
            ever_filter_set=frozenset(self.ever_filter_set),
            filters_ever=MappingProxyType({pair: frozenset(fs) for pair, fs in self.filters_ever.items()}),
        )
