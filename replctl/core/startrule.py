"""New connections: the start rule (ADD1), the history modes (ADD3) and reconnects (ADD4).

Decision on ADD3 "none": the foreign entries of CVV-X go into DVV-Y as well as CVV-Y. Y will never hold those
events, which is exactly what a DVV says ("not available from me"), so a later joiner that reads from Y waits
for them from elsewhere (ADD1) instead of silently missing them. For "current" the rules say so explicitly.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from replctl.core.model import Connection, ConnectionState, HistoryMode, Location
from replctl.core.recovery import deletions_known, supplied_by, with_baseline
from replctl.core.vectortime import EMPTY, VectorTime


def history_baseline(mode: HistoryMode, source: Location, target: Location) -> VectorTime:
    """ADD3: the vector Y merges before replication starts (foreign = keys absent from CVV-Y)."""
    if mode is HistoryMode.CURRENT:
        return source.dvv.foreign_to(target.cvv)
    if mode is HistoryMode.NONE:
        return source.cvv.foreign_to(target.cvv)
    return EMPTY


def history_stored(mode: HistoryMode, source: Location, baseline: VectorTime) -> VectorTime:
    """ADD3 `current`: per origin of `baseline`, what X stores under its entry, for Y to hold the entry back.

    "Y receives every event X still stores." An entry of DVV-X that an accepted loss merged (DR5) may cover by
    its number alone events X still stores (`baseline_stored`; `core.recovery.deletions_known` leaves such an
    entry out). Merged into CVV-Y at once, CF1 would skip those events on X→Y, and Y would never hold them.
    Y takes the entry as X keeps it: counted once Y's CVV reaches what X stored under it."""
    if mode is not HistoryMode.CURRENT:
        return EMPTY
    known = deletions_known(source)
    return VectorTime(
        {o: source.baseline_stored[o] for o in baseline if o not in known and source.baseline_stored[o]}
    )


def merge_baseline(target: Location, baseline: VectorTime, stored: VectorTime = EMPTY) -> Location:
    """Y after merging a baseline into DVV and the recorded baselines (I3 counts them) and into CVV, an entry
    with events stored under it at X (`stored`, `history_stored`) only once Y's CVV reaches them
    (`core.recovery.with_baseline`)."""
    if not baseline:
        return target
    merged = replace(
        target,
        dvv=target.dvv | baseline,
        baseline=target.baseline | baseline,
        baseline_stored=target.baseline_stored.merge(stored),
    )
    return replace(merged, cvv=with_baseline(merged, target.cvv))


@dataclass(frozen=True)
class StartVerdict:
    """Whether a pending connection X→Y may start, and if not, what Y still lacks."""

    may_start: bool
    missing: dict[str, tuple[int, int]]

    @property
    def reason(self) -> str | None:
        """Operator text for `status` and `replicate` (why it waits)."""
        if self.may_start:
            return None
        parts = ", ".join(
            f"{k}: deleted up to {d}, target has {c}" for k, (d, c) in sorted(self.missing.items())
        )
        return f"waits [ADD1]: the source deleted events the target lacks ({parts})"


def start_rule(source: Location, target: Location) -> StartVerdict:
    """ADD1: replication over a new connection X→Y starts only once DVV-X ≤ CVV-Y.

    An entry Y holds back (`merge_baseline`) counts for a source that holds the same accepted entry over at
    least the events Y waits for (`core.recovery.supplied_by`): that source delivers them. For any other
    source it does not: a source that deleted some of them (DEL2) would raise CVV-Y past them with later
    events, and the entry would then count while Y lacks events its own source still stores."""
    missing = source.dvv.missing_from(target.cvv | supplied_by(source, target))
    return StartVerdict(may_start=not missing, missing=missing)


def new_connection(
    source: str,
    target: str,
    *,
    filter: str | None,
    history: HistoryMode,
    verdict: StartVerdict,
    previous: Connection | None,
) -> Connection:
    """The run-time row of a connection just added, a reconnect of a removed one included.

    ADD4: a reconnect is a new connection and starts at progress 0, never at the removed one's progress: that
    progress passed over what the old filter dropped and what a loss at the source took, and the source may
    since have written new events at seqs below it. CF1 drops what the target already holds. Only H3 carries
    over: a connection once filtered stays ever filtered.
    """
    return Connection(
        source=source,
        target=target,
        state=ConnectionState.ACTIVE if verdict.may_start else ConnectionState.PENDING,
        filter=filter,
        ever_filtered=bool(filter) or (previous.ever_filtered if previous else False),
        history=history,
        progress=0,
        reason=verdict.reason,
    )
