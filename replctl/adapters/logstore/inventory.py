"""What a segment's data files hold, recorded when the segment is written and compared when it is read.

A segment row names its data files (issue 19): readers read exactly those, never a folder listing, so a stray
file is never read; the census of damage compares their names and sizes (`core.damage`); a read compares the
rows it got with the rows recorded; recovery places a lost file by the seq range it held (DR0); `log verify`,
a copy and recovery compare SHA-256 digests, since they read the bytes anyway.

Cost: the digest is one streamed pass over files the job has just written (still in the page cache), at
hashing speed, a small fraction of what writing them through Spark took; the rows and seq range come from
each file's Parquet footer (a few kilobytes). Remote stores are not listed (`LogStore.segment_files`), so
nothing is recorded for them, as the census does not check them.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace
from pathlib import Path

from replctl.adapters.logstore import LogStore
from replctl.core.model import Segment, SegmentFile
from replctl.errors import EnvironmentFailure
from replctl.localfiles import file_digest


def record_files(store: LogStore, relative: str) -> tuple[SegmentFile, ...] | None:
    """The data files of the segment at `relative` with their size, rows, seq range and digest, sorted by
    name (None on a remote store or when the segment is not there)."""
    sizes = store.segment_files(relative)
    if sizes is None:
        return None
    found = []
    for name, size in sorted(sizes.items()):
        path = store.local_path(f"{relative}/{name}")
        try:
            rows, lo, hi = seq_extent(path)
            sha = file_digest(path)
        except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid derives from ValueError
            raise EnvironmentFailure(
                f"cannot read the new segment file {store.uri(relative)}/{name}: {exc}", code="store"
            ) from exc
        found.append(SegmentFile(name, size, rows=rows, seq_lo=lo, seq_hi=hi, sha256=sha))
    return tuple(found)


def seq_extent(path: Path) -> tuple[int, int | None, int | None]:
    """Rows and smallest and largest seq of one Parquet file, from its footer's statistics (the column is
    read only when a row group lacks them)."""
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(path).metadata
    if meta.num_rows == 0:
        return 0, None, None
    lows, highs = [], []
    for i in range(meta.num_row_groups):
        group = meta.row_group(i)
        if group.num_rows == 0:
            continue
        column = next(
            (group.column(j) for j in range(group.num_columns) if group.column(j).path_in_schema == "seq"),
            None,
        )
        stats = None if column is None else column.statistics
        if stats is None or not stats.has_min_max or stats.null_count:
            # No usable statistics: read the one column (a null seq breaks I7 and is verify's to report).
            import pyarrow.compute as pc  # here only: its import is a fifth of a small append's

            seqs = pq.read_table(path, columns=["seq"], page_checksum_verification=True).column("seq")
            bounds = pc.min_max(seqs).as_py()
            return meta.num_rows, bounds["min"], bounds["max"]
        lows.append(int(stats.min))
        highs.append(int(stats.max))
    return meta.num_rows, min(lows), max(highs)


def changed(store: LogStore, segment: Segment) -> frozenset[str]:
    """The catalogued data files of `segment` the store holds at their recorded size whose bytes are not the
    ones written, though they still parse: their SHA-256 differs from the row's (bit rot, a foreign overwrite
    at the same size). `log verify` reports them (SEG) and sends the operator to `recover`, so recovery must
    see them as damage too: a file whose footer still parsed was kept, and the recovery found nothing to
    recover. One that no longer parses (zeroed by a torn write) holds nothing: `held` leaves it out.

    Reads every such file whole: for recovery only, which reads the log anyway. A file of another size is
    judged by what it reads (cut short, it keeps its prefix: DR0); a row that records no digest (older rows,
    remote stores) is not checked."""
    return frozenset(
        name
        for name in digest_differs(store, segment)
        if readable(store.local_path(f"{segment.path}/{name}"))
    )


def digest_differs(store: LogStore, segment: Segment) -> frozenset[str]:
    """The catalogued data files of `segment` the store holds at their recorded size whose SHA-256 differs
    from the one the row recorded at write, whether or not they still parse (`changed` keeps those that do).
    A backup copies such a file as it is now, under the digest recorded at write (BK1): it is damaged from
    the start, and so is every later backup of the same file. Reads every such file whole; none on a remote
    store or for a row that records no digest."""
    if not store.is_local or not segment.files:
        return frozenset()
    stored = store.segment_files(segment.path) or {}
    return frozenset(
        f.name
        for f in segment.files
        if f.sha256 is not None
        and stored.get(f.name) == f.size
        and _differs(store.local_path(f"{segment.path}/{f.name}"), f.sha256)
    )


def _differs(path: Path, sha256: str) -> bool:
    """Whether the file's bytes hash otherwise than `sha256`; a file gone meanwhile is `held`'s to leave out."""
    try:
        return file_digest(path) != sha256
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise _cannot_read(path, exc) from exc


def held(store: LogStore, segment: Segment, *, leave_out: Collection[str] = ()) -> Segment | None:
    """`segment` narrowed to the catalogued files the store still holds (None: none of them, or its folder
    is gone); a file the row does not name is never among them (issue 19), nor one that is no Parquet file
    any more (truncated, overwritten, zeroed at its size by a torn write): lost as a missing file is (DR0),
    where Spark would fail on its bytes. One of another size that still reads (a segment rewritten in place)
    stays: its rows are the survivors. On a remote store, which is not listed, the row as it is.

    Every kept file's footer is read (`readable`): only recovery and verification read the log this way,
    and a file zeroed at its recorded size failed a recovery's first read with Spark's error, leaving the
    operator no way out but removing it by hand. `leave_out`: names of files not to keep either (recovery's
    `changed` files)."""
    if not store.is_local:
        return segment
    stored = store.segment_files(segment.path)
    if not stored:
        return None
    if segment.files is None:
        return segment
    kept = tuple(
        f
        for f in segment.files
        if f.name in stored
        and f.name not in leave_out
        and readable(store.local_path(f"{segment.path}/{f.name}"))
    )
    return replace(segment, files=kept) if kept else None


def readable(path: Path) -> bool:
    """Whether `path` opens as a Parquet file (its footer reads): a truncated, overwritten or rotted data file
    does not, and Spark fails on it with a raw error where replctl reports damage (DR0); nor does a file that
    vanished meanwhile (gone, as a missing file is). Reads a few kilobytes.

    The file is opened by the system first: a failure there (permissions, a folder in its place, too many
    open files) says nothing about its bytes, and calling it lost would have the caller act on a log that is
    whole: an environment failure (exit 6). Once open, bytes pyarrow cannot parse as Parquet are damage,
    whichever error says so (ArrowInvalid, or an OSError without errno for a footer whose metadata no longer
    deserialises, or a magic replctl never writes)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        with path.open("rb"):
            pass
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise _cannot_read(path, exc) from exc
    try:
        pq.ParquetFile(path).metadata  # noqa: B018 - reading the footer is the check
    except FileNotFoundError:
        return False
    except OSError as exc:
        if exc.errno is not None:  # the system failed the read (an I/O error): not the bytes' fault
            raise EnvironmentFailure(
                f"cannot read the segment file {path}: {exc}",
                code="store",
                hint="check the disk holding the store, then re-run",
            ) from exc
        return False
    except (pa.ArrowInvalid, NotImplementedError):  # not Parquet as replctl writes it
        return False
    return True


def _cannot_read(path: Path, exc: OSError) -> EnvironmentFailure:
    """A segment file the system would not open or read: says nothing about its bytes (exit 6)."""
    return EnvironmentFailure(
        f"cannot read the segment file {path}: {exc}",
        code="store",
        hint="check the file's permissions, the disk holding the store and the open-file limit (ulimit -n), "
        "then re-run",
    )
