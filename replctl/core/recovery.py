"""Disaster recovery decisions (rules.md DR0–DR5): pure.

A disaster loses a suffix of one location's log. The service finds the suffix (DR0), asks `recovered_clock`
for the metadata (DR1), resets progress (DR2), picks the eligible sources (DR3) and runs event recovery in
rounds, each re-checking `DVV-N ≤ CVV-A` with `ready_sources` (DR4); neighbours that cannot serve are reported
with the reason and their connection into A stays blocked (DR5).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from replctl.core.model import Connection, Location, LocationState, Segment
from replctl.core.outcomes import AllOrNothing, Completion
from replctl.core.topology import TopologyState
from replctl.core.vectortime import VectorTime


@dataclass(frozen=True)
class FileRead:
    """What reading one data file of a catalogued segment gave: its rows and smallest and largest seq.

    `changed`: the store holds the file at its recorded size, but its bytes are not the ones written (their
    SHA-256 differs from the row's): it is not read, and counts as lost (no rows), as a missing file does."""

    rows: int
    seq_lo: int | None
    seq_hi: int | None
    changed: bool = False


def lost_from(segments: Iterable[Segment], read: Mapping[str, Mapping[str, FileRead]]) -> int | None:
    """DR0: the first seq not readable, from what reading each catalogued segment's files gave (`read`:
    segment path → file name → what it gave; a file or segment not there is absent). None = nothing lost.

    A segment whose row records what each file holds places a loss exactly: a missing file, or one that
    reads otherwise than recorded, is lost from the first seq it held, so a lost middle part file or segment
    is found at its gap, not after the last stored seq (issue 19). A file cut short keeps the prefix it
    still holds (a suffix loss, DR0). A row made before files were recorded is judged by its totals.
    """
    for seg in segments:
        first = _first_lost(seg, read.get(seg.path, {}))
        if first is not None:
            return first
    return None


def held_past(read: Mapping[str, Mapping[str, FileRead]], seq: int) -> bool:
    """Whether the store still holds rows at or past `seq` (`read` as `lost_from` takes it). A gap found in
    the middle of a log (a missing or damaged file with intact ones after it) counts as a suffix loss (DR0),
    so the recovery would discard those intact rows: they need the same consent as a declared loss below
    the gap (`services.loss.refuse_discard`). So does a file whose bytes changed (`FileRead.changed`): it
    counts as lost from its first seq, which is at or past `seq`, yet the store still holds it, and its rows
    may mostly read; a file that is missing, or no Parquet file any more, holds nothing to ask about."""
    return any(
        r.changed or (r.rows and r.seq_hi is not None and r.seq_hi >= seq)
        for f in read.values()
        for r in f.values()
    )


def rows_below(segments: Iterable[Segment], seq: int | None) -> list[Segment]:
    """The segments holding seqs below `seq` (all when None), each narrowed to the files whose rows record
    a first seq below it: what a recovery keeps (DR1), and all its dry run may read of them. A file past
    the cut (lost, or changed since it was written) is never opened, where Spark's statistics alone skipped
    it, and a rotted one failed the dry run (exit 6) that its run got through."""
    if seq is None:
        return list(segments)
    out = []
    for seg in segments:
        if seg.seq_lo >= seq:
            continue
        if seg.files is not None and all(f.seq_lo is not None for f in seg.files):
            out.append(
                replace(seg, files=tuple(f for f in seg.files if f.seq_lo is not None and f.seq_lo < seq))
            )
        else:
            out.append(seg)
    return out


def without_changed(
    segments: Iterable[Segment], read: Mapping[str, Mapping[str, FileRead]]
) -> tuple[list[Segment], list[tuple[int, int]]]:
    """`segments` narrowed to the files whose bytes are the ones written (a reader reads only the files a
    row names), and the seq ranges the others held, as their rows recorded them. A changed file is never
    read to decide what a recovery may discard: it may not decode (the read fails), or decode into other
    identities than it held; what it held is known only by its row's seq range."""
    kept, ranges = [], []
    for seg in segments:
        gone = {name for name, r in read.get(seg.path, {}).items() if r.changed}
        if not gone or seg.files is None:
            kept.append(seg)
            continue
        for f in seg.files:
            if f.name in gone:
                ranges.append((f.seq_lo if f.seq_lo is not None else seg.seq_lo, f.seq_hi or seg.seq_hi))
        kept.append(replace(seg, files=tuple(f for f in seg.files if f.name not in gone)))
    return kept, sorted(ranges)


def _first_lost(seg: Segment, files: Mapping[str, FileRead]) -> int | None:
    if seg.files is None or any(f.rows is None for f in seg.files):
        rows = sum(r.rows for r in files.values())
        highs = [r.seq_hi for r in files.values() if r.seq_hi is not None]
        if rows == 0 or not highs:
            return seg.seq_lo
        if max(highs) < seg.seq_hi:
            return max(highs) + 1
        # Rows are missing but the last one is there: where the gap is cannot be told without per-file
        # records, so the whole segment counts as lost rather than claimed.
        return seg.seq_lo if rows != seg.count else None
    candidates = []
    for f in seg.files:
        got = files.get(f.name)
        if got == FileRead(f.rows or 0, f.seq_lo, f.seq_hi) or f.seq_lo is None or f.seq_hi is None:
            continue
        if (
            got is not None
            and 0 < got.rows < (f.rows or 0)
            and got.seq_lo == f.seq_lo
            and got.seq_hi is not None
            and got.seq_hi < f.seq_hi
        ):
            candidates.append(got.seq_hi + 1)  # a file cut short keeps its prefix (a suffix loss, DR0)
        else:
            candidates.append(f.seq_lo)
    return min(candidates) if candidates else None


@dataclass(frozen=True)
class Split:
    """The catalogued segments around the first lost seq L."""

    keep: tuple[Segment, ...]  # wholly below L
    straddle: Segment | None  # holds survivors below L and lost events from L on
    lost: tuple[Segment, ...]  # wholly at or above L


def split_segments(segments: list[Segment], first_lost: int) -> Split:
    """Sort the segments into kept, straddling and lost ones."""
    keep = tuple(s for s in segments if s.seq_hi < first_lost)
    straddle = next((s for s in segments if s.seq_lo < first_lost <= s.seq_hi), None)
    lost = tuple(s for s in segments if s.seq_lo >= first_lost)
    return Split(keep, straddle, lost)


@dataclass(frozen=True)
class RecoveredClock:
    """DR1: CVV-A from what survived, and T, the time A's clock must not run below."""

    cvv: VectorTime
    floor: int


def recovered_clock(
    location: Location,
    survivors_lub: VectorTime,
    others_cvv: Iterable[VectorTime],
) -> RecoveredClock:
    """CVV-A = LUB(surviving vts) ⊔ DVV-A ⊔ merged baselines, an entry merged without events counted only
    once what A stored under it is back (`with_baseline`, `deletions_known`); T = max(own time survived,
    CVV-L[A] of every other location L, neighbour or not, and `location.seq`, the seq the catalog recorded
    for A) (DR1).

    The catalog outlives the store, so its seq bounds every seq and origin time A ever assigned: with T at
    least that, A never assigns one again (M3), and no deletion request, logical or pending, reaches an event
    written after the loss. CVV-A[A] is deliberately not raised to T here: event recovery would then drop
    A's own lost events.
    """
    cvv = with_baseline(location, survivors_lub | deletions_known(location))
    floor = max([cvv[location.name], location.seq, *(v[location.name] for v in others_cvv)])
    return RecoveredClock(cvv, floor)


def with_baseline(location: Location, cvv: VectorTime) -> VectorTime:
    """`cvv` ⊔ every baseline entry whose events `cvv` covers again (DR1): entry `o` counts once
    `cvv[o]` reaches `baseline_stored[o]`, what A stored of `o` when the entry was merged.

    An entry merged without events (an accepted loss, DR5; a parked clock entry, RET2) covers by its number
    alone the events of its origin A held at the time. After a later loss it must not stand for them: CF1
    would skip them at a neighbour that still stores them, a loss nobody named. Held back, the entry waits
    until event recovery has brought A's vector back to what A stored then; from there on it covers only the
    origin times given up, as it did when it was merged. An entry with nothing stored under it (ADD3's
    history modes; catalogs from before `baseline_stored` was recorded) counts at once, as always.
    """
    stored = location.baseline_stored
    return cvv.merge({o: b for o, b in location.baseline.to_dict().items() if cvv[o] >= stored[o]})


def deletions_known(location: Location) -> VectorTime:
    """The entries of DVV-A that DR1 takes as known at once after a loss.

    An accepted loss merges the neighbour's DVV into DVV-A too (DR5: other locations must see that A lacks
    those events, ADD1, DR4), so an entry of DVV-A no larger than a baseline entry with events stored under
    it may be nothing but that entry's number: it counts through `with_baseline`, once those events are
    back. What A really deleted below it may then come back from a neighbour: an event stored again, never
    one lost. An entry larger than the baseline's is A's own deletion, which covers every event of that
    origin A stored under the entry (they precede the deleted one that raised it: causal order, EM3).
    """
    baseline, stored = location.baseline, location.baseline_stored
    return VectorTime({o: d for o, d in location.dvv.to_dict().items() if d > baseline[o] or stored[o] == 0})


def counted_after_write(location: Location, cvv: VectorTime) -> VectorTime:
    """CVV-A after a pass wrote into A: `cvv` with every baseline entry held back whose events are back
    (`with_baseline`; ADD3 `current` holds an accepted entry of its source back, `core.startrule`). While A
    recovers, the recovery counts them round by round instead, its dry run alike."""
    return cvv if location.state is LocationState.RECOVERING else with_baseline(location, cvv)


def stored_after_deletion(location: Location, dropped: VectorTime) -> VectorTime:
    """`baseline_stored` once A physically deleted events whose vts' LUB ⊔ identities is `dropped` (DEL2).

    An entry under which A has deleted every event it stored stores nothing any more: a deleted event with
    `o: s` or more in its vt follows every event of `o` up to `s` that A stored, and A stored them before it
    (EM3), so the deleted prefix holds them all. The entry then counts at once after a loss (A deleted those
    events on purpose), and a location joining from A (ADD3 `current`) does not wait for them.
    """
    return VectorTime({o: s for o, s in location.baseline_stored.items() if dropped[o] < s})


def supplied_by(source: Location, target: Location) -> VectorTime:
    """The entries `target` holds back outside a recovery (ADD3 `current`) whose events `source` holds under
    the same accepted entry: DVV-X's entry there is no larger and may be only that entry's number
    (`deletions_known` leaves it out), over at least what `target` waits for (`baseline_stored`). ADD1 lets
    X→Y start over them (`core.startrule.start_rule`)."""
    if target.state is LocationState.RECOVERING:
        return VectorTime()
    known = deletions_known(source)
    return VectorTime(
        {
            o: b
            for o, b in held_back(target, target.cvv).items()
            if o not in known
            and source.dvv[o] <= b
            and source.baseline_stored[o] >= target.baseline_stored[o]
        }
    )


def held_back(location: Location, cvv: VectorTime) -> VectorTime:
    """The baseline entries `with_baseline` does not count yet over `cvv` (DR1): per origin, the entry."""
    counted = with_baseline(location, cvv)
    return VectorTime({o: b for o, b in location.baseline.to_dict().items() if counted[o] < b})


def counted_now(location: Location) -> tuple[VectorTime, VectorTime]:
    """DVV-A and the baseline as A's CVV counts them now, for I3/I4 (`log verify`) and a backup's manifest:
    whole, but without the entries held back (`with_baseline`, `deletions_known`), which its CVV does not
    count yet: while A recovers, or after ADD3 `current` took one from its source."""
    cvv = location.cvv
    if location.state is LocationState.RECOVERING:
        held = {o for o, b in location.baseline.to_dict().items() if cvv[o] < b}
        dvv = VectorTime({o: d for o, d in location.dvv.to_dict().items() if o not in held or d <= cvv[o]})
        return dvv, location.baseline.without(held)
    # ADD3 `current` holds an entry back outside a recovery too (`core.startrule.merge_baseline`), and A may
    # delete meanwhile: DVV-A's entry then also stands for what A deleted, none of it beyond CVV-A.
    held = set(held_back(location, cvv))
    if not held:
        return location.dvv, location.baseline
    dvv = VectorTime({o: min(d, cvv[o]) if o in held else d for o, d in location.dvv.to_dict().items()})
    return dvv, location.baseline.without(held)


def recovery_done(location: Location) -> Location:
    """A as a complete recovery leaves it: every baseline entry counts again (DR1). One still held back
    stands for events no source brought back; the recovery names them lost (`unrecovered`)."""
    return replace(location, cvv=location.cvv | location.baseline | location.dvv)


def unrecovered(location: Location, cvv: VectorTime) -> dict[str, tuple[int, int]]:
    """Per origin `(from, to)`: what A stored under a baseline entry still held back over `cvv`, which
    no source brought back (lost, DR5's report)."""
    held = held_back(location, cvv)
    stored = location.baseline_stored
    return {o: (cvv[o] + 1, stored[o]) for o in held if stored[o] > cvv[o]}


def merge_accepted(location: Location, merged: VectorTime) -> Location:
    """DR5 `--accept-loss`: `merged` (what of a neighbour's DVV A lacks) into CVV-A, DVV-A and the baseline,
    with what A stored of each origin then (`baseline_stored`): a later loss holds the entry back until
    those events are back (`with_baseline`, `deletions_known`)."""
    stored = location.baseline_stored.merge({o: location.cvv[o] for o in merged})
    return replace(
        location,
        cvv=location.cvv | merged,
        dvv=location.dvv | merged,
        baseline=location.baseline | merged,
        baseline_stored=stored,
    )


def own_not_held(location: Location) -> int:
    """The own origin times A did not hold on purpose before a loss (deleted, or given up): a loss of what
    is below is not reported again. DVV-A[A] unless it may be an accepted entry with own events stored
    under it (`deletions_known`): then none, and the report names every own event no one stores."""
    return deletions_known(location)[location.name]


def restored_dvv(location: Location, backup_dvv: VectorTime) -> VectorTime:
    """DVV-A after a restore (BK2): the backup's DVV, and the merged baselines the catalog's DVV took in.

    A baseline merged into A's clocks (ADD3's history modes, a loss accepted with `--accept-loss`) stands for
    events A never stored, so no backup of A holds them, whenever it was taken. Left out of DVV-A, a restore
    from an older backup would let A claim a history it does not have: a new connection out of A would start
    at once (ADD1) and hand its target a CVV that covers events it never received, which CF1 then skips
    for good. Physical deletions made after the backup do leave DVV-A: the backup's events are stored again.
    """
    merged = {key: min(location.dvv[key], value) for key, value in location.baseline.to_dict().items()}
    return backup_dvv.merge(merged)


def recovering(location: Location, clock: RecoveredClock, last_survivor: int) -> Location:
    """A while it recovers (DR1): CVV from what survived, and its seq counter at T already.

    Numbering continues after T, so the events that event recovery writes take no seq A assigned before the
    loss: a logical or pending deletion requested up to such a seq never reaches them (DR1, M4). Only CVV-A[A]
    must stay low until event recovery is done.
    """
    return replace(
        location,
        seq=max(last_survivor, clock.floor),
        cvv=clock.cvv,
        state=LocationState.RECOVERING,
    )


@dataclass(frozen=True)
class ProgressReset:
    """DR2: one connection whose progress falls back after A's loss."""

    connection: Connection
    to: int

    def to_json(self) -> dict[str, str | int]:
        """The `recover location --json` shape of `progress_resets`."""
        c = self.connection
        return {"source": c.source, "target": c.target, "from": c.progress, "to": self.to}


def progress_resets(connections: Iterable[Connection], name: str, last_survivor: int) -> list[ProgressReset]:
    """DR2 over every connection, current or removed: a reader N of A falls back to A's last surviving seq,
    and A re-reads every source S from 0 (safe by CF1).

    A removed connection is reset too, so that its recorded progress never points past A's log (I5).
    """
    resets = []
    for conn in connections:
        if conn.source == name and conn.progress > last_survivor:
            resets.append(ProgressReset(conn, last_survivor))
        elif conn.target == name and conn.progress > 0:
            resets.append(ProgressReset(conn, 0))
    return resets


@dataclass(frozen=True)
class Source:
    """An eligible recovery source N for A (DR3), with the filter its N→A pass uses."""

    name: str
    filter: str | None


@dataclass(frozen=True)
class Refusal:
    """A neighbour that cannot serve event recovery now, and why (DR3/DR4), for the report (DR5)."""

    source: str
    rule: str
    reason: str
    missing: dict[str, tuple[int, int]]


def neighbours(state: TopologyState, name: str) -> list[str]:
    """A's neighbours in U(H): every non-retired location joined to A by a history edge in either direction."""
    return sorted({t for s, t in state.edges if s == name} | {s for s, t in state.edges if t == name})


def history_filters(
    state: TopologyState, source: str, target: str, current: str | None
) -> tuple[str, ...] | None:
    """DR3's filter for a terminal location's source: every filter `source→target` ever had (sorted), or None
    when the connection was ever unfiltered (added without one, or cleared), in any incarnation (ADD4: a
    removed connection's filters are history). `current` is the connection's filter now.

    The current filter alone is not enough: an event the location received under an earlier filter and lost
    would not pass it, yet the location's CVV after recovery covers it through later events, so no pass would
    ever bring it again (CF1): a silent loss. Through every filter ever in force, each such event comes back.
    The location may also receive events an earlier filter passes that it never held (they came after that
    filter was changed): extra events, never a lost one.
    """
    ever = set(state.filters_ever.get((source, target), frozenset())) | {current}
    if None in ever:
        return None
    return tuple(sorted(f for f in ever if f is not None))


def any_filter(filters: Sequence[str], _location: str) -> str:
    """An `or_origin` for `eligible_sources` callers that ask only whether a source is filtered (BK3, the loss
    report): the expressions are joined, never evaluated."""
    return " OR ".join(filters)


def eligible_sources(
    state: TopologyState,
    name: str,
    connections: Mapping[tuple[str, str], Connection],
    or_origin: Callable[[Sequence[str], str], str],
) -> tuple[list[Source], list[Refusal]]:
    """DR3: both directions exist and were never filtered; or A is terminal and N→A is used with every filter it
    ever had (`history_filters`), OR-ed together and with `origin = A`; unfiltered if N→A ever was.

    `or_origin(filters, location)` is how the caller ORs filters with `origin = A` (it knows the filter language).
    """
    around = neighbours(state, name)
    terminal = len(around) == 1
    sources: list[Source] = []
    refused: list[Refusal] = []
    for n in around:
        into = connections.get((n, name))
        out = connections.get((name, n))
        if into is None or not into.current:
            continue  # nothing flows from N into A: no source, and nothing to block (DR5)
        filtered = (n, name) in state.ever_filtered or (name, n) in state.ever_filtered
        both = out is not None and out.current
        if both and not filtered:
            sources.append(Source(n, None))
        elif terminal:
            filters = history_filters(state, n, name, into.filter)
            sources.append(Source(n, or_origin(filters, name) if filters else None))
        else:
            why = "was filtered" if filtered else f"has no connection {name}→{n}"
            refused.append(
                Refusal(
                    n,
                    "DR3",
                    f"{name} is not terminal and the connection between it and {n} "
                    f"{why}; recovery over it would lose events (anomaly 3)",
                    {},
                )
            )
    return sources, refused


def ready_sources(pending: list[Source], dvvs: Mapping[str, VectorTime], cvv: VectorTime) -> list[Source]:
    """DR4: the sources whose DVV ≤ CVV-A now."""
    return [s for s in pending if dvvs[s.name] <= cvv]


@dataclass(frozen=True)
class PlannedRounds:
    """DR4's rounds on paper: the sources of each round, the vector A reaches, the sources never ready."""

    rounds: tuple[tuple[Source, ...], ...]
    vector: VectorTime
    pending: tuple[Source, ...]


def plan_rounds(
    sources: Iterable[Source],
    dvvs: Mapping[str, VectorTime],
    cvvs: Mapping[str, VectorTime],
    start: VectorTime,
    recovering: str,
    *,
    counted: Callable[[VectorTime], VectorTime] | None = None,
) -> PlannedRounds:
    """DR4 without reading an event: round after round, the sources whose DVV ≤ the vector, which then grows.

    Recovering from an unfiltered source N brings every event N stores that A lacks, and N deleted nothing A
    lacks (DVV-N ≤ CVV-A), so A's vector grows by CVV-N. What a filtered terminal source (DR3) brings depends
    on event contents: only its `origin = A` part is certain, so only CVV-N[A] is counted (a lower bound).
    `recover --dry-run` plans its rounds with this, and BK3 asks it whether a total loss would lose anything.
    `counted` adds, after each round, what A's vector then counts besides (`with_baseline`), as the run does.
    """
    vector, pending = start, list(sources)
    rounds: list[tuple[Source, ...]] = []
    while ready := ready_sources(pending, dvvs, vector):
        for source in ready:
            brought = cvvs[source.name]
            if source.filter is not None:
                brought = VectorTime({recovering: brought[recovering]})
            vector = vector | brought
            pending.remove(source)
        rounds.append(tuple(ready))
        if counted is not None:
            vector = counted(vector)
    return PlannedRounds(tuple(rounds), vector, tuple(pending))


def least_loss(pending: Iterable[Source], dvvs: Mapping[str, VectorTime], cvv: VectorTime) -> Source:
    """DR5 with `--accept-loss`: of the sources still failing DR4, the one whose DVV gives up the fewest origin
    times A lacks (ties: by name). Its loss is accepted first and DR4's rounds run again before the next: what
    it then brings may cover what another source deleted, and a DVV merged too early makes CF1 skip events a
    source still stores."""
    return min(
        pending, key=lambda s: (sum(d - c for d, c in dvvs[s.name].missing_from(cvv).values()), s.name)
    )


def still_missing(dvv: VectorTime, cvv: VectorTime) -> VectorTime:
    """The entries of a neighbour's DVV that CVV-A lacks: all that accepting its loss merges (DR5). An entry
    CVV-A already covers by real events stays out of DVV-A, which would otherwise claim deleted the events A
    stores and refuse A as a source to others for nothing (DR4)."""
    return VectorTime({k: deleted for k, (deleted, _have) in dvv.missing_from(cvv).items()})


def given_up(merged: VectorTime, cvv: VectorTime) -> dict[str, tuple[int, int]]:
    """What merging a neighbour's DVV into CVV-A gives up (DR5): per origin the origin times `(from, to)` A
    lacks that the merge covers, so no pass brings them again (CF1)."""
    return {k: (have + 1, deleted) for k, (deleted, have) in merged.missing_from(cvv).items()}


def dr4_refusal(source: str, dvv: VectorTime, cvv: VectorTime, recovering: str) -> Refusal:
    """DR5's report for a source that still fails DR4: the entries A lacks."""
    missing = dvv.missing_from(cvv)
    parts = ", ".join(
        f"{k}: deleted up to {d}, {recovering} has {c}" for k, (d, c) in sorted(missing.items())
    )
    return Refusal(source, "DR4", f"{source} has deleted events {recovering} lacks ({parts})", missing)


@dataclass(frozen=True)
class DrillOutcome(AllOrNothing):
    """`drill disaster`: the segments destroyed from `from_seq` on, and the one cut in place (if any)."""

    location: str
    from_seq: int
    dry_run: bool
    destroyed_segments: tuple[str, ...]
    truncated_segment: str | None

    def to_json(self) -> dict[str, Any]:
        """`drill disaster --json` (cli.md)."""
        return {
            "ok": True,
            "location": self.location,
            "from": self.from_seq,
            "dry_run": self.dry_run,
            "destroyed_segments": list(self.destroyed_segments),
            "truncated_segment": self.truncated_segment,
        }


@dataclass(frozen=True)
class RecoveryOutcome:
    """`recover location` (also `--from-backup`): what was lost, what each step did, what is lost for good.

    `clock` is `before`, `after` (None when only running tells, a dry run whose rounds write) and, once the
    metadata step ran, `floor` (DR1). `discarded` and `lost` map an origin to its `[lo, hi]` origin times;
    `given_up` does for each neighbour in `accepted` (empty when A lacked nothing it deleted).
    `backup` is the restored backup (BK2); `survivors_upto` the last seq the log kept, once the metadata step
    ran; `nothing_to_do` says the store held every catalogued event.
    """

    location: str
    lost_from: int | None
    dry_run: bool
    clock: dict[str, int | None]
    progress_resets: tuple[dict[str, Any], ...]
    rounds: tuple[dict[str, Any], ...]
    refused: tuple[dict[str, Any], ...]
    accepted: tuple[str, ...]
    given_up: dict[str, dict[str, list[int]]]  # per accepted neighbour, what merging its DVV gave up (DR5)
    cvv: dict[str, int]
    discarded: dict[str, list[int]]
    lost: dict[str, list[int] | None]  # None: unknown, what a filtered terminal source brings (DR3)
    lost_runs: dict[str, list[list[int]] | None]  # the same, exactly: the runs of origin times lost
    backup: str | None = None
    clock_pruned: tuple[str, ...] | None = (
        None  # a restore: the pruned ids taken out of the backup's vts (RET2)
    )
    survivors_upto: int | None = None
    nothing_to_do: bool = False

    @classmethod
    def of(cls, doc: Mapping[str, Any]) -> RecoveryOutcome:
        """The outcome of the report the recovery steps fill in (`services.recovery`, `services.restore`)."""
        unknown = set(doc) - _RECOVERY_KEYS
        if unknown:  # a key a step added but the outcome would drop: a bug, never a silent change of --json
            raise ValueError(f"recovery report keys without a place in RecoveryOutcome: {sorted(unknown)}")
        return cls(
            location=doc["location"],
            lost_from=doc["lost_from"],
            dry_run=doc["dry_run"],
            clock=dict(doc["clock"]),
            progress_resets=tuple(doc["progress_resets"]),
            rounds=tuple(doc["rounds"]),
            refused=tuple(doc["refused"]),
            accepted=tuple(doc["accepted"]),
            given_up=doc["given_up"],
            cvv=doc["cvv"],
            discarded=doc["discarded"],
            lost=doc["lost"],
            lost_runs=doc["lost_runs"],
            backup=doc.get("backup"),
            clock_pruned=None if doc.get("clock_pruned") is None else tuple(doc["clock_pruned"]),
            survivors_upto=doc.get("survivors_upto"),
            nothing_to_do=doc.get("nothing_to_do", False),
        )

    @property
    def completion(self) -> Completion:
        """Incomplete (exit 5) when a neighbour was refused as a source (DR5) and nothing was consented."""
        return Completion.INCOMPLETE if self.refused and not self.dry_run else Completion.COMPLETE

    def to_json(self) -> dict[str, Any]:
        """`recover location --json` (cli.md), keys in the order the runbooks have always seen."""
        doc: dict[str, Any] = {"ok": True, "location": self.location}
        if self.backup is not None:
            doc["backup"] = self.backup
        doc.update(
            lost_from=self.lost_from,
            dry_run=self.dry_run,
            clock=self.clock,
            progress_resets=list(self.progress_resets),
            rounds=list(self.rounds),
            refused=list(self.refused),
            accepted=list(self.accepted),
            given_up=self.given_up,
            cvv=self.cvv,
            discarded=self.discarded,
            lost=self.lost,
            lost_runs=self.lost_runs,
        )
        if self.clock_pruned is not None:
            doc["clock_pruned"] = list(self.clock_pruned)
        if self.nothing_to_do:
            doc["nothing_to_do"] = True
        if self.survivors_upto is not None:
            doc["survivors_upto"] = self.survivors_upto
        return doc


_RECOVERY_KEYS = frozenset(RecoveryOutcome.__dataclass_fields__)
