"""A small replication pass without a JVM (pyarrow), deciding and writing exactly as the Spark pass does (REP1).

Replicating a few events would otherwise start Spark for seconds (issue 17). A pass runs here when its work is
small and every step of it is exact without Spark (`runs_locally`): a local store, no filter (a filter is a
Spark SQL expression, evaluated only by Spark) and no admission projection (RFC2), at most `limit` source rows.
Anything else is a Spark job (`adapters.spark.jobs.replicate_pass`).

It reads exactly the files each segment row names and counts their rows (DR0, `reader.read_segment`), decides
each event with seq > progress by CF1 through its identity (RET4) against CVV-Y as the pass found it, checks the
source's vt keys (I3), renumbers by the same shift (`transforms.renumber`) and writes the segment in the layout,
schema and metadata of the Spark pass's output (`writer.replicated_schema`). Its result, the written rows and
the segment's statistics are those of the Spark pass on the same input (`tests/spark/test_local_pass.py`).

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

if TYPE_CHECKING:
    import pyarrow as pa

    from replctl.core.model import Segment


def runs_locally(store: LogStore, spec: PassSpec, limit: int) -> bool:
    """Whether the pass `spec` runs here: a local store, no filter, no admission projection, and at most
    `limit` rows in the segments it reads (0: never)."""
    return (
        store.is_local
        and spec.filter_sql is None
        and not spec.admission
        and sum(segment.count for segment in spec.source_segments) <= limit
        and limit > 0
    )


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
    origins: list[str | None] = table.column("origin").to_pylist()
    times: list[int | None] = table.column("origin_time").to_pylist()
    vts: list[list[tuple[str, int | None]] | None] = table.column("vt").to_pylist()

    cvv = {k: int(v) for k, v in spec.target_cvv.items() if int(v)}
    keys = sorted(set(spec.source_keys))
    known = set(keys)
    identities = sorted(set(spec.identity_origins))
    wide = is_wide(keys)
    examined = causal = 0
    outside = False
    written: list[int] = []
    for row, seq in enumerate(seqs):
        if seq is None or seq <= spec.progress:
            continue
        examined += 1
        if not wide and any(key not in known for key, _ in vts[row] or ()):
            outside = True
        time = times[row]
        # CF1 through the identity: CVV-Y[origin] ≥ origin_time (`transforms.covered_by_identity`).
        if time is not None and cvv.get(origins[row] or "", 0) >= time:
            causal += 1
        else:
            written.append(row)

    lub = _lub(written, origins, times, vts, keys=None if wide else keys, identities=identities)
    if wide:
        outside = bool(set(lub) - known - set(identities))
    if outside:
        raise outside_keys_failure()
    if not examined:
        return PassResult(0, 0, 0, 0, None, spec.progress, None)
    progress = max(seq for seq in seqs if seq is not None)
    if not written:
        return PassResult(examined, 0, causal, 0, None, progress, None)
    shift = spec.target_seq - spec.progress
    chosen = table.take(_int64s(written))
    renumbered = _int64s([int(seqs[row] or 0) + shift for row in written])
    out = chosen.set_column(0, "seq", renumbered).select(list(COLUMNS)).cast(replicated_schema())
    write_segment(store, spec.out_rel, out)
    written_seqs = [int(seqs[row] or 0) for row in written]
    segment = SegmentStats(len(written), min(written_seqs) + shift, max(written_seqs) + shift, lub)
    return PassResult(examined, len(written), causal, 0, None, progress, segment)


def _read(store: LogStore, segments: Sequence[Segment]) -> pa.Table:
    """Every row of the segments, each segment's rows counted against its catalog row (DR0)."""
    import pyarrow as pa

    tables = [read_segment(store, segment, COLUMNS) for segment in segments]
    # Spark's and the local writer's segments differ in nullability only; they unify as Spark's read does.
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables, promote_options="permissive")


def _lub(
    rows: Sequence[int],
    origins: Sequence[str | None],
    times: Sequence[int | None],
    vts: Sequence[list[tuple[str, int | None]] | None],
    *,
    keys: Sequence[str] | None,
    identities: Sequence[str],
) -> dict[str, int]:
    """VT4 over `vt ⊔ identity` of the written rows (RET4), as the Spark pass gathers it.

    Narrow vectors (`keys` given): the largest entry of each key of `keys`, then the largest origin_time of each
    retired origin in `identities` (`schema.lub_with_identities`). Wide vectors (None): every key of each
    row's covering vector, its own entry the larger of origin_time and vt[origin] (`schema.lub_by_scan`).
    """
    entries: dict[str, int] = {}
    owns: dict[str, int] = {}
    wanted = set(keys) if keys is not None else None
    for row in rows:
        vt = vts[row] or []
        origin, time = origins[row], times[row]
        if wanted is None:
            own = max((v for k, v in vt if k == origin and v is not None), default=0)
            for key, value in vt:
                if key != origin:
                    _raise(entries, key, value)
            if origin is not None:
                _raise(entries, origin, max(own, time or 0))
            continue
        for key, value in vt:
            if key in wanted:
                _raise(entries, key, value)
        if origin is not None and origin in identities:
            _raise(owns, origin, time)
    merged = {key: value for key, value in entries.items() if value}
    for origin, time in owns.items():
        if time:
            merged[origin] = max(merged.get(origin, 0), time)
    return dict(sorted(merged.items()))


def _raise(largest: dict[str, int], key: str, value: int | None) -> None:
    """`largest[key]` becomes `value` when that is larger (a missing value, NULL, is ignored as by max)."""
    if value is not None and (key not in largest or value > largest[key]):
        largest[key] = value


def _int64s(values: Sequence[int]) -> Any:
    """An Arrow int64 array of `values`, built from a buffer (see the module docstring)."""
    import pyarrow as pa

    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(array("q", values))])
