"""Planning one replication pass X→Y (rules.md REP1–REP3, CF1, ADD1, DR5): pure.

The plan decides what can be decided from the catalog alone, so the common cases need no Spark job: nothing new
past the progress, or every new segment's vt LUB already ≤ CVV-Y (all would be skipped by CF1).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from replctl.core.model import Connection, ConnectionState, Location, LocationState, Segment
from replctl.core.startrule import start_rule
from replctl.core.vectortime import VectorTime, lub


class PassAction(StrEnum):
    """What a pass over one connection will do."""

    WAIT = "wait"  # pending: ADD1 does not hold yet
    BLOCKED = "blocked"  # DR5: only a recovery run may use it
    NOTHING_NEW = "nothing-new"
    ALL_KNOWN = "all-known"  # CF1 would skip every new event: advance progress without reading, count them
    COPY = "copy"  # fast bootstrap: the pass would write every stored event at the same seq
    RUN = "run"


@dataclass(frozen=True)
class PassPlan:
    """The decision for one connection, and what a run must read."""

    action: PassAction
    activate: bool  # a pending connection whose start rule now holds (ADD1)
    segments: tuple[Segment, ...]  # source segments that may hold seq > progress
    new_progress: int  # for ALL_KNOWN
    reason: str | None = None
    # For ALL_KNOWN: the events past the progress the pass examines and CF1 skips (REP1 (1)), from the segment
    # rows (a pass whose rows do not tell is planned RUN instead).
    skipped: int = 0


def plan_pass(
    source: Location,
    target: Location,
    conn: Connection,
    segments: list[Segment],
    *,
    recovery: bool = False,
    target_empty: bool = False,
    admission: bool = False,
    first_stored: Mapping[str, int] | None = None,
) -> PassPlan:
    """Decide one pass X→Y from the catalog snapshot.

    A recovery pass (DR4) has had its condition checked by the recovery planner, which is ADD1's own condition
    (DVV-N ≤ CVV-A); it runs over a blocked or pending connection and leaves it active. `first_stored`
    (per origin of DVV-X, the smallest origin time X stores) lets the file copy be taken (`copies_exactly`).
    """
    if recovery:
        return _read_plan(target, conn, segments, activate=conn.state is not ConnectionState.ACTIVE)
    if target.state is LocationState.RECOVERING:
        return PassPlan(
            PassAction.WAIT, False, (), conn.progress, f"waits: {target.name} is recovering (DR0)"
        )
    if conn.state is ConnectionState.BLOCKED:
        return PassPlan(PassAction.BLOCKED, False, (), conn.progress, conn.reason)
    activate = False
    if conn.state is ConnectionState.PENDING:
        verdict = start_rule(source, target)
        if not verdict.may_start:
            return PassPlan(PassAction.WAIT, False, (), conn.progress, verdict.reason)
        activate = True
    if target_empty and not admission and copies_exactly(source, target, conn, first_stored):
        fresh = tuple(s for s in segments if s.seq_hi > conn.progress)
        if fresh:
            return PassPlan(PassAction.COPY, activate, fresh, max(s.seq_hi for s in fresh))
    return _read_plan(target, conn, segments, activate=activate)


def admission_to_check(
    projection: Iterable[str], segments: Iterable[Segment], conn: Connection, target_cvv: VectorTime
) -> tuple[str, ...]:
    """RFC2's projection P as the pass must check it, or () when no event it reads can be blocked.

    REP1 (3) blocks an event e only if vt(e)|P ≰ CVV-Y. Every vt of a segment is ≤ the segment's LUB (VT4),
    and during a pass CVV-Y|P does not grow (`jobs._admission_block`), so when the LUB of the segments the
    pass reads, projected on P, is ≤ CVV-Y, no event can block and the check (one more scan of the source)
    is skipped. The test is exact over those segments: a LUB|P ≰ CVV-Y names a key whose largest entry,
    held by some event of them, is ahead of Y. Only events past the progress are read, so it may keep a
    check that turns out to block nothing, never drop one that would block.
    """
    keys = tuple(sorted(set(projection)))
    read = lub(s.vt_lub for s in segments if s.seq_hi > conn.progress)
    return keys if keys and admission_refuses(read, keys, target_cvv) else ()


def admission_refuses(vt: Mapping[str, int], projection: Iterable[str], target_cvv: VectorTime) -> bool:
    """RFC2 / REP1 (3): vt|P ≰ CVV-Y. Given a LUB, whether some vt under it may be blocked."""
    return not VectorTime(vt).project(projection) <= target_cvv


def copies_exactly(
    source: Location, target: Location, conn: Connection, first_stored: Mapping[str, int] | None
) -> bool:
    """Fast bootstrap: an ordinary first pass into an empty Y would write X's stored log unchanged.

    It holds when the connection is unfiltered and nothing was examined yet, CVV-Y equals DVV-X (an empty
    log that joined with `complete` history from a source that deleted nothing, or with `current` history),
    and DVV-X covers no stored event of X, so CF1 skips none and seq' = 0 + (seq − 0) keeps every seq:
    copying the files is then the same pass. A DVV made of deleted events alone covers no stored one (a
    stored event under a deleted one would precede it, EM3, and be deleted too), but an accepted loss (DR5)
    merges a neighbour's DVV, which may cover events X still stores. So it is asked through the identities
    (RET4): `first_stored` is, per origin, the smallest origin time X stores (events of one origin are a
    causal chain, stored in order); None, not read, takes no copy.
    """
    if not (conn.filter is None and conn.progress == 0 and target.seq == 0 and target.cvv == source.dvv):
        return False
    if first_stored is None:
        return False
    return all(first_stored.get(origin, time + 1) > time for origin, time in source.dvv.items())


def _read_plan(target: Location, conn: Connection, segments: list[Segment], *, activate: bool) -> PassPlan:
    fresh = tuple(s for s in segments if s.seq_hi > conn.progress)
    if not fresh:
        return PassPlan(PassAction.NOTHING_NEW, activate, (), conn.progress)
    skipped = events_past(fresh, conn.progress)
    # Without the count of what it skips, the pass is read: its report must say what it examined (REP1 (1)).
    if skipped is not None and lub(s.vt_lub for s in fresh) <= target.cvv:
        return PassPlan(PassAction.ALL_KNOWN, activate, fresh, max(s.seq_hi for s in fresh), skipped=skipped)
    return PassPlan(PassAction.RUN, activate, fresh, conn.progress)


def events_past(segments: Iterable[Segment], progress: int) -> int | None:
    """How many events of `segments` have seq > `progress`, from their catalog rows alone.

    A segment wholly past the progress counts its rows; one straddling it counts exactly only where its seqs
    leave no gap (rows = span), else through its files' recorded extents; None when neither tells.
    """
    total = 0
    for seg in segments:
        found = _rows_past(seg.count, seg.seq_lo, seg.seq_hi, progress)
        if found is None and seg.files:
            parts = [_rows_past(f.rows, f.seq_lo, f.seq_hi, progress) for f in seg.files]
            found = None if None in parts else sum(p or 0 for p in parts)
        if found is None:
            return None
        total += found
    return total


def _rows_past(rows: int | None, lo: int | None, hi: int | None, progress: int) -> int | None:
    """The rows of one segment or file with seq > `progress`, when its extent tells (None otherwise)."""
    if rows == 0:
        return 0
    if rows is None or lo is None or hi is None:
        return None
    if lo > progress:
        return rows
    if hi <= progress:
        return 0
    # Straddling: exact only when its seqs are dense (a replicated segment may skip seqs, M4).
    return hi - progress if rows == hi - lo + 1 else None
