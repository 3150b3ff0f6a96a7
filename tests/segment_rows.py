"""Catalog rows for segments the job tests write by hand: the jobs read catalogued segments, not folders.

A test writes a segment with a job (or with Spark directly) and then hands the job reading it the row the
services would have committed: its files with their rows, seq range and digest (`inventory.record_files`),
so the read reads exactly those files and counts them against the row (issue 19).
"""

from __future__ import annotations

import pyarrow.parquet as pq

from replctl.adapters.logstore import LogStore
from replctl.adapters.logstore.inventory import record_files
from replctl.core.model import Segment
from replctl.core.vectortime import VectorTime


def catalogued(store: LogStore, relative: str, *, segment_id: int = 0) -> Segment:
    """The catalog row of the local segment just written at `relative` (its location is the first path
    part); its count and seq range are what its files hold, as when the segment was committed."""
    files = record_files(store, relative)
    assert files, f"no segment written at {relative}"
    lows = [f.seq_lo for f in files if f.seq_lo is not None]
    highs = [f.seq_hi for f in files if f.seq_hi is not None]
    return Segment(
        segment_id,
        relative.split("/", 1)[0],
        relative,
        min(lows, default=0),
        max(highs, default=0),
        sum(f.rows or 0 for f in files),
        VectorTime({}),
        files,
    )


def catalogued_all(store: LogStore, relatives: list[str]) -> list[Segment]:
    """`catalogued` for each of `relatives`, in the given order."""
    return [catalogued(store, rel, segment_id=i) for i, rel in enumerate(relatives, start=1)]


def assert_same_file_shape(arrow_file: pq.ParquetFile, spark_file: pq.ParquetFile) -> None:
    """A segment file the JVM-free writer made has the shape of the one Spark made: the Arrow schema, the
    Parquet schema as printed (less its first line, the object's address, and the root group's name), the footer's
    metadata, INT96 `emitted_at` (the last leaf) and Snappy."""
    assert arrow_file.schema_arrow == spark_file.schema_arrow
    printed = [
        str(f.schema).split("\n", 1)[1].replace(" spark_schema {", " schema {")
        for f in (arrow_file, spark_file)
    ]
    assert printed[0] == printed[1]
    assert arrow_file.metadata.metadata == spark_file.metadata.metadata
    assert arrow_file.metadata.row_group(0).column(9).physical_type == "INT96"
    assert arrow_file.metadata.row_group(0).column(0).compression == "SNAPPY"
