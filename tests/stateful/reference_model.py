"""A reference model of rules.md, written from the rules themselves, for the differential test of the CLI.

It imports nothing from replctl: vector time, the history projection, replication, deletion, recovery and
retirement are re-stated here in a few plain lines each, so that a mistake shared by the product's planners and
this model is unlikely. Each command method mutates the model the way rules.md says the command changes the
catalog and the logs, and returns the outcome the CLI must report: the exit code of cli.md and, for a refusal
or an invalid request, the error code (a rule id, or the short name cli.md uses).

Where rules.md leaves a choice to the implementation, the model takes the product's documented choice and says
so where it does: the seq a replicated event gets (`seq' = Y.seq + (seq − progress)`, which keeps X's order
and allows gaps, M4), the order of the passes of `replicate` (sorted connections, round after round until a
round changes nothing), the history mode `none` merging into DVV as well as CVV (as `current` does, ADD3), which
of several violations a refused topology change names (placement ones, F1/RFC1, by sorted filtered pair, before
RFC2's), a location being a member of one group at most, fail-over's new connections starting in the `complete`
mode, and a restore keeping a logical deletion asked for since the backup (BK2 names only DVV and deleted_upto).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import networkx as nx

VT = dict[str, int]

READ_WRITE, HUB, READ_ONLY = "read-write", "hub", "read-only"
ACTIVE, PENDING, BLOCKED, REMOVED = "active", "pending", "blocked", "removed"
RETIRED, RECOVERING = "retired", "recovering"

# The model reads only the filters the state machine draws: `key = 'K'`.
_KEY_FILTER = re.compile(r"^key = '([^']*)'$")


def vt_join(*vectors: VT) -> VT:
    """VT4: the least upper bound; zero entries are left out (VT1)."""
    out: VT = {}
    for vector in vectors:
        for key, value in vector.items():
            if value > out.get(key, 0):
                out[key] = value
    return out


def vt_leq(v: VT, w: VT) -> bool:
    """VT2: v ≤ w on every key, a missing key being 0."""
    return all(value <= w.get(key, 0) for key, value in v.items())


@dataclass
class Event:
    """M2, reduced to what the rules read: the stored seq, the identity (M3), the vt and the key."""

    seq: int
    origin: str
    origin_time: int
    vt: VT
    key: str

    @property
    def stamp(self) -> VT:
        """RET4: `vt(e) ⊔ {origin(e): origin_time(e)}`, what a write merges into CVV and a deletion into DVV."""
        return vt_join(self.vt, {self.origin: self.origin_time})

    def row(self) -> tuple[int, str, int, str, VT]:
        """What the test compares with `log show --json`."""
        return (self.seq, self.origin, self.origin_time, self.key, dict(self.vt))


def covers(vector: VT, event: Event) -> bool:
    """RET4: V covers e iff `V[origin(e)] ≥ origin_time(e)` (CF1, REP1 (1), DEL3 ask it this way)."""
    return vector.get(event.origin, 0) >= event.origin_time


def passes(filters: str | tuple[str, ...] | None, event: Event, *, or_origin: str | None = None) -> bool:
    """A connection filter (None = unfiltered); DR3 ORs every filter a terminal source's connection ever had,
    and `origin = A`."""
    if filters is None:
        return True
    if or_origin is not None and event.origin == or_origin:
        return True
    for filter_expr in (filters,) if isinstance(filters, str) else filters:
        match = _KEY_FILTER.match(filter_expr)
        assert match, f"the model reads only key filters, not {filter_expr!r}"
        if event.key == match.group(1):
            return True
    return False


@dataclass
class Location:
    """M5 metadata (the catalog) and the stored events (the log store)."""

    name: str
    role: str
    state: str = ACTIVE
    seq: int = 0
    cvv: VT = field(default_factory=dict)
    dvv: VT = field(default_factory=dict)
    deleted_upto: int = 0
    logical_deleted_upto: int = 0
    pending_upto: int | None = None  # DEL4: the pending physical deletion target
    events: list[Event] = field(default_factory=list)
    baseline: VT = field(default_factory=dict)  # ADD3 / DR5 merges without events (I3); the catalog keeps it
    baseline_stored: VT = field(default_factory=dict)  # DR5: per origin, what A stored when it accepted

    def counted(self, cvv: VT) -> VT:
        """DR1: `cvv` with every baseline entry whose events A stored when it was merged are covered again."""
        return vt_join(
            cvv, {o: b for o, b in self.baseline.items() if cvv.get(o, 0) >= self.baseline_stored.get(o, 0)}
        )

    def deletions_known(self) -> VT:
        """DR1: the DVV entries known at once; one no larger than an accepted entry with events stored under
        it may be that entry's number, and counts only through `counted`."""
        return {
            o: d
            for o, d in self.dvv.items()
            if d > self.baseline.get(o, 0) or self.baseline_stored.get(o, 0) == 0
        }


@dataclass(frozen=True)
class Backup:
    """BK1: A's stored events and metadata as of one catalog version."""

    id: str
    location: str
    events: tuple[Event, ...]
    seq: int
    cvv: VT
    dvv: VT
    deleted_upto: int
    logical_deleted_upto: int


@dataclass
class Connection:
    """A connection X→Y: run-time state, filter, H3's flag, history mode and progress(Y, X)."""

    source: str
    target: str
    state: str
    filter: str | None
    ever_filtered: bool
    history: str
    progress: int = 0

    @property
    def current(self) -> bool:
        """Active, pending or blocked: not removed (DEL3's current target)."""
        return self.state != REMOVED


@dataclass(frozen=True)
class Outcome:
    """The exit code cli.md requires, and the error code of a refusal or an invalid request."""

    code: int
    error: str | None = None


DONE = Outcome(0)


class ReferenceModel:
    """rules.md as executable Python: one method per CLI command the differential test drives."""

    def __init__(self) -> None:
        self.locations: dict[str, Location] = {}
        self.connections: dict[tuple[str, str], Connection] = {}
        self.refused_last: list[str] = []  # the neighbours the last event recovery could not use (DR5)
        self.dr3_refused_last: list[str] = []  # those of them DR3 refused (filtered, A not terminal)
        self.planning = False  # a BK3 trial: DR4's rounds on paper, no loss accepted (as `plan_rounds`)
        self.edges: set[tuple[str, str]] = set()  # H2: every connection ever added
        self.filtered: set[tuple[str, str]] = set()  # H3: every connection ever filtered
        # Every filter each connection ever had, across reconnects (ADD4), None for a time without one (DR3).
        self.filters_ever: dict[tuple[str, str], set[str | None]] = {}
        self.pruned: set[str] = set()  # RET2: ids left out of every vt
        self.groups: dict[str, set[str]] = {}  # RFC1: declared application groups
        self.backups: list[Backup] = []  # BK1, oldest first
        self.blocks = 0  # passes RFC2's admission check held back (REP1 (3)), for the statistics

    # ---- queries ---------------------------------------------------------------------------------------

    def live(self) -> list[str]:
        """Non-retired locations, by name."""
        return sorted(n for n, loc in self.locations.items() if loc.state != RETIRED)

    def current(self) -> list[tuple[str, str]]:
        """Current connections, sorted (the order `replicate` runs them in)."""
        return sorted(k for k, c in self.connections.items() if c.current)

    def undirected(self, edges: set[tuple[str, str]], filtered: set[tuple[str, str]]) -> nx.Graph:
        """H2/H4: U(H) over the non-retired locations; an edge is filtered iff either direction ever was."""
        live = set(self.live())
        graph = nx.Graph()
        graph.add_nodes_from(live)
        for s, t in edges:
            if s in live and t in live:
                was = graph.edges[s, t]["filtered"] if graph.has_edge(s, t) else False
                graph.add_edge(s, t, filtered=was or (s, t) in filtered)
        return graph

    def node(self, name: str) -> str:
        """RFC1: the node of U(H) contracted by the declared groups that stands for a location."""
        group = next((g for g, members in sorted(self.groups.items()) if name in members), None)
        return f"group {group}" if group is not None else name

    def contracted(self, edges: set[tuple[str, str]], groups: dict[str, set[str]]) -> nx.Graph:
        """H2/H4 with RFC1: U(H) over the non-retired locations, each declared group contracted to one node."""
        saved, self.groups = self.groups, groups
        try:
            live = set(self.live())
            graph = nx.Graph()
            graph.add_nodes_from(self.node(n) for n in live)
            for s, t in edges:
                if s in live and t in live and self.node(s) != self.node(t):
                    graph.add_edge(self.node(s), self.node(t))
            return graph
        finally:
            self.groups = saved

    def violation(
        self,
        edges: set[tuple[str, str]],
        filtered: set[tuple[str, str]],
        filters: dict[tuple[str, str], str | None],
        groups: dict[str, set[str]],
        *,
        placement: bool = True,
    ) -> str | None:
        """F2 on a history: the first of F1/RFC1 (every ever-filtered edge a bridge of the contracted U(H), none
        inside a group), then RFC2 (the current connections crossing one bridge in one direction carry one filter)."""
        graph = self.contracted(edges, groups)
        bridges = {frozenset(b) for b in nx.bridges(graph)}
        saved, self.groups = self.groups, groups
        try:
            live = set(self.live())
            if placement:
                seen: set[frozenset[str]] = set()
                for s, t in sorted(filtered):
                    if s not in live or t not in live or frozenset((s, t)) in seen:
                        continue
                    seen.add(frozenset((s, t)))
                    if self.node(s) == self.node(t):
                        return "RFC1"
                    if frozenset((self.node(s), self.node(t))) not in bridges:
                        return "F1"
            crossing: dict[tuple[str, str], set[str | None]] = {}
            for (s, t), expr in filters.items():
                a, b = self.node(s), self.node(t)
                if a != b and frozenset((a, b)) in bridges:
                    crossing.setdefault((a, b), set()).add(expr)
            return "RFC2" if any(len(exprs) > 1 for exprs in crossing.values()) else None
        finally:
            self.groups = saved

    def current_filters(self) -> dict[tuple[str, str], str | None]:
        """The filter of every current connection (RFC2 compares them)."""
        return {k: c.filter for k, c in self.connections.items() if c.current}

    def admission(self, src: str, dst: str) -> set[str]:
        """RFC2: P of src→dst: into a group member from outside it, every location on dst's side of the bridge."""
        into, out_of = self.node(dst), self.node(src)
        if not into.startswith("group ") or into == out_of:
            return set()
        graph = self.contracted(self.edges, self.groups)
        if not graph.has_edge(into, out_of):
            return set()
        graph.remove_edge(into, out_of)
        side = nx.node_connected_component(graph, into)
        if out_of in side:
            return set()  # the edge lies on a cycle: it has no side
        return {n for n in self.live() if self.node(n) in side}

    def neighbours(self, name: str) -> list[str]:
        """A's neighbours in U(H)."""
        graph = self.undirected(self.edges, self.filtered)
        return sorted(graph.neighbors(name)) if name in graph else []

    # ---- locations and topology (M1, H1–H5, F1, F2, ROLE1, ADD1–ADD4) ----------------------------------

    def add_location(self, name: str, role: str) -> Outcome:
        """`location add NAME --role ROLE`: an id is never reused (M1)."""
        if name in self.locations:
            return Outcome(3, "M1")
        self.locations[name] = Location(name, role)
        return DONE

    def connect(self, src: str, dst: str, *, both: bool, history: str, filter_expr: str | None) -> Outcome:
        """`topology add SRC DST [--both] [--history MODE] [--filter EXPR]`."""
        if any(self.locations[n].state == RETIRED for n in (src, dst)):
            return Outcome(3, "RET1")
        pairs = [(src, dst), (dst, src)] if both else [(src, dst)]
        if any(p in self.connections and self.connections[p].current for p in pairs):
            return Outcome(2, "connection-exists")
        if any(self.locations[s].role == READ_ONLY for s, _ in pairs):
            return Outcome(3, "ROLE1")
        edges = self.edges | set(pairs)
        filtered = self.filtered | (set(pairs) if filter_expr else set())
        filters = self.current_filters() | dict.fromkeys(pairs, filter_expr)
        refusal = self.violation(edges, filtered, filters, self.groups)  # F2: a reconnect is checked too
        if refusal:
            return Outcome(3, refusal)
        if history != "complete" and any(self.locations[t].state == RECOVERING for _, t in pairs):
            # DR0, DR1: an ADD3 merge against the CVV a recovery reset would give up what A held before the loss.
            return Outcome(4, "recovering")
        self.edges, self.filtered = edges, filtered
        self._add_connections(pairs, history, filter_expr)
        return DONE

    def _add_connections(self, pairs: list[tuple[str, str]], history: str, filter_expr: str | None) -> None:
        for s, t in pairs:  # ADD3: --both applies MODE to both directions, in this order
            source, target = self.locations[s], self.locations[t]
            if history == "current":
                baseline = self._foreign(source.dvv, target.cvv)
                # "Y receives every event X still stores": an entry X accepted (DR5) over events X still
                # stores is held back at Y as at X, counted once Y's CVV reaches them.
                self._merge_held(target, baseline, source, source.deletions_known())
            elif history == "none":
                self._merge_baseline(target, self._foreign(source.cvv, target.cvv))
            # ADD4: a reconnect is a new connection at progress 0; ADD1 decides whether it starts now.
            self.filters_ever.setdefault((s, t), set()).add(filter_expr)
            self.connections[(s, t)] = Connection(
                s,
                t,
                ACTIVE if self._starts(source, target) else PENDING,
                filter_expr,
                (s, t) in self.filtered,
                history,
            )

    @staticmethod
    def _foreign(vector: VT, of: VT) -> VT:
        """ADD3: the entries of `vector` whose keys do not occur in `of`."""
        return {k: v for k, v in vector.items() if of.get(k, 0) == 0 and v > 0}

    @staticmethod
    def _starts(source: Location, target: Location) -> bool:
        """ADD1: DVV-X ≤ CVV-Y, where an entry Y holds back counts for a source that holds the same accepted
        entry over at least the events Y waits for (it delivers them), and for no other source."""
        counted, known = target.counted(target.cvv), source.deletions_known()
        supplied = {
            o: b
            for o, b in target.baseline.items()
            if target.state != RECOVERING
            and counted.get(o, 0) < b
            and o not in known
            and source.dvv.get(o, 0) <= b
            and source.baseline_stored.get(o, 0) >= target.baseline_stored.get(o, 0)
        }
        return vt_leq(source.dvv, vt_join(target.cvv, supplied))

    @staticmethod
    def _merge_held(target: Location, baseline: VT, source: Location, known: VT) -> None:
        for origin in baseline:
            if origin not in known and source.baseline_stored.get(origin, 0):
                target.baseline_stored[origin] = max(
                    target.baseline_stored.get(origin, 0), source.baseline_stored[origin]
                )
        target.baseline = vt_join(target.baseline, baseline)
        target.dvv = vt_join(target.dvv, baseline)
        target.cvv = target.counted(target.cvv)

    @staticmethod
    def _merge_baseline(target: Location, baseline: VT) -> None:
        target.baseline = vt_join(target.baseline, baseline)
        target.cvv = vt_join(target.cvv, baseline)
        target.dvv = vt_join(target.dvv, baseline)

    def remove(self, src: str, dst: str, *, both: bool) -> Outcome:
        """`topology remove SRC DST [--both]`: the edge stays in H (H2)."""
        pairs = [(src, dst), (dst, src)] if both else [(src, dst)]
        present = [p for p in pairs if p in self.connections and self.connections[p].current]
        if not present:
            return Outcome(2, "unknown-connection")
        for p in present:
            self.connections[p].state = REMOVED
        return DONE

    def set_filter(self, src: str, dst: str, filter_expr: str | None) -> Outcome:
        """`topology filter SRC DST --set EXPR | --clear`; SRC or DST may name a group (cli.md, RFC2).

        Every current connection between the two sides changes in one step; setting is checked by F1, RFC1 and
        RFC2 (F2), clearing only by RFC2 (it cannot create a cycle).
        """
        sources, targets = self._side(src), self._side(dst)
        pairs = [p for p in self.current() if p[0] in sources and p[1] in targets]
        if not pairs:
            return Outcome(2, "unknown-connection")
        filtered = self.filtered | (set(pairs) if filter_expr is not None else set())
        filters = self.current_filters() | dict.fromkeys(pairs, filter_expr)
        refusal = self.violation(
            self.edges, filtered, filters, self.groups, placement=filter_expr is not None
        )
        if refusal:
            return Outcome(3, refusal)
        self.filtered = filtered
        for p in pairs:
            self.filters_ever.setdefault(p, set()).add(filter_expr)
            conn = self.connections[p]
            conn.filter = filter_expr
            conn.ever_filtered = conn.ever_filtered or filter_expr is not None
        return DONE

    def _side(self, name: str) -> set[str]:
        """A `topology filter` endpoint: a location, or a declared group standing for its live members."""
        if name in self.groups:
            return self.groups[name] - {n for n, x in self.locations.items() if x.state == RETIRED}
        return {name}

    # ---- groups and fail-over (RFC1, RFC2, FO1) -------------------------------------------------------

    def declare_group(self, name: str, members: list[str]) -> Outcome:
        """`topology group NAME MEMBER...`: declare or change a group, checked like every change (F2)."""
        wanted = set(members)
        if any(self.locations[m].state == RETIRED for m in wanted):
            return Outcome(3, "RET1")
        if len(wanted) < 2:
            return Outcome(2, "bad-group")
        if any(g != name and wanted & others for g, others in self.groups.items()):
            return Outcome(2, "bad-group")  # a location is a member of one group
        groups = {**self.groups, name: wanted}
        refusal = self.violation(self.edges, self.filtered, self.current_filters(), groups)
        if refusal:
            return Outcome(3, refusal)
        self.groups = groups
        return DONE

    def remove_group(self, name: str) -> Outcome:
        """`topology group NAME --remove`: refused while redundant filtered connections still need it (F2)."""
        if name not in self.groups:
            return Outcome(2, "unknown-group")
        groups = {g: m for g, m in self.groups.items() if g != name}
        refusal = self.violation(self.edges, self.filtered, self.current_filters(), groups)
        if refusal:
            return Outcome(3, refusal)
        self.groups = groups
        return DONE

    def _failover_refusal(self, name: str, old: str, new: str) -> Outcome | None:
        """FO1's preconditions: live names, OLD and NEW in one group, D outside it and linked to OLD."""
        if any(self.locations[n].state == RETIRED for n in (name, old, new)):
            return Outcome(3, "RET1")
        if len({name, old, new}) < 3:
            return Outcome(3, "FO1")
        group = next((g for g, m in sorted(self.groups.items()) if old in m and new in m), None)
        if group is None or name in self.groups[group]:
            return Outcome(3, "FO1")  # not one group's redundant members, or D is inside the group
        if not any(set(p) == {name, old} for p in self.current()):
            return Outcome(2, "unknown-connection")
        return None

    def failover(self, name: str, old: str, new: str) -> Outcome:
        """`topology failover D --from A --to B` (FO1): D's connections with A become the same ones with B."""
        refused = self._failover_refusal(name, old, new)
        if refused:
            return refused
        moved = [p for p in self.current() if set(p) == {name, old}]
        swap = {p: (new if p[0] == old else p[0], new if p[1] == old else p[1]) for p in moved}
        if any(self.locations[s].role == READ_ONLY for s, _ in swap.values()):
            return Outcome(3, "ROLE1")
        added = [p for p in moved if swap[p] not in self.current()]  # already redundant: it stays
        edges = self.edges | {swap[p] for p in added}
        filtered = self.filtered | {swap[p] for p in added if self.connections[p].filter is not None}
        filters = {k: v for k, v in self.current_filters().items() if k not in moved}
        filters |= {swap[p]: self.connections[p].filter for p in added}
        refusal = self.violation(edges, filtered, filters, self.groups)
        if refusal:
            return Outcome(3, refusal)
        self.edges, self.filtered = edges, filtered
        old_filters = {p: self.connections[p].filter for p in moved}
        for p in moved:
            self.connections[p].state = REMOVED
        for p in added:  # the identical filter; a new connection, so ADD1 decides whether it starts now
            self._add_connections([swap[p]], "complete", old_filters[p])
        return DONE

    def retire(self, name: str, *, prune: bool) -> Outcome:
        """`location retire NAME [--prune-clock]` (RET1, RET3: both checked before anything is recorded)."""
        loc = self.locations[name]
        if loc.state != RETIRED and any(name in p for p in self.current()):
            return Outcome(3, "RET1")
        # RET1: retired, it never connects again; events of any origin it stores that no other live location stores
        # would be stranded (those it deleted physically are gone already; a CVV is no copy).
        stranded = any(not self.stored_elsewhere(name, e) for e in loc.events)
        if loc.state != RETIRED and stranded:
            return Outcome(3, "RET1")
        if prune:
            needed = max(max(x.cvv.get(name, 0), x.dvv.get(name, 0)) for x in self.locations.values())
            lagging = [n for n in self.live() if n != name and self.locations[n].cvv.get(name, 0) < needed]
            if lagging:
                return Outcome(3, "RET3")
        loc.state = RETIRED
        if prune:
            # RET2: the id leaves every stored vt; CVVs and DVVs keep their entry; emission leaves it out.
            for x in self.locations.values():
                for e in x.events:
                    e.vt.pop(name, None)
            self.pruned.add(name)
        return DONE

    # ---- events (EM1, EM2, ROLE1) --------------------------------------------------------------------

    def append(self, name: str, keys: list[str]) -> Outcome:
        """`log append LOC --event ...`: EM1 per event, in order."""
        loc = self.locations[name]
        if loc.state == RECOVERING:
            return Outcome(4, "recovering")  # DR0: nothing is appended to A while it recovers
        if loc.state == RETIRED:
            return Outcome(3, "RET1")
        if loc.role != READ_WRITE:
            return Outcome(3, "ROLE1")
        for key in keys:
            loc.seq += 1
            base = {k: v for k, v in loc.cvv.items() if k not in self.pruned}
            event = Event(loc.seq, name, loc.seq, vt_join(base, {name: loc.seq}), key)
            loc.events.append(event)
            loc.cvv = vt_join(loc.cvv, event.stamp)
        return DONE

    # ---- replication (REP1–REP3, CF1, ADD1, DEL4) ----------------------------------------------------

    def replicate_all(self) -> Outcome:
        """`replicate`: every current connection, round after round until nothing changes; then DEL4.

        Incomplete (exit 5) when a pass waits for its target's recovery to end (DR0)."""
        changed = True
        while changed:
            changed = False
            for s, t in self.current():
                changed = self._pass(s, t) or changed
        self._retry_deletions()
        waiting = any(self.locations[t].state == RECOVERING for _, t in self.current())
        return Outcome(5) if waiting else DONE

    def replicate_pair(self, src: str, dst: str) -> Outcome:
        """`replicate SRC DST`: one pass; then every pending deletion is retried (DEL4)."""
        conn = self.connections.get((src, dst))
        if conn is None or not conn.current:
            return Outcome(2, "unknown-connection")
        if self.locations[dst].state == RECOVERING:
            return Outcome(4, "recovering")  # DR0: nothing is written to A while it recovers
        self._pass(src, dst)
        self._retry_deletions()
        return DONE

    def _pass(
        self,
        src: str,
        dst: str,
        *,
        recovery: bool = False,
        recovery_filter: tuple[str, ...] | None = None,
    ) -> bool:
        """One pass X→Y (REP1, REP2); a recovery pass (DR4) runs whatever the state and leaves it active."""
        conn = self.connections[(src, dst)]
        source, target = self.locations[src], self.locations[dst]
        activated = False
        if recovery:
            activated = conn.state != ACTIVE
            conn.state = ACTIVE
        elif conn.state == BLOCKED or target.state == RECOVERING:
            return False  # DR5: only recovery may use it; DR0: nothing is written to A while it recovers
        elif conn.state == PENDING:
            if not self._starts(source, target):  # ADD1
                return False
            conn.state, activated = ACTIVE, True
        filter_expr: str | tuple[str, ...] | None = recovery_filter if recovery else conn.filter
        projection = self.admission(src, dst)  # RFC2; event recovery is ordinary replication too (DR4)
        start, base, last, written = conn.progress, target.seq, conn.progress, 0
        for event in [e for e in source.events if e.seq > start]:
            if covers(target.cvv, event):  # REP1 (1), CF1 through the identity (RET4)
                last = event.seq
                continue
            if not passes(filter_expr, event, or_origin=dst if recovery and filter_expr else None):
                last = event.seq
                continue  # REP1 (2)
            if not vt_leq({k: v for k, v in event.vt.items() if k in projection}, target.cvv):
                self.blocks += 1
                break  # REP1 (3): blocked; progress stays before it (REP2)
            last = event.seq
            copy = Event(
                base + (event.seq - start), event.origin, event.origin_time, dict(event.vt), event.key
            )
            target.events.append(copy)
            target.seq = copy.seq
            target.cvv = vt_join(target.cvv, event.stamp)  # EM2 with RET4's identity
            written += 1
        if written and not recovery:  # a held-back entry counts once its events are back (ADD3, DR1)
            target.cvv = target.counted(target.cvv)
        advanced = last > conn.progress
        conn.progress = max(conn.progress, last)  # REP2: the scan end, over filtered events too
        return written > 0 or activated or advanced

    # ---- deletion (DEL1–DEL4, ADD2) ------------------------------------------------------------------

    def delete(self, name: str, upto: int, *, logical: bool) -> Outcome:
        """`delete LOC --upto N [--logical]`: logical at once; physical as far as DEL3 allows (DEL4)."""
        loc = self.locations[name]
        bound = min(upto, loc.seq)
        loc.logical_deleted_upto = max(loc.logical_deleted_upto, bound)
        if logical:
            return DONE
        # DEL4: the pending target only grows; a smaller request keeps the larger pending one.
        self._physical(loc, max(bound, loc.pending_upto or 0))
        return Outcome(5) if loc.pending_upto is not None else DONE

    def _physical(self, loc: Location, target_upto: int) -> None:
        targets = [
            c
            for c in self.connections.values()
            if c.source == loc.name and c.current and self.locations[c.target].state != RETIRED
        ]
        cut = target_upto
        for event in loc.events:
            if not loc.deleted_upto < event.seq <= target_upto:
                continue
            if any(
                not (covers(self.locations[c.target].cvv, event) or c.progress >= event.seq) for c in targets
            ):
                cut = event.seq - 1  # DEL3 fails for this event: the prefix stops before it
                break
        cut = max(cut, loc.deleted_upto)
        gone = [e for e in loc.events if e.seq <= cut]
        loc.events = [e for e in loc.events if e.seq > cut]
        dropped = vt_join({}, *(e.stamp for e in gone))
        loc.dvv = vt_join(loc.dvv, dropped)  # DEL2, each ⊔ its identity (RET4)
        # An accepted entry whose stored events are all deleted stores nothing under it any more.
        loc.baseline_stored = {o: t for o, t in loc.baseline_stored.items() if dropped.get(o, 0) < t}
        loc.deleted_upto = max(loc.deleted_upto, cut)
        loc.logical_deleted_upto = max(loc.logical_deleted_upto, cut)
        loc.pending_upto = max(loc.pending_upto or 0, target_upto) if cut < target_upto else None

    def _retry_deletions(self) -> None:
        for name in sorted(self.locations):
            loc = self.locations[name]
            if loc.pending_upto is not None and loc.state != RECOVERING:  # DR0: it waits for the end
                self._physical(loc, loc.pending_upto)

    # ---- disasters and recovery (DR0–DR5) ------------------------------------------------------------

    def stored_elsewhere(self, name: str, event: Event) -> bool:
        """DR0, RET1: some other live location stores the event (its identity, M3)."""
        return any(
            (e.origin, e.origin_time) == (event.origin, event.origin_time)
            for x in self.locations.values()
            if x.name != name and x.state != RETIRED
            for e in x.events
        )

    def drill(self, name: str, from_seq: int) -> Outcome:
        """`drill disaster LOC --from S`: the stored suffix from S on is gone; the catalog is left as it was."""
        loc = self.locations[name]
        loc.events = [e for e in loc.events if e.seq < from_seq]
        return DONE

    def recover(
        self, name: str, *, stored_before: list[Event], accept_loss: bool, recorded_floor: bool = True
    ) -> Outcome:
        """`recover location NAME [--accept-loss]` after a drill; `stored_before` is the log before the drill.

        `recorded_floor=False` leaves the seq recorded before the loss out of DR1's floor, as the wording before
        issue 20 did; the test calls it only on a copy, to tell which disasters that known difference reaches.
        """
        loc = self.locations[name]
        survivors = {(e.origin, e.origin_time) for e in loc.events}
        lost = [e for e in stored_before if (e.origin, e.origin_time) not in survivors]
        blocked_into = any(c.target == name and c.state == BLOCKED for c in self.connections.values())
        if not lost and not blocked_into and loc.state != RECOVERING:
            return DONE  # nothing to recover
        if not lost:
            return self._finish_recovery(loc, loc.seq, accept_loss)
        if not accept_loss and self._loses_what_a_backup_holds(
            name, lambda trial: trial.recover(name, stored_before=stored_before, accept_loss=True), None
        ):
            return Outcome(3, "BK3")
        last_survivor = max([loc.deleted_upto, *(e.seq for e in loc.events)])
        return self._recover_from(loc, last_survivor, accept_loss, recorded_floor=recorded_floor)

    def _loses_what_a_backup_holds(
        self, name: str, recovery: Callable[[ReferenceModel], object], restoring: str | None
    ) -> bool:
        """BK3: would the recovery (run on a copy with DR4's rounds on paper: no loss accepted, `planning`)
        leave out of A's CVV before it something no refused neighbour holds and A's newest backup, not the one
        restored, holds?"""
        newest = self.latest_backup(name)
        if newest is None or newest.id == restoring:
            return False
        trial = copy.deepcopy(self)
        trial.planning = True
        before = dict(self.locations[name].cvv)
        recovery(trial)
        reached = trial.locations[name].cvv
        for origin, want in before.items():
            # What a refused neighbour holds may come back by a later recovery or replication (DR5): the
            # origin times above its DVV (it deleted the rest) up to its CVV; but not A's own events at a
            # neighbour DR3 refuses: no later recovery reads it, and A's next append raises CVV-A[A] past
            # them (EM1), so replication from it skips them for good (CF1).
            held = [(0, reached.get(origin, 0))] + [
                (trial.locations[n].dvv.get(origin, 0), trial.locations[n].cvv.get(origin, 0))
                for n in trial.refused_last
                if origin != name or n not in trial.dr3_refused_last
            ]
            first_gap = next(
                (t for t in range(1, want + 1) if not any(lo < t <= hi for lo, hi in held)), None
            )
            if first_gap is not None and first_gap <= newest.cvv.get(origin, 0):
                return True
        return False

    def _recover_from(
        self, loc: Location, last_survivor: int, accept_loss: bool, *, recorded_floor: bool
    ) -> Outcome:
        """DR1, DR2 on the surviving state (a drill's survivors or a backup, BK2), then event recovery."""
        name = loc.name
        # DR1: CVV from the survivors ⊔ DVV ⊔ the baselines (I3), an accepted entry only once what A stored
        # under it is covered again; CVV-A[A] is not raised here.
        loc.cvv = loc.counted(vt_join(loc.deletions_known(), *(e.stamp for e in loc.events)))
        floor = max(
            [loc.seq if recorded_floor else 0, loc.cvv.get(name, 0)]
            + [x.cvv.get(name, 0) for x in self.locations.values() if x.name != name]
        )
        # DR2: every reader of A, current or removed, back to the last survivor; A's sources back to 0.
        for conn in self.connections.values():
            if conn.source == name:
                conn.progress = min(conn.progress, last_survivor)
            elif conn.target == name:
                conn.progress = 0
        # DR1, M4: numbering goes on after T, so event recovery assigns no seq A assigned before the loss
        # (a deletion requested before it never reaches an event written after it).
        loc.seq = max(last_survivor, floor)
        return self._finish_recovery(loc, floor, accept_loss)

    def _finish_recovery(self, loc: Location, floor: int, accept_loss: bool) -> Outcome:
        """DR3–DR5: event recovery in rounds, then the neighbours that could not serve are blocked, or their
        loss accepted round by round (`_event_recovery`)."""
        name = loc.name
        refused = self._event_recovery(name, accept_loss)
        for source in refused:  # DR5
            self.connections[(source, name)].state = ACTIVE if accept_loss else BLOCKED
        loc.seq = max(loc.seq, floor)  # DR1: A never assigns again a seq or origin time it had assigned
        # DR0, DR5: while a neighbour's events are still missing (exit 5, cli.md), A is still recovering.
        loc.state = RECOVERING if refused and not accept_loss else ACTIVE
        if loc.state == ACTIVE:
            loc.cvv = vt_join(loc.cvv, loc.baseline, loc.dvv)  # DR1: complete, every entry counts again
        return Outcome(5) if refused and not accept_loss else DONE

    # ---- backups (BK1, BK2) ------------------------------------------------------------------------

    def backup_targets(self, names: list[str]) -> list[str]:
        """`backup create [LOC...]`: the locations it backs up, in order (default every active one, BK1)."""
        return list(dict.fromkeys(names)) or [n for n in self.live() if self.locations[n].state == ACTIVE]

    def backup(self, name: str, backup_id: str) -> None:
        """BK1: record a backup of `name` under the id the CLI reported; taking it changes nothing at `name`."""
        loc = self.locations[name]
        self.backups.append(
            Backup(
                backup_id,
                name,
                tuple(copy.deepcopy(loc.events)),
                loc.seq,
                dict(loc.cvv),
                dict(loc.dvv),
                loc.deleted_upto,
                loc.logical_deleted_upto,
            )
        )

    def latest_backup(self, name: str) -> Backup | None:
        """BK3's `newest backup` of a location, the one `--from-backup latest` names."""
        return next((b for b in reversed(self.backups) if b.location == name), None)

    def restore(self, name: str, backup_id: str, *, accept_loss: bool) -> Outcome:
        """`recover location NAME --from-backup ID` (BK2): a DR0 whose surviving state is the backup."""
        backup = next(b for b in self.backups if b.id == backup_id)
        if backup.location != name:
            return Outcome(3, "BK2")  # a backup of another location is refused
        loc = self.locations[name]
        last_backed_up = max([backup.deleted_upto, *(e.seq for e in backup.events)])
        # DR0: an intact stored event the restore drops that no other live location stores (a CVV is no copy).
        cut = [e for e in loc.events if e.seq > last_backed_up]
        if not accept_loss and any(not self.stored_elsewhere(name, e) for e in cut):
            return Outcome(3, "DR0")  # discarding the only copy of a stored event needs consent
        if not accept_loss and self._loses_what_a_backup_holds(
            name, lambda trial: trial.restore(name, backup_id, accept_loss=True), backup_id
        ):
            return Outcome(3, "BK3")
        loc.events = copy.deepcopy(list(backup.events))
        # DVV-A keeps the baselines merged since the backup (ADD3, accepted losses): events A never stored.
        loc.dvv = vt_join(backup.dvv, {k: min(loc.dvv.get(k, 0), v) for k, v in loc.baseline.items()})
        loc.deleted_upto = backup.deleted_upto
        loc.logical_deleted_upto = max(loc.logical_deleted_upto, backup.logical_deleted_upto)
        last_survivor = max([backup.deleted_upto, *(e.seq for e in backup.events)])
        return self._recover_from(loc, last_survivor, accept_loss, recorded_floor=True)

    def _event_recovery(self, name: str, accept_loss: bool) -> list[str]:
        """DR3 (eligible sources), DR4 (rounds); returns the neighbours that could not serve (DR5), whose loss
        `accept_loss` accepts: what they deleted that A still lacks is merged into CVV-A, DVV-A (DR5)."""
        around = self.neighbours(name)
        terminal = len(around) == 1
        sources: list[tuple[str, tuple[str, ...] | None]] = []
        refused: list[str] = []
        for n in around:
            into, out = self.connections.get((n, name)), self.connections.get((name, n))
            if into is None or not into.current:
                continue
            filtered = (n, name) in self.filtered or (name, n) in self.filtered
            if out is not None and out.current and not filtered:
                sources.append((n, None))
            elif terminal:
                ever = self.filters_ever.get((n, name), set()) | {into.filter}
                sources.append((n, None if None in ever else tuple(sorted(f for f in ever if f is not None))))
            else:
                refused.append(n)
        dvvs = {n: dict(self.locations[n].dvv) for n, _ in sources + [(r, None) for r in refused]}
        waiting = list(sources)
        self._rounds(name, waiting, dvvs)
        self.refused_last = sorted(refused + [s for s, _ in waiting])
        self.dr3_refused_last = sorted(refused)
        if not accept_loss or self.planning:
            return self.refused_last
        target = self.locations[name]
        # DR5 accepted in DR4's order: the waiting source that gives up least first (ties by name), then the
        # rounds again, so no DVV is merged while a source still stores what it covers; the DR3-refused last.
        while waiting:
            least = min(waiting, key=lambda s: (self._gives_up(dvvs[s[0]], target.cvv), s[0]))
            self._accept(target, self._lacking(dvvs[least[0]], target.cvv))
            self._rounds(name, waiting, dvvs)
        for source in refused:
            self._accept(target, self._lacking(dvvs[source], target.cvv))
        return self.refused_last

    def _rounds(
        self, name: str, waiting: list[tuple[str, tuple[str, ...] | None]], dvvs: dict[str, VT]
    ) -> None:
        """DR4: round after round, every waiting source whose DVV ≤ CVV-A serves (and leaves `waiting`); before
        each round CVV-A counts the baseline entries whose stored events are back (DR1)."""
        target = self.locations[name]
        target.cvv = target.counted(target.cvv)
        while ready := [s for s in waiting if vt_leq(dvvs[s[0]], target.cvv)]:
            for source, filter_expr in ready:
                self._pass(source, name, recovery=True, recovery_filter=filter_expr)
                waiting.remove((source, filter_expr))
            target.cvv = target.counted(target.cvv)

    @staticmethod
    def _accept(target: Location, lacking: VT) -> None:
        """DR5 `--accept-loss`: into CVV-A, DVV-A and the baseline, with what A stored of each origin then."""
        for origin in lacking:
            target.baseline_stored[origin] = max(
                target.baseline_stored.get(origin, 0), target.cvv.get(origin, 0)
            )
        ReferenceModel._merge_baseline(target, lacking)

    @staticmethod
    def _gives_up(dvv: VT, cvv: VT) -> int:
        """How many origin times A lacks that merging `dvv` would cover (DR5)."""
        return sum(v - cvv.get(k, 0) for k, v in dvv.items() if v > cvv.get(k, 0))

    @staticmethod
    def _lacking(dvv: VT, cvv: VT) -> VT:
        """DR5: the entries of a neighbour's DVV that CVV-A lacks, all that accepting its loss merges."""
        return {k: v for k, v in dvv.items() if v > cvv.get(k, 0)}

    # ---- §9, on the model itself -----------------------------------------------------------------------

    def self_check(self) -> list[str]:
        """I1, I2, I4, I5, I7 on the model's own state: a broken model must not pass for a broken product."""
        problems = []
        for loc in self.locations.values():
            seqs = [e.seq for e in loc.events]
            if seqs != sorted(set(seqs)):
                problems.append(f"I7 at {loc.name}: {seqs}")
            ids = [(e.origin, e.origin_time) for e in loc.events]
            if len(ids) != len(set(ids)):
                problems.append(f"I2 at {loc.name}: {ids}")
            for i, e1 in enumerate(loc.events):
                for e2 in loc.events[:i]:
                    if vt_leq(e1.stamp, e2.stamp):
                        problems.append(f"I1 at {loc.name}: {e1.row()} before {e2.row()}")
            # A baseline entry held back (DR1, ADD3 `current`) is in DVV before CVV counts it.
            if not vt_leq(loc.dvv, vt_join(loc.cvv, loc.baseline)):
                problems.append(f"I4 at {loc.name}")
        for conn in self.connections.values():
            if conn.current and conn.progress > self.locations[conn.source].seq:
                problems.append(f"I5 on {conn.source}→{conn.target}")
        return problems
