"""The file damage `drill disaster` does to a local segment: a torn disk's, file by file (DR0)."""

from __future__ import annotations

from pathlib import Path

from replctl.adapters.logstore import LogStore
from replctl.adapters.logstore.reader import segment_file_paths
from replctl.core.model import Segment
from replctl.errors import EnvironmentFailure


def cut_files(store: LogStore, segment: Segment, from_seq: int) -> None:
    """Destroy the events with seq ≥ `from_seq` of one segment in place: a data file holding only such
    events is removed, one holding some is rewritten under its own name with its earlier rows (a file cut
    short), the others are left alone. The catalog row is not touched: this is the damage recovery finds."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    for path in _stored_files(store, segment):
        try:
            # Checked against its page CRCs: a changed file's rows must not come back as a file cut short.
            table = pq.read_table(path, page_checksum_verification=True)
            kept = table.filter(pc.field("seq") < from_seq)
            if kept.num_rows == table.num_rows:
                continue
            if kept.num_rows == 0:
                path.unlink()
                continue
            pq.write_table(
                kept,
                path,
                compression="snappy",
                use_deprecated_int96_timestamps=True,
                write_page_checksum=True,  # as every segment file carries them (`writer.write_segment`)
            )
        except (OSError, ValueError) as exc:
            raise EnvironmentFailure(f"cannot cut {path}: {exc}", code="store") from exc


def stored_from(store: LogStore, segment: Segment, from_seq: int) -> bool:
    """Whether `cut_files(store, segment, from_seq)` would destroy anything: a data file of the segment the
    store still holds has an event with seq ≥ `from_seq` (an earlier drill or a disaster may have taken them;
    the catalog row does not say). Reads the seq column only."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    for path in _stored_files(store, segment):
        try:
            seqs = pq.read_table(path, columns=["seq"], page_checksum_verification=True).column("seq")
        except (OSError, ValueError) as exc:
            raise EnvironmentFailure(f"cannot read {path}: {exc}", code="store") from exc
        highest = pc.max(seqs).as_py()
        if highest is not None and highest >= from_seq:
            return True
    return False


def _stored_files(store: LogStore, segment: Segment) -> list[Path]:
    # A file already gone holds nothing left to destroy: a second drill skips it instead of failing on it.
    return [path for path in map(Path, segment_file_paths(store, segment)) if path.is_file()]
