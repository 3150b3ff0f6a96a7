"""Reading a few segments of a local log without a JVM (pyarrow), for `log show`.

Showing a page of a log is not heavy work: starting Spark for it would cost seconds of JVM start-up in a cold
process. Heavy reads (replication, verification, deletion checks) stay Spark jobs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from replctl.adapters.logstore import LogStore
from replctl.errors import EnvironmentFailure

COLUMNS = ("seq", "origin", "origin_time", "vt", "type", "key", "tags", "payload", "emitted_at")


def read_local(
    store: LogStore, segment_paths: Sequence[str], *, from_seq: int = 0, limit: int | None = None
) -> list[dict[str, Any]]:
    """The events with seq ≥ `from_seq` of the given local segments, in seq order, at most `limit`."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    files = [str(f) for path in segment_paths for f in sorted(store.local_path(path).glob("*.parquet"))]
    if not files:
        return []
    try:
        table = ds.dataset(files, format="parquet").to_table(
            columns=list(COLUMNS), filter=pc.field("seq") >= from_seq
        )
    except (OSError, ValueError) as exc:  # pyarrow.lib.ArrowInvalid derives from ValueError
        raise EnvironmentFailure(f"cannot read the log's segment files: {exc}", code="store") from exc
    table = table.sort_by("seq")
    if limit is not None:
        table = table.slice(0, limit)
    rows: list[dict[str, Any]] = table.to_pylist()
    for row in rows:
        row["vt"] = dict(sorted(row["vt"] or []))
        row["tags"] = list(row["tags"] or [])
    return rows


def identity_extent(store: LogStore, segment_path: str, origins: Sequence[str]) -> dict[str, tuple[int, int]]:
    """Per origin of `origins`, the smallest and largest origin_time stored in one local segment.

    Reads only the identity columns (M3). Used to give catalogs pruned before RET4 their identities back.
    """
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    files = [str(f) for f in sorted(store.local_path(segment_path).glob("*.parquet"))]
    if not files or not origins:
        return {}
    try:
        table = ds.dataset(files, format="parquet").to_table(
            columns=["origin", "origin_time"], filter=pc.field("origin").isin(list(origins))
        )
    except (OSError, ValueError) as exc:
        raise EnvironmentFailure(
            f"cannot read the segment files of {segment_path}: {exc}", code="store"
        ) from exc
    grouped = table.group_by("origin").aggregate([("origin_time", "min"), ("origin_time", "max")])
    return {
        str(row["origin"]): (int(row["origin_time_min"]), int(row["origin_time_max"]))
        for row in grouped.to_pylist()
    }
