"""Reading a few segments of a local log without a JVM (pyarrow), for `log show` and a small local pass.

Showing a page of a log, or replicating a few events, is not heavy work: starting Spark for it would cost seconds
of JVM start-up in a cold process. Heavy reads (large passes, verification, deletion checks) stay Spark jobs.

Like the Spark jobs, this reads exactly the files each segment row names (issue 19): a file copied into a
segment's folder is never read, and a segment that gives other rows than its row holds is damage (DR0,
DamagedLog), never a shorter page. Like them, it checks every page against the CRC its writer stored: a file
whose bytes changed at its size (bit rot, a foreign overwrite) fails its read, and is damage too, never an
event read as it was not written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from replctl.adapters.logstore import LogStore, inventory
from replctl.core.model import Segment
from replctl.errors import DamagedLog, EnvironmentFailure

if TYPE_CHECKING:
    import pyarrow as pa

COLUMNS = ("seq", "origin", "origin_time", "vt", "type", "key", "tags", "payload", "emitted_at")


def segment_file_paths(store: LogStore, segment: Segment) -> list[str]:
    """The local files a read of `segment` opens: the row's files by name; a row made before rows recorded
    their files: the folder's Parquet files."""
    folder = store.local_path(segment.path)
    names = segment.file_names
    if names is None:
        return [str(f) for f in sorted(folder.glob("*.parquet"))]
    return [str(folder / name) for name in names]


def read_segment(store: LogStore, segment: Segment, columns: Sequence[str]) -> pa.Table:
    """All rows of one catalogued segment (the given columns), checked against its row (DR0)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = segment_file_paths(store, segment)
    if not files:
        raise _damaged(segment, "its folder holds no data file")
    try:
        # File by file (`ParquetFile`), not as a dataset: importing pyarrow.dataset imports pandas, which cost
        # a small local pass a third of its time (issue 17).
        tables = []
        for name in files:
            with pq.ParquetFile(name, page_checksum_verification=True) as file:
                tables.append(file.read(columns=list(columns)))
        table = tables[0] if len(tables) == 1 else pa.concat_tables(tables, promote_options="permissive")
    except FileNotFoundError as exc:
        raise _damaged(segment, f"a catalogued file is not in the store ({exc.filename or exc})") from exc
    except (OSError, ValueError) as exc:  # pyarrow.lib.ArrowInvalid derives from ValueError
        # A page failing its CRC, or bytes that no longer decode (a footer zeroed at the file's size): damage
        # when the file's bytes are not the ones written (DR0); otherwise the disk or the system failed the read.
        changed = sorted(inventory.digest_differs(store, segment))
        if changed:
            raise _damaged(
                segment, f"its file {changed[0]} changed since it was written and fails its read"
            ) from exc
        raise EnvironmentFailure(
            f"cannot read the segment files of {segment.path}: {exc}", code="store"
        ) from exc
    if table.num_rows != segment.count:
        raise _damaged(segment, f"it holds {table.num_rows} events, its catalog row {segment.count}")
    return table


def _damaged(segment: Segment, why: str) -> DamagedLog:
    return DamagedLog(
        segment.location,
        f"{segment.location}'s log is damaged: segment {segment.path} (from seq {segment.seq_lo}) differs "
        f"from its catalog row: {why} (DR0)",
    )


def read_local(
    store: LogStore, segments: Sequence[Segment], *, from_seq: int = 0, limit: int | None = None
) -> list[dict[str, Any]]:
    """The events with seq ≥ `from_seq` of the given local segments, in seq order, at most `limit`.

    Each segment is read whole and its rows counted against its catalog row before anything is shown.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    tables = [read_segment(store, seg, COLUMNS) for seg in segments]
    if not tables:
        return []
    # Spark and the local writer differ in nullability only; the schemas unify as one dataset would.
    table = pa.concat_tables(tables, promote_options="permissive")
    table = table.filter(pc.field("seq") >= from_seq).sort_by("seq")
    if limit is not None:
        table = table.slice(0, limit)
    rows: list[dict[str, Any]] = table.to_pylist()
    for row in rows:
        row["vt"] = dict(sorted(row["vt"] or []))
        row["tags"] = list(row["tags"] or [])
    return rows


def identity_extent(store: LogStore, segment: Segment, origins: Sequence[str]) -> dict[str, tuple[int, int]]:
    """Per origin of `origins`, the smallest and largest origin_time stored in one local segment.

    Reads only the identity columns (M3). Used to give catalogs pruned before RET4 their identities back.
    """
    import pyarrow.compute as pc

    if not origins:
        return {}
    table = read_segment(store, segment, ["origin", "origin_time"])
    table = table.filter(pc.field("origin").isin(list(origins)))
    grouped = table.group_by("origin").aggregate([("origin_time", "min"), ("origin_time", "max")])
    return {
        str(row["origin"]): (int(row["origin_time_min"]), int(row["origin_time_max"]))
        for row in grouped.to_pylist()
    }
