"""A reference model of rules.md, written from the rules themselves, for the differential test of the CLI.

It imports nothing from replctl: vector time, the history projection, replication, deletion, recovery and
retirement are re-stated here in a few plain lines each, so that a mistake shared by the product's planners and
this model is unlikely. Each command method mutates the model the way rules.md says the command changes the
catalog and the logs, and returns the outcome the CLI must report: the exit code of cli.md and, for a refusal
or an invalid request, the error code (a rule id, or the short name cli.md uses).

Where rules.md leaves a choice to the implementation, the model takes the product's documented choice and says
so where it does: the seq a replicated event gets (`seq' = Y.seq + (seq − progress)`, which keeps X's order
and allows gaps, M4), the order of the passes of `replicate` (sorted connections, round after round until a
round changes nothing), and the history mode `none` merging into DVV as well as CVV (as `current` does, ADD3).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import networkx as nx

VT = dict[str, int]

READ_WRITE, HUB, READ_ONLY = "read-write", "hub", "read-only"
ACTIVE, PENDING, BLOCKED, REMOVED = "active", "pending", "blocked", "removed"
RETIRED = "retired"

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


def passes(filter_expr: str | None, event: Event, *, or_origin: str | None = None) -> bool:
    """A connection filter (None = unfiltered); DR3 ORs a terminal source's filter with `origin = A`."""
    if filter_expr is None:
        return True
    if or_origin is not None and event.origin == or_origin:
        return True
    match = _KEY_FILTER.match(filter_expr)
    assert match, f"the model reads only key filters, not {filter_expr!r}"
    return event.key == match.group(1)


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
        self.edges: set[tuple[str, str]] = set()  # H2: every connection ever added
        self.filtered: set[tuple[str, str]] = set()  # H3: every connection ever filtered
        self.pruned: set[str] = set()  # RET2: ids left out of every vt

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

    def f1_holds(self, edges: set[tuple[str, str]], filtered: set[tuple[str, str]]) -> bool:
        """F1/F2: every ever-filtered edge of U(H) is a bridge (no groups are declared by the test)."""
        graph = self.undirected(edges, filtered)
        bridges = {frozenset(b) for b in nx.bridges(graph)}
        return all(frozenset((s, t)) in bridges for s, t, d in graph.edges(data=True) if d["filtered"])

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
        if not self.f1_holds(edges, filtered):  # F2: a reconnect is checked too
            return Outcome(3, "F1")
        self.edges, self.filtered = edges, filtered
        for s, t in pairs:  # ADD3: --both applies MODE to both directions, in this order
            source, target = self.locations[s], self.locations[t]
            if history == "current":
                self._merge_baseline(target, self._foreign(source.dvv, target.cvv))
            elif history == "none":
                self._merge_baseline(target, self._foreign(source.cvv, target.cvv))
            # ADD4: a reconnect is a new connection at progress 0; ADD1 decides whether it starts now.
            self.connections[(s, t)] = Connection(
                s,
                t,
                ACTIVE if vt_leq(source.dvv, target.cvv) else PENDING,
                filter_expr,
                (s, t) in self.filtered,
                history,
            )
        return DONE

    @staticmethod
    def _foreign(vector: VT, of: VT) -> VT:
        """ADD3: the entries of `vector` whose keys do not occur in `of`."""
        return {k: v for k, v in vector.items() if of.get(k, 0) == 0 and v > 0}

    @staticmethod
    def _merge_baseline(target: Location, baseline: VT) -> None:
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
        """`topology filter SRC DST --set EXPR | --clear`; setting is checked by F1 (F2), clearing never."""
        conn = self.connections.get((src, dst))
        if conn is None or not conn.current:
            return Outcome(2, "unknown-connection")
        if filter_expr is not None:
            filtered = self.filtered | {(src, dst)}
            if not self.f1_holds(self.edges, filtered):
                return Outcome(3, "F1")
            self.filtered = filtered
            conn.ever_filtered = True
        conn.filter = filter_expr
        return DONE

    def retire(self, name: str, *, prune: bool) -> Outcome:
        """`location retire NAME [--prune-clock]` (RET1, RET3: both checked before anything is recorded)."""
        loc = self.locations[name]
        if loc.state != RETIRED and any(name in p for p in self.current()):
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
        """`replicate`: every current connection, round after round until nothing changes; then DEL4."""
        changed = True
        while changed:
            changed = False
            for s, t in self.current():
                changed = self._pass(s, t) or changed
        self._retry_deletions()
        return DONE

    def replicate_pair(self, src: str, dst: str) -> Outcome:
        """`replicate SRC DST`: one pass; then every pending deletion is retried (DEL4)."""
        conn = self.connections.get((src, dst))
        if conn is None or not conn.current:
            return Outcome(2, "unknown-connection")
        self._pass(src, dst)
        self._retry_deletions()
        return DONE

    def _pass(
        self, src: str, dst: str, *, recovery: bool = False, recovery_filter: str | None = None
    ) -> bool:
        """One pass X→Y (REP1, REP2); a recovery pass (DR4) runs whatever the state and leaves it active."""
        conn = self.connections[(src, dst)]
        source, target = self.locations[src], self.locations[dst]
        activated = False
        if recovery:
            activated = conn.state != ACTIVE
            conn.state = ACTIVE
        elif conn.state == BLOCKED:
            return False  # DR5: only recovery may use it
        elif conn.state == PENDING:
            if not vt_leq(source.dvv, target.cvv):  # ADD1
                return False
            conn.state, activated = ACTIVE, True
        filter_expr = recovery_filter if recovery else conn.filter
        start, base, last, written = conn.progress, target.seq, conn.progress, 0
        for event in [e for e in source.events if e.seq > start]:
            last = event.seq
            if covers(target.cvv, event):  # REP1 (1), CF1 through the identity (RET4)
                continue
            if not passes(filter_expr, event, or_origin=dst if recovery and filter_expr else None):
                continue  # REP1 (2)
            copy = Event(
                base + (event.seq - start), event.origin, event.origin_time, dict(event.vt), event.key
            )
            target.events.append(copy)
            target.seq = copy.seq
            target.cvv = vt_join(target.cvv, event.stamp)  # EM2 with RET4's identity
            written += 1
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
        loc.dvv = vt_join(loc.dvv, *(e.stamp for e in gone))  # DEL2, each ⊔ its identity (RET4)
        loc.deleted_upto = max(loc.deleted_upto, cut)
        loc.logical_deleted_upto = max(loc.logical_deleted_upto, cut)
        loc.pending_upto = max(loc.pending_upto or 0, target_upto) if cut < target_upto else None

    def _retry_deletions(self) -> None:
        for name in sorted(self.locations):
            loc = self.locations[name]
            if loc.pending_upto is not None:
                self._physical(loc, loc.pending_upto)

    # ---- disasters and recovery (DR0–DR5) ------------------------------------------------------------

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
        if not lost and not blocked_into:
            return DONE  # nothing to recover
        if lost:
            last_survivor = max([loc.deleted_upto, *(e.seq for e in loc.events)])
            # DR1: CVV from the survivors ⊔ DVV (the baselines are in DVV); CVV-A[A] is not raised here.
            loc.cvv = vt_join(loc.dvv, *(e.stamp for e in loc.events))
            floor = max(
                [loc.seq if recorded_floor else 0, loc.cvv.get(name, 0)]
                + [x.cvv.get(name, 0) for x in self.locations.values()]
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
        else:
            floor = loc.seq
        refused = self._event_recovery(name)
        for source in refused:  # DR5
            conn = self.connections[(source, name)]
            if accept_loss:
                self._merge_baseline(loc, dict(self.locations[source].dvv))
                conn.state = ACTIVE
            else:
                conn.state = BLOCKED
        loc.seq = max(loc.seq, floor)  # DR1: A never assigns again a seq or origin time it had assigned
        return Outcome(5) if refused and not accept_loss else DONE

    def _event_recovery(self, name: str) -> list[str]:
        """DR3 (eligible sources), DR4 (rounds); returns the neighbours that could not serve (DR5)."""
        around = self.neighbours(name)
        terminal = len(around) == 1
        sources: list[tuple[str, str | None]] = []
        refused: list[str] = []
        for n in around:
            into, out = self.connections.get((n, name)), self.connections.get((name, n))
            if into is None or not into.current:
                continue
            filtered = (n, name) in self.filtered or (name, n) in self.filtered
            if out is not None and out.current and not filtered:
                sources.append((n, None))
            elif terminal:
                sources.append((n, into.filter))
            else:
                refused.append(n)
        dvvs = {n: dict(self.locations[n].dvv) for n, _ in sources}
        waiting = list(sources)
        while waiting:
            ready = [s for s in waiting if vt_leq(dvvs[s[0]], self.locations[name].cvv)]
            if not ready:
                break
            for source, filter_expr in ready:
                self._pass(source, name, recovery=True, recovery_filter=filter_expr)
                waiting.remove((source, filter_expr))
        return sorted(refused + [s for s, _ in waiting])

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
            if not vt_leq(loc.dvv, loc.cvv):
                problems.append(f"I4 at {loc.name}")
        for conn in self.connections.values():
            if conn.current and conn.progress > self.locations[conn.source].seq:
                problems.append(f"I5 on {conn.source}→{conn.target}")
        return problems
