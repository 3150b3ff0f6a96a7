"""The segments of every log: immutable Parquet files with their seq range, count and vt LUB."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection, Row

from replctl.adapters.catalog.dialect import SEGMENTS
from replctl.core.jobs import WrittenStats
from replctl.core.model import Segment, SegmentFile
from replctl.core.vectortime import VectorTime


class SegmentQueries:
    """The `segments` table, mapped to `Segment`."""

    _conn: Connection
    _clock: Callable[[], datetime]

    def segments(self, location: str) -> list[Segment]:
        """The committed segments of `location`'s log, in seq order."""
        rows = self._conn.execute(
            select(SEGMENTS).where(SEGMENTS.c.location == location).order_by(SEGMENTS.c.seq_lo, SEGMENTS.c.id)
        )
        return [segment_from_row(row) for row in rows]

    def add_written_segment(
        self,
        location: str,
        path: str,
        stats: WrittenStats,
        operation_id: str | None,
        files: Sequence[SegmentFile] | None,
    ) -> Segment:
        """Commit a segment a job wrote (or a copy made) at `path` with its statistics: `add_segment` with
        the row's values taken from `stats`."""
        return self.add_segment(
            location,
            path,
            stats.seq_lo,
            stats.seq_hi,
            stats.count,
            VectorTime(stats.vt_lub),
            operation_id,
            files=files,
        )

    # The arguments follow the columns of a segment row, in order; callers pass them that way.
    def add_segment(  # noqa: PLR0917
        self,
        location: str,
        path: str,
        seq_lo: int,
        seq_hi: int,
        count: int,
        vt_lub: Mapping[str, int],
        operation_id: str | None,
        *,
        files: Sequence[SegmentFile] | None = None,
    ) -> Segment:
        """Commit a written segment file (path relative to the store root) to `location`'s log.

        `files` are its data files as written (`logstore.inventory.record_files`): the census of damage
        compares their names and sizes with the store (`core.damage`), readers read exactly them and compare
        what they read with their rows, seq ranges and digests (issue 19); None where they cannot be listed.
        """
        if seq_lo > seq_hi or count < 0:
            raise ValueError(f"bad segment range {seq_lo}..{seq_hi} with {count} events for {path}")
        lub = VectorTime(vt_lub)
        new_id = self._conn.execute(
            SEGMENTS.insert()
            .values(
                location=location,
                path=path,
                seq_lo=seq_lo,
                seq_hi=seq_hi,
                count=count,
                vt_lub=lub.to_dict(),
                files=None if files is None else {f.name: f.size for f in sorted(files, key=_name)},
                file_contents=None if files is None else _contents(files),
                created_at=self._clock(),
                operation_id=operation_id,
            )
            .returning(SEGMENTS.c.id)
        ).scalar_one()
        return Segment(
            id=int(new_id),
            location=location,
            path=path,
            seq_lo=seq_lo,
            seq_hi=seq_hi,
            count=count,
            vt_lub=lub,
            files=None if files is None else tuple(sorted(files, key=_name)),
        )

    def delete_segments(self, ids: Iterable[int]) -> int:
        """Forget the given segments (their files become garbage); returns how many rows went."""
        wanted = sorted(set(ids))
        if not wanted:
            return 0
        return self._conn.execute(SEGMENTS.delete().where(SEGMENTS.c.id.in_(wanted))).rowcount

    def set_segment_lub(self, segment_id: int, vt_lub: Mapping[str, int]) -> None:
        """Correct the recorded LUB of one segment (the repair of catalogs pruned before RET4)."""
        self._conn.execute(
            SEGMENTS.update().where(SEGMENTS.c.id == segment_id).values(vt_lub=VectorTime(vt_lub).to_dict())
        )

    def segment_paths(self) -> set[str]:
        """Every path a committed segment points to; any other file in the store is garbage."""
        return {str(path) for path in self._conn.execute(select(SEGMENTS.c.path)).scalars()}


def segment_from_row(row: Row[Any]) -> Segment:
    """A `segments` row as a `Segment`."""
    return Segment(
        id=int(row.id),
        location=row.location,
        path=row.path,
        seq_lo=int(row.seq_lo),
        seq_hi=int(row.seq_hi),
        count=int(row._mapping["count"]),  # `row.count` is the tuple method
        vt_lub=VectorTime.parse(row.vt_lub),
        files=_files(row.files, row.file_contents),
    )


def _name(file: SegmentFile) -> str:
    return file.name


def _contents(files: Sequence[SegmentFile]) -> dict[str, dict[str, Any]] | None:
    """The `file_contents` column: rows, seq range and digest per file (None when none was recorded)."""
    if any(f.rows is None for f in files):
        return None
    return {
        f.name: {"rows": f.rows, "seq_lo": f.seq_lo, "seq_hi": f.seq_hi, "sha256": f.sha256}
        for f in sorted(files, key=_name)
    }


def _files(
    sizes: Mapping[str, Any] | None, contents: Mapping[str, Any] | None
) -> tuple[SegmentFile, ...] | None:
    """A row's files: sizes since revision 0004, what each holds since 0005 (None on older rows)."""
    if sizes is None:
        return None
    known = contents or {}

    def number(value: Any) -> int | None:
        return None if value is None else int(value)

    return tuple(
        SegmentFile(
            str(name),
            int(size),
            rows=number(known.get(name, {}).get("rows")),
            seq_lo=number(known.get(name, {}).get("seq_lo")),
            seq_hi=number(known.get(name, {}).get("seq_hi")),
            sha256=known.get(name, {}).get("sha256"),
        )
        for name, size in sorted(sizes.items())
    )
