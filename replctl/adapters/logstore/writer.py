"""Writing a small append's segment without a JVM (pyarrow), exactly as the Spark append job writes it (EM1).

A `log append` of a few events would otherwise start Spark for seconds to write a file of a few kilobytes. The
segment written here is the Spark job's (`adapters.spark.jobs.append_events`): one directory holding one
`part-00000-<uuid>-c000.snappy.parquet` file and an empty `_SUCCESS` marker, the same Parquet schema (names,
types, nullability, INT96 `emitted_at`), the same Spark metadata keys, the same rows and the same
`SegmentStats`. Hadoop's `.crc` side files are not written: replctl's sessions never read them
(`spark.session.STORE_CONF`); the catalog's digests are the segment's checksums (`logstore.inventory`).

The directory is written under a hidden temporary name and renamed into place, so a crash leaves no
half-written segment under a name the store lists (`LogStore.list_segment_dirs`).
"""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from importlib.metadata import version
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import TYPE_CHECKING, Any

from replctl.adapters.logstore import LogStore
from replctl.core.jobs import SegmentStats, appended_stats
from replctl.errors import EnvironmentFailure, InvalidInput

if TYPE_CHECKING:
    import pyarrow as pa

# The columns an append takes from its input; the rest of a row is the writer's (EM1).
_INPUTS = ("type", "key", "tags", "payload")

# The JSON lines of a batch are parsed in slices of about this size: the reader's block size is a 32-bit number,
# and a large payload limit lets 100k events exceed it.
_SLICE_BYTES = 64 << 20

# The schema the Spark append job writes, as Spark records it in the file (`row.metadata`): the nullability
# follows from the job's expressions (a literal origin is never null, the vt map is built from non-null values).
# A replication pass writes what it read from Parquet, which Spark reads as nullable throughout.
_NOT_NULL = frozenset({"origin", "vt", "tags", "emitted_at"})
_SPARK_TYPES: tuple[tuple[str, Any], ...] = (
    ("seq", "long"),
    ("origin", "string"),
    ("origin_time", "long"),
    ("vt", {"type": "map", "keyType": "string", "valueType": "long", "valueContainsNull": False}),
    ("type", "string"),
    ("key", "string"),
    ("tags", {"type": "array", "elementType": "string", "containsNull": True}),
    ("payload", "string"),
    ("emitted_at", "timestamp"),
)


def _spark_row_metadata(*, replicated: bool) -> dict[str, Any]:
    """Spark's `row.metadata` of an appended segment, or of one a replication pass wrote (`replicated`)."""
    fields = [
        {
            "name": name,
            # The vt map's values: built from non-null values by the append job, read from Parquet by a pass.
            "type": {**kind, "valueContainsNull": replicated} if name == "vt" else kind,
            "nullable": replicated or name not in _NOT_NULL,
            "metadata": {},
        }
        for name, kind in _SPARK_TYPES
    ]
    return {"type": "struct", "fields": fields}


def local_parquet_rows(path: Path) -> int | None:
    """The number of rows of a single Parquet input file (from its footer), None for a folder."""
    if not path.is_file():
        return None
    import pyarrow.parquet as pq

    try:
        rows: int = pq.ParquetFile(path).metadata.num_rows
    except (
        OSError,
        ValueError,
    ) as exc:  # checked before (adapters.eventfile); this is a race or a broken disk
        raise InvalidInput(f"cannot read the event file {path}: {exc}", code="bad-file") from exc
    return rows


def append_local(
    store: LogStore,
    location: str,
    *,
    events: Sequence[Mapping[str, Any]] | None = None,
    parquet_path: Path | None = None,
    start_seq: int,
    cvv: Mapping[str, int],
    out_rel: str,
) -> SegmentStats:
    """Append new local events to `location` as one segment at `out_rel`, as `jobs.append_events` does (EM1).

    Exactly one source: `events` (rows with type, key, tags, payload; payload already JSON text) or one
    checked Parquet file (`adapters.eventfile`), kept in file order. The i-th event gets
    seq = origin_time = start_seq + i and vt = cvv ⊔ {location: seq}, keys sorted (`schema.stored_vector`).
    """
    if (events is None) == (parquet_path is None):
        raise InvalidInput("give exactly one of events or a parquet file")
    if start_seq < 1:
        raise InvalidInput(f"the first seq of an append is at least 1, got {start_seq}")
    rows = events if events is not None else _parquet_rows(parquet_path)
    if not rows:
        raise InvalidInput("no events to append")
    table = _emit(rows, location=location, start_seq=start_seq, cvv=cvv)
    write_segment(store, out_rel, table)
    return appended_stats(location, start_seq, len(rows), cvv)


def _parquet_rows(path: Path | None) -> list[dict[str, Any]]:
    """The input columns of a checked Parquet event file (`adapters.eventfile`: strings and a list of
    strings), row by row in file order; a column the file lacks is null."""
    import pyarrow.parquet as pq

    assert path is not None
    try:
        names = pq.ParquetFile(path).schema_arrow.names
        rows: list[dict[str, Any]] = pq.read_table(
            path, columns=[c for c in _INPUTS if c in names]
        ).to_pylist()
    except (OSError, ValueError) as exc:
        raise InvalidInput(f"cannot read the event file {path}: {exc}", code="bad-file") from exc
    return rows


def _emit(
    rows: Sequence[Mapping[str, Any]], *, location: str, start_seq: int, cvv: Mapping[str, int]
) -> pa.Table:
    """EM1 for the batch, as `transforms.emit`: the same base CVV for every row, its own entry raised.

    The rows reach Arrow as JSON lines through its JSON reader: building arrays from Python objects
    (`pa.array`, `pa.scalar`) makes pyarrow import pandas, which cost a small append more than all its other
    work."""
    import pyarrow as pa

    schema = _schema()
    lines = _json_lines(rows, location=location, start_seq=start_seq, cvv=cvv)
    return pa.concat_tables([_parse(block, schema) for block in _slices(lines)])


def _json_lines(
    rows: Sequence[Mapping[str, Any]], *, location: str, start_seq: int, cvv: Mapping[str, int]
) -> Iterator[bytes]:
    """One JSON line per event, with the writer's columns (EM1). Each line is formatted from pieces encoded once
    per batch; only the event's own text is encoded per row, which keeps 100k events as fast as building the
    arrays was."""
    own_base = int(cvv.get(location, 0))
    others = sorted((k, int(v)) for k, v in cvv.items() if k != location and int(v))
    before = "".join(f'{{"key":{_text(k)},"value":{v}}},' for k, v in others if k < location)
    after = "".join(f',{{"key":{_text(k)},"value":{v}}}' for k, v in others if k > location)
    # One instant for the whole batch, in microseconds, like Spark's current_timestamp() in one query.
    now = datetime.now(UTC).replace(tzinfo=None).isoformat(timespec="microseconds")
    common = f'"origin":{_text(location)},"emitted_at":"{now}"'
    own = _text(location)
    for seq, row in enumerate(rows, start=start_seq):
        yield (
            f'{{"seq":{seq},"origin_time":{seq},{common},"vt":[{before}{{"key":{own},"value":{max(seq, own_base)}}}'
            f'{after}],"type":{_text(row.get("type"))},"key":{_text(row.get("key"))},'
            f'"tags":[{",".join(map(_text, row.get("tags") or ()))}],"payload":{_text(row.get("payload"))}}}\n'
        ).encode()


def _slices(lines: Iterator[bytes]) -> Iterator[bytes]:
    """The lines joined into slices of about `_SLICE_BYTES` (a longer line is a slice of its own)."""
    block: list[bytes] = []
    size = 0
    for line in lines:
        if block and size + len(line) > _SLICE_BYTES:
            yield b"".join(block)
            block, size = [], 0
        block.append(line)
        size += len(line)
    if block:
        yield b"".join(block)


def _parse(data: bytes, schema: pa.Schema) -> pa.Table:
    """One slice of JSON lines as a table of `schema`."""
    import pyarrow as pa
    import pyarrow.json as pj

    # The JSON reader has no map type: the vt arrives as a list of entries, which a map's layout is.
    entries = pa.list_(pa.struct([("key", pa.string()), ("value", pa.int64())]))
    read = pj.read_json(
        pa.BufferReader(data),
        # One block: a row (a large payload) must never straddle two.
        read_options=pj.ReadOptions(use_threads=False, block_size=len(data) + 1),
        parse_options=pj.ParseOptions(
            explicit_schema=pa.schema([pa.field(f.name, entries) if f.name == "vt" else f for f in schema]),
            unexpected_field_behavior="error",
        ),
    ).combine_chunks()
    vt = read.column("vt").chunk(0)
    vts = pa.MapArray.from_arrays(
        vt.offsets, vt.values.field("key"), vt.values.field("value"), type=schema.field("vt").type
    )
    return pa.Table.from_arrays(
        [vts if f.name == "vt" else read.column(f.name).chunk(0) for f in schema], schema=schema
    )


def _text(value: str | None) -> str:
    """A string (or null) as JSON: ASCII with escapes, so that any text survives the UTF-8 encoding of the
    lines. json's C string encoder, the one `json.dumps` calls, called directly: a `dumps` per value cost
    100k events several times more."""
    return "null" if value is None else encode_basestring_ascii(value)


def _schema(*, replicated: bool = False) -> pa.Schema:
    """The schema the Spark append job writes (names, types, nullability, Spark's metadata keys); with
    `replicated`, the one a Spark replication pass writes (every column nullable)."""
    import pyarrow as pa

    def field(name: str, kind: pa.DataType) -> pa.Field:
        return pa.field(name, kind, nullable=replicated or name not in _NOT_NULL)

    value = pa.field("value", pa.int64(), nullable=replicated)
    return pa.schema(
        [
            field("seq", pa.int64()),
            field("origin", pa.string()),
            field("origin_time", pa.int64()),
            field("vt", pa.map_(pa.string(), value)),
            field("type", pa.string()),
            field("key", pa.string()),
            field("tags", pa.list_(pa.field("element", pa.string()))),
            field("payload", pa.string()),
            field("emitted_at", pa.timestamp("us")),
        ],
        metadata={
            "org.apache.spark.version": version("pyspark"),
            "org.apache.spark.sql.parquet.row.metadata": json.dumps(
                _spark_row_metadata(replicated=replicated), separators=(",", ":")
            ),
        },
    )


def replicated_schema() -> pa.Schema:
    """The schema of a segment a replication pass writes, as Spark writes it (`localpass`)."""
    return _schema(replicated=True)


def write_segment(store: LogStore, out_rel: str, table: pa.Table) -> None:
    """Write `table` as the segment `out_rel` in the Spark writer's layout: one part file and `_SUCCESS`, under a
    hidden name renamed into place; never onto an existing segment (Spark's mode "error")."""
    import pyarrow.parquet as pq

    final = store.local_path(out_rel)
    if final.exists():
        # Spark's mode("error"): a segment directory is written once.
        raise EnvironmentFailure(f"cannot write onto an existing segment: {store.uri(out_rel)}", code="store")
    staging = final.with_name(f".{final.name}.tmp-{uuid.uuid4().hex[:8]}")
    try:
        staging.mkdir(parents=True)
        name = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
        writer = pq.ParquetWriter(
            staging / name,
            table.schema,
            compression="snappy",
            # Spark writes TIMESTAMP as INT96 by default (spark.sql.parquet.outputTimestampType).
            use_deprecated_int96_timestamps=True,
            # Only Spark's own metadata keys: the Arrow schema key would be the one difference in the footer
            # (and without the Arrow schema pyarrow drops the schema's metadata, so it is added below).
            store_schema=False,
            # A CRC on every page, as Spark's writer stores them: each read checks them (`reader`, Spark's
            # `parquet.page.verify-checksum.enabled`), so bytes changed at the file's size are damage (DR0).
            write_page_checksum=True,
        )
        with writer:
            writer.write_table(table)
            writer.add_key_value_metadata(table.schema.metadata)
        (staging / "_SUCCESS").touch()
        staging.replace(final)
    except BaseException as exc:
        # Also on Ctrl-C: a hidden staging folder is never listed as a segment, so nothing would collect it.
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(exc, OSError):
            raise EnvironmentFailure(
                f"cannot write the segment {store.uri(out_rel)}: {exc}", code="store"
            ) from exc
        raise
