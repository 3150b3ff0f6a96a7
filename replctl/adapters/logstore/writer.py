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
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from replctl.adapters.logstore import LogStore
from replctl.core.jobs import SegmentStats, appended_stats
from replctl.errors import EnvironmentFailure, InvalidInput

if TYPE_CHECKING:
    import pyarrow as pa

# Up to this many events an append is written here; larger ones go to Spark, whose writer streams them.
LOCAL_APPEND_LIMIT = 100_000

# The schema the Spark append job writes, as Spark records it in the file (`row.metadata`): the nullability
# follows from the job's expressions (a literal origin is never null, the vt map is built from non-null values).
_SPARK_ROW_METADATA = {
    "type": "struct",
    "fields": [
        {"name": "seq", "type": "long", "nullable": True, "metadata": {}},
        {"name": "origin", "type": "string", "nullable": False, "metadata": {}},
        {"name": "origin_time", "type": "long", "nullable": True, "metadata": {}},
        {
            "name": "vt",
            "type": {"type": "map", "keyType": "string", "valueType": "long", "valueContainsNull": False},
            "nullable": False,
            "metadata": {},
        },
        {"name": "type", "type": "string", "nullable": True, "metadata": {}},
        {"name": "key", "type": "string", "nullable": True, "metadata": {}},
        {
            "name": "tags",
            "type": {"type": "array", "elementType": "string", "containsNull": True},
            "nullable": False,
            "metadata": {},
        },
        {"name": "payload", "type": "string", "nullable": True, "metadata": {}},
        {"name": "emitted_at", "type": "timestamp", "nullable": False, "metadata": {}},
    ],
}


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
    inputs = _event_inputs(events) if events is not None else _parquet_inputs(parquet_path)
    count = inputs.num_rows
    if count == 0:
        raise InvalidInput("no events to append")
    table = _emit(inputs, location=location, start_seq=start_seq, cvv=cvv)
    _write_segment(store, out_rel, table)
    return appended_stats(location, start_seq, count, cvv)


def _event_inputs(events: Sequence[Mapping[str, Any]]) -> pa.Table:
    import pyarrow as pa

    return pa.table(
        {
            "type": pa.array([e.get("type") for e in events], pa.string()),
            "key": pa.array([e.get("key") for e in events], pa.string()),
            "tags": pa.array([list(e.get("tags") or []) for e in events], pa.list_(pa.string())),
            "payload": pa.array([e.get("payload") for e in events], pa.string()),
        }
    )


def _parquet_inputs(path: Path | None) -> pa.Table:
    import pyarrow as pa
    import pyarrow.parquet as pq

    assert path is not None
    try:
        raw = pq.read_table(path)
    except (OSError, ValueError) as exc:
        raise InvalidInput(f"cannot read the event file {path}: {exc}", code="bad-file") from exc
    kinds = {"type": pa.string(), "key": pa.string(), "tags": pa.list_(pa.string()), "payload": pa.string()}
    columns = {
        name: raw.column(name).cast(kind) if name in raw.column_names else pa.nulls(raw.num_rows, kind)
        for name, kind in kinds.items()
    }
    return pa.table(columns)


def _emit(inputs: pa.Table, *, location: str, start_seq: int, cvv: Mapping[str, int]) -> pa.Table:
    """EM1 for the batch, as `transforms.emit`: the same base CVV for every row, its own entry raised."""
    import pyarrow as pa
    import pyarrow.compute as pc

    count = inputs.num_rows
    seqs = list(range(start_seq, start_seq + count))
    others = sorted((k, int(v)) for k, v in cvv.items() if k != location and int(v))
    own_base = int(cvv.get(location, 0))
    vts = [sorted([*others, (location, max(seq, own_base))]) for seq in seqs]
    # One instant for the whole batch, in microseconds, like Spark's current_timestamp() in one query.
    now = datetime.now(UTC).replace(tzinfo=None)
    tags = pc.fill_null(inputs.column("tags"), pa.scalar([], pa.list_(pa.string())))
    schema = pa.schema(
        [
            pa.field("seq", pa.int64()),
            pa.field("origin", pa.string(), nullable=False),
            pa.field("origin_time", pa.int64()),
            pa.field(
                "vt", pa.map_(pa.string(), pa.field("value", pa.int64(), nullable=False)), nullable=False
            ),
            pa.field("type", pa.string()),
            pa.field("key", pa.string()),
            pa.field("tags", pa.list_(pa.field("element", pa.string())), nullable=False),
            pa.field("payload", pa.string()),
            pa.field("emitted_at", pa.timestamp("us"), nullable=False),
        ],
        metadata={
            "org.apache.spark.version": version("pyspark"),
            "org.apache.spark.sql.parquet.row.metadata": json.dumps(
                _SPARK_ROW_METADATA, separators=(",", ":")
            ),
        },
    )
    return pa.Table.from_arrays(
        [
            pa.array(seqs, pa.int64()),
            pa.array([location] * count, pa.string()),
            pa.array(seqs, pa.int64()),
            pa.array(vts, schema.field("vt").type),
            inputs.column("type"),
            inputs.column("key"),
            tags.cast(schema.field("tags").type),
            inputs.column("payload"),
            pa.array([now] * count, pa.timestamp("us")),
        ],
        schema=schema,
    )


def _write_segment(store: LogStore, out_rel: str, table: pa.Table) -> None:
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
        )
        with writer:
            writer.write_table(table)
            writer.add_key_value_metadata(table.schema.metadata)
        (staging / "_SUCCESS").touch()
        staging.replace(final)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise EnvironmentFailure(
            f"cannot write the segment {store.uri(out_rel)}: {exc}", code="store"
        ) from exc
