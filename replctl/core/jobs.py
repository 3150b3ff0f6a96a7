"""What the data-plane jobs take and return: plain frozen dataclasses, pure values (no pyspark, no I/O).

They live in `core` because they are the language of the data-plane port (`services.ports.DataPlane`): the
services build these inputs, a job (Spark, or the in-memory fake of the tests) runs, and the services commit the
results as catalog rows (architecture.md, "Where the data lives"); the jobs never touch the catalog.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from replctl.core.model import Segment
from replctl.core.vectortime import VectorTime


class WrittenStats(Protocol):
    """What a segment row takes from a written segment: its row count, seq range and vt LUB (a job's
    `SegmentStats`, a copied segment's row, a backup's segment)."""

    @property
    def count(self) -> int:
        """Rows in the segment."""
        ...

    @property
    def seq_lo(self) -> int:
        """Its first seq."""
        ...

    @property
    def seq_hi(self) -> int:
        """Its last seq."""
        ...

    @property
    def vt_lub(self) -> Mapping[str, int]:
        """The LUB of `vt ⊔ identity` over its events (VT4, RET4)."""
        ...


@dataclass(frozen=True)
class SegmentStats:
    """What a segment row of the catalog records: row count, seq range and the LUB of `vt ⊔ identity` over
    its events (VT4, RET4)."""

    count: int
    seq_lo: int
    seq_hi: int
    vt_lub: dict[str, int] = field(default_factory=dict)


def appended_stats(location: str, start_seq: int, count: int, cvv: Mapping[str, int]) -> SegmentStats:
    """The statistics of an append of `count` events from `start_seq` on a base `cvv` (EM1), known without
    reading the data: every event is `location`'s own, and the last one's vt ⊔ identity dominates the rest."""
    seq_hi = start_seq + count - 1
    return SegmentStats(count, start_seq, seq_hi, VectorTime(cvv).merge({location: seq_hi}).to_dict())


@dataclass(frozen=True)
class PassSpec:
    """One replication pass X→Y (REP1), in plain values.

    `source_segments` are X's catalogued segments that may hold events with seq > `progress` (their rows:
    the pass reads exactly their files and compares the rows it got with their counts, issue 19);
    `filter_sql` is the connection filter (a Spark SQL boolean expression over the filter columns, None =
    unfiltered); `admission` is RFC2's projection P (empty = no admission check); `target_seq` is the last
    seq assigned at Y; `out_rel` is the relative path of the segment to write at Y; `source_keys` are the keys
    of CVV-X, the only keys any of X's vts can hold (used to gather the LUB of the written vts in the write).
    """

    source_segments: list[Segment]
    progress: int
    target_cvv: dict[str, int]
    filter_sql: str | None
    admission: list[str]
    target_seq: int
    out_rel: str
    source_keys: list[str]
    identity_origins: list[str] = field(default_factory=list)
    # The connection's names: only to describe the pass's Spark jobs (issue 18); nothing is read by them.
    source: str = "X"
    target: str = "Y"


@dataclass(frozen=True)
class PassResult:
    """The outcome of one pass.

    `examined` counts the events decided in the pass (written + skipped); the blocking event, if any, is
    `blocked_at` and is not counted. `progress` is the new progress(Y,X) (REP2). `segment` is None when nothing
    was written, and then no segment was left in the store.
    """

    examined: int
    written: int
    skipped_causal: int
    skipped_filter: int
    blocked_at: int | None
    progress: int
    segment: SegmentStats | None


@dataclass(frozen=True)
class RewriteResult:
    """A straddling segment cut for physical deletion (DEL1): what was kept (rewritten) and what was dropped.

    `dropped.vt_lub` is what DEL2 merges into the DVV; `kept` is None when nothing remains.
    """

    kept: SegmentStats | None
    dropped: SegmentStats | None


@dataclass(frozen=True)
class InvariantViolation:
    """A broken invariant of rules.md §9 found in a stored log.

    `code` is the invariant id (I1, I2, I3, I7) or `SEG` for a segment that disagrees with its catalog row;
    `seq` is the first violating seq where the invariant is about positions.
    """

    code: str
    message: str
    seq: int | None = None
    details: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class SegmentRewrite:
    """One segment to prune of a retired id (RET2): its catalog row, and the new relative path to write its
    pruned copy to."""

    source: Segment
    target: str
