"""A small replication pass without a JVM (pyarrow), deciding and writing exactly as the Spark pass does (REP1).

Replicating a few events would otherwise start Spark for seconds (issue 17). A pass runs here when its work is
small and every step of it is exact without Spark (`runs_locally`): a local store, no filter (a filter is a
Spark SQL expression, evaluated only by Spark), no admission projection (RFC2), narrow vectors, at most
`limit` source rows and `LOCAL_BYTES` of files. Anything else is a Spark job
(`adapters.spark.jobs.replicate_pass`).

It reads exactly the files each segment row names and counts their rows (DR0, `reader.read_segment`), decides
each event with seq > progress by CF1 through its identity (RET4) against CVV-Y as the pass found it, checks
the source's vt keys (I3) as the Spark pass over narrow vectors does, renumbers by the same shift
(`transforms.renumber`) and writes the segment in the layout, schema and metadata of the Spark pass's output
(`writer.replicated_schema`). Its result, the written rows and
the segment's statistics are those of the Spark pass on the same input (`tests/spark/test_replicate.py`).

No Python object becomes an Arrow value through `pa.array` or `pa.scalar`: both import pandas, which would cost a
small pass more than the rest of its work. The row choice and the new seqs reach Arrow as buffers.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from replctl.adapters.logstore import LogStore
from replctl.adapters.logstore.reader import COLUMNS, read_segment
from replctl.adapters.logstore.sourcechecks import (
    damage_explains,
    is_wide,
    outside_keys_failure,
    refuse_missing,
)
from replctl.adapters.logstore.writer import replicated_schema, write_segment
from replctl.core.jobs import PassResult, PassSpec, SegmentStats
from replctl.errors import EnvironmentFailure

if TYPE_CHECKING:
    import pyarrow as pa

    from replctl.core.model import Segment

# Up to this many bytes of catalogued source files a pass may run here: every row is held in memory, and an
# event's payload may be large (up to the payload limit) where the row count says nothing of it.
LOCAL_BYTES = 256 << 20


def runs_locally(store: LogStore, spec: PassSpec, limit: int) -> bool:
    """Whether the pass `spec` runs here: a local store, no filter, no admission projection, narrow vectors,
    and segments whose rows (at most `limit`; 0: never) and catalogued bytes (`LOCAL_BYTES`) are known and
    small. A segment row made before rows named their files does not say its size: Spark reads it."""
    if limit <= 0 or not store.is_local or spec.filter_sql is not None or spec.admission:
        return False
    # Wide vectors: one Python object per entry would cost more memory than the pass is worth (Spark streams).
    if is_wide(sorted(set(spec.source_keys))) or any(s.files is None for s in spec.source_segments):
        return False
    rows = sum(s.count for s in spec.source_segments)
    size = sum(f.size for s in spec.source_segments for f in s.files or ())
    return rows <= limit and size <= LOCAL_BYTES


def replicate_pass(store: LogStore, spec: PassSpec) -> PassResult:
    """One replication pass X→Y over X's events with seq > progress (REP1 (1) and (4); `runs_locally` holds).

    Each such event is skipped if CVV-Y (as the pass found it) covers its identity (CF1, RET4), else written at
    Y with seq' = target_seq + (seq − progress). The new progress is the largest seq examined (REP2).
    """
    if not spec.source_segments:
        return PassResult(0, 0, 0, 0, None, spec.progress, None)
    with damage_explains(store, spec.source_segments):
        refuse_missing(store, spec.source_segments)
        table = _read(store, spec.source_segments)
    seqs: list[int | None] = table.column("seq").to_pylist()
    # Only the examined rows' identities and vectors become Python objects.
    examined_rows = [row for row, seq in enumerate(seqs) if seq is not None and seq > spec.progress]
    if not examined_rows:
        return PassResult(0, 0, 0, 0, None, spec.progress, None)
    chosen = table.select(["origin", "origin_time", "vt"]).take(_int64s(examined_rows))
    origins: list[str | None] = chosen.column("origin").to_pylist()
    times: list[int | None] = chosen.column("origin_time").to_pylist()
    vts: list[list[tuple[str, int | None]] | None] = chosen.column("vt").to_pylist()

    cvv = {k: int(v) for k, v in spec.target_cvv.items() if int(v)}
    known = set(spec.source_keys)
    identities = set(spec.identity_origins)
    causal = 0
    outside = False
    written: list[int] = []  # indexes into `examined_rows`
    for i in range(len(examined_rows)):
        outside = outside or _outside(vts[i] or [], known)
        time = times[i]
        # CF1 through the identity: CVV-Y[origin] ≥ origin_time (`transforms.covered_by_identity`); a NULL
        # origin_time is covered by nothing, a NULL origin reads as CVV-Y's 0, as Spark's coalesce does.
        if time is not None and cvv.get(origins[i] or "", 0) >= time:
            causal += 1
        else:
            written.append(i)
    if outside:
        raise outside_keys_failure()
    # REP2 without a block: the largest seq read, which is examined since some row is (they are the rows
    # above the progress), as the Spark pass observes it.
    progress = max(seq for seq in seqs if seq is not None)
    if not written:
        return PassResult(len(examined_rows), 0, causal, 0, None, progress, None)
    lub = _lub(written, origins, times, vts, keys=known, identities=identities)
    shift = spec.target_seq - spec.progress
    source_seqs = [int(seqs[examined_rows[i]] or 0) for i in written]
    out = table.take(_int64s([examined_rows[i] for i in written]))
    out = out.set_column(out.schema.get_field_index("seq"), "seq", _int64s([s + shift for s in source_seqs]))
    write_segment(store, spec.out_rel, out.cast(replicated_schema()))
    segment = SegmentStats(len(written), min(source_seqs) + shift, max(source_seqs) + shift, lub)
    return PassResult(len(examined_rows), len(written), causal, 0, None, progress, segment)


def _outside(vt: list[tuple[str, int | None]], known: set[str]) -> bool:
    """Whether a vt holds an entry outside `known` (I3), counted as the Spark pass counts it
    (`transforms.with_vt_entries`): its entries less the keys of `known` it holds a value for, by the first
    entry of each key (a NULL value counts as outside, as would a repeated key, which Spark cannot write)."""
    first: dict[str, int | None] = {}
    for key, value in vt:
        first.setdefault(key, value)
    present = sum(1 for key, value in first.items() if key in known and value is not None)
    return len(vt) > present


def _read(store: LogStore, segments: Sequence[Segment]) -> pa.Table:
    """Every row of the segments, each segment's rows counted against its catalog row (DR0), in the schema a
    pass writes: Spark's and the local writer's segments differ in nullability, and with other Spark settings
    in their timestamp's type; a segment that does not convert is an environment failure, not a crash."""
    import pyarrow as pa

    schema = replicated_schema()
    tables = []
    for segment in segments:
        read = read_segment(store, segment, COLUMNS)
        try:
            tables.append(read.cast(schema))
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise EnvironmentFailure(
                f"cannot read the segment files of {segment.path} as events: {exc}", code="store"
            ) from exc
    return pa.concat_tables(tables)


def _lub(
    rows: Sequence[int],
    origins: Sequence[str | None],
    times: Sequence[int | None],
    vts: Sequence[list[tuple[str, int | None]] | None],
    *,
    keys: set[str],
    identities: set[str],
) -> dict[str, int]:
    """VT4 over `vt ⊔ identity` of the written rows (RET4), as the Spark pass gathers it over narrow vectors
    (`schema.lub_with_identities`): the largest entry of each key of `keys`, then the largest origin_time of
    each retired origin in `identities`, whose vts lost their own entry (RET2)."""
    entries: dict[str, int] = {}
    owns: dict[str, int] = {}
    for row in rows:
        for key, value in vts[row] or []:
            if key in keys:
                _keep_max(entries, key, value)
        origin = origins[row]
        if origin is not None and origin in identities:
            _keep_max(owns, origin, times[row])
    merged = {key: value for key, value in entries.items() if value}
    for origin, time in owns.items():
        if time:
            merged[origin] = max(merged.get(origin, 0), time)
    return dict(sorted(merged.items()))


def _keep_max(largest: dict[str, int], key: str, value: int | None) -> None:
    """`largest[key]` becomes `value` when that is larger (a NULL value is ignored, as by max)."""
    if value is not None and (key not in largest or value > largest[key]):
        largest[key] = value


def _int64s(values: Sequence[int]) -> Any:
    """An Arrow int64 array of `values`, built from a buffer (see the module docstring)."""
    import pyarrow as pa

    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(array("q", values))])
