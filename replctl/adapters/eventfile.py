"""An operator's Parquet event file (`log append --file X.parquet`), checked with pyarrow before Spark reads it.

The input gets the same checks on every path (issue 19 item 8): exact column names (`Key` is not `key`; Spark
would match it case-insensitively or store nulls), `tags` a list of strings (no null list, no null element),
`payload` JSON text within the size limit. A file that is not Parquet says so (exit 2) instead of Spark's
"An error occurred while calling oNNN.parquet". Nothing is written before the whole input passed.

A folder is read as Spark reads it: every file below it, in subfolders too, except those whose name (or the
name of a folder they lie in) starts with `.`, or with `_` and holds no `=`, and files still being copied
(`._COPYING_`): `_part=1.parquet` is read, and checked. Its Parquet summary files (`_metadata`,
`_common_metadata`) hold no events, but Spark merges their columns into the columns it reads, so their columns
are checked like a file's: the run never refuses a column that a dry run let through.

Names that Spark and this checker could read differently are refused (exit 2) rather than guessed at: Spark
lists every name that starts with `_metadata` or `_common_metadata` (a folder `_metadata_old/` is read, a file
`_metadata.bak` is merged into the columns), and it follows a symbolic link to a folder, which Python's walk and
the input's digest (REP3) do not; a name that is neither a file nor a folder (a FIFO, a dangling link) would
block or vanish. Every string (type, key, each tag, payload) must be UTF-8: Parquet does not enforce it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from replctl.core.events import ALLOWED, check_payload_size, check_payload_text
from replctl.errors import InvalidInput

if TYPE_CHECKING:
    import pyarrow as pa

_BATCH_ROWS = 65536
# Spark's names for a folder's Parquet summary files (parquet-mr's ParquetFileWriter).
_SUMMARY_NAMES = ("_metadata", "_common_metadata")


def check_parquet_events(path: Path, max_payload_bytes: int) -> None:
    """Raise InvalidInput (exit 2) naming the file, row and column at the first thing an event may not hold."""
    files, summaries = _listing(path)
    if not files:
        raise InvalidInput(f"{path}: no Parquet files in the folder", code="bad-file")
    for summary in summaries:
        _check_schema(summary, _schema(summary))
    for file in files:
        _check_file(file, max_payload_bytes)


def _listing(path: Path) -> tuple[list[Path], list[Path]]:
    """The files Spark reads the rows of, and the summary files it reads the columns of, in name order."""
    if path.is_file():
        # Spark reads the file the path resolves to (`AppendSource`), and skips it by that name as it would
        # in a folder: the JVM-free run, for small files, would append what Spark refuses.
        name = path.resolve().name
        if name.startswith(_SUMMARY_NAMES) or _hidden(name):
            raise _ambiguous(path, "Spark skips a file so named", "rename the file")
        return [path], []
    files: list[Path] = []
    summaries: list[Path] = []
    pending = [path]
    while pending:
        folder = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:  # Spark could not list it either: say so rather than check less than it reads
            raise InvalidInput(f"{folder}: cannot list the folder ({exc.strerror})", code="bad-file") from exc
        for entry in entries:
            found = Path(entry.path)
            if entry.name.startswith(_SUMMARY_NAMES):
                # Spark lists these whatever follows the prefix; only the exact names are summaries.
                if entry.name not in _SUMMARY_NAMES or not entry.is_file():
                    raise _ambiguous(
                        found,
                        "its name starts like a Parquet summary file's",
                        "rename it, or give the event files directly",
                    )
                summaries.append(found)
            elif _hidden(entry.name):
                continue
            elif entry.is_symlink() and entry.is_dir():
                raise _ambiguous(
                    found, "it is a symbolic link to a folder", "give the linked folder's files directly"
                )
            elif entry.is_dir():
                pending.append(found)
            elif entry.is_file():
                files.append(found)
            else:
                raise _ambiguous(found, "it is neither a file nor a folder", "move it out of the folder")
    return sorted(files), sorted(summaries)


def _hidden(name: str) -> bool:
    # Spark's rule for the names it leaves out of a folder (HadoopFSUtils.shouldFilterOutPathName, pinned by
    # `jobs._parquet_inputs`), once `_metadata*` names are dealt with: a name with `=` is a partition's, read
    # even when it starts with `_`.
    return name.endswith("._COPYING_") or name.startswith(".") or (name.startswith("_") and "=" not in name)


def _ambiguous(found: Path, why: str, hint: str) -> InvalidInput:
    return InvalidInput(
        f"{found}: Spark and the input check could read this differently: {why}", code="bad-file", hint=hint
    )


def _schema(file: Path) -> pa.Schema:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.read_schema(file)
    except (pa.ArrowException, OSError) as exc:
        raise _not_parquet(file, exc) from exc


def _check_file(file: Path, max_payload_bytes: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(file)
        schema = parquet.schema_arrow
    except (pa.ArrowException, OSError) as exc:
        raise _not_parquet(file, exc) from exc
    _check_schema(file, schema)
    columns = [name for name in ALLOWED if name in schema.names]
    if not columns:
        return
    row = 0
    try:
        for batch in parquet.iter_batches(batch_size=_BATCH_ROWS, columns=columns):
            for name in columns:
                _check_utf8(file, row, name, batch.column(name))
            if "tags" in columns:
                _check_tags(file, row, batch.column("tags"))
            if "payload" in columns:
                _check_payloads(file, row, batch.column("payload").to_pylist(), max_payload_bytes)
            row += batch.num_rows
    except (pa.ArrowException, OSError) as exc:
        raise InvalidInput(f"{file}: cannot read the Parquet data ({exc})", code="bad-file") from exc


def _not_parquet(file: Path, exc: Exception) -> InvalidInput:
    return InvalidInput(
        f"{file}: not a Parquet file ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})",
        code="bad-file",
        hint="give a .jsonl file of events, or a Parquet file with the columns type, key, tags, payload",
    )


def _check_schema(file: Path, schema: pa.Schema) -> None:
    import pyarrow as pa

    allowed = ", ".join(ALLOWED)
    repeated = sorted({name for name in schema.names if schema.names.count(name) > 1})
    if repeated:
        raise InvalidInput(
            f"{file}: column {repeated[0]!r} appears more than once",
            code="bad-file",
            details={"column": repeated[0]},
        )
    for field in schema:
        if field.name not in ALLOWED:
            raise InvalidInput(
                f"{file}: column {field.name!r} is not an event column; the columns are {allowed} "
                "(names are exact, lower case)",
                code="bad-file",
                hint="rename the column; seq, origin, origin_time and vt are assigned by replctl",
                details={"column": field.name},
            )
        kind = field.type
        strings = pa.types.is_string(kind) or pa.types.is_large_string(kind)
        if field.name == "tags":
            listed = pa.types.is_list(kind) or pa.types.is_large_list(kind)
            value = kind.value_type if listed else None
            ok = value is not None and (pa.types.is_string(value) or pa.types.is_large_string(value))
        else:
            ok = strings
        if not ok:
            wanted = "a list of strings" if field.name == "tags" else "a string"
            raise InvalidInput(
                f"{file}: column {field.name!r} is {kind}, not {wanted}",
                code="bad-file",
                details={"column": field.name},
            )


def _check_tags(file: Path, first_row: int, tags: Any) -> None:
    import pyarrow.compute as pc

    null = next(_null_rows(tags), None)
    if null is not None:
        raise InvalidInput(
            f"{file}: row {first_row + null + 1}: tags is null; tags is a list of strings (write [] for none)",
            code="bad-event",
        )
    values = pc.list_value_length(tags)
    flat = pc.list_flatten(tags)
    if flat.null_count:
        # The row that holds the first null element: count list lengths up to it.
        position = next(_null_rows(flat))
        total = 0
        for index, length in enumerate(values.to_pylist()):
            total += length or 0
            if total > position:
                raise InvalidInput(
                    f"{file}: row {first_row + index + 1}: tags holds null; tags is a list of strings",
                    code="bad-event",
                )


def _check_utf8(file: Path, first_row: int, name: str, column: Any) -> None:
    """Refuse a string that is not UTF-8: Parquet does not enforce it, Spark would store the bytes, and Python
    cannot decode them (the payload's check, the JVM-free writer)."""
    import pyarrow as pa

    try:
        column.validate(full=True)
        return
    except pa.ArrowInvalid:
        pass
    # Arrow names the bad string's index, not the row (a tag's index counts every row's tags): find the row.
    for index, value in enumerate(column.view(_as_binary(column.type)).to_pylist()):
        for text in value if isinstance(value, list) else [value]:
            try:
                if text is not None:
                    text.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InvalidInput(
                    f"{file}: row {first_row + index + 1}: {name} is not UTF-8 (byte {exc.start})",
                    code="bad-event",
                ) from exc
    # Arrow refused what Python decodes (it should not happen): still refuse, without a row to name.
    raise InvalidInput(f"{file}: {name} holds bytes that are not UTF-8", code="bad-event")


def _as_binary(kind: Any) -> Any:
    import pyarrow as pa

    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        listed = pa.large_list if pa.types.is_large_list(kind) else pa.list_
        return listed(_as_binary(kind.value_type))
    return pa.large_binary() if pa.types.is_large_string(kind) else pa.binary()


def _null_rows(array: Any) -> Iterator[int]:
    if not array.null_count:
        return
    for index, present in enumerate(array.is_valid().to_pylist()):
        if not present:
            yield index


def _check_payloads(file: Path, first_row: int, payloads: list[str | None], max_payload_bytes: int) -> None:
    for index, payload in enumerate(payloads):
        if payload is not None:
            where = f"{file}: row {first_row + index + 1}"
            check_payload_size(payload, where, max_payload_bytes)
            check_payload_text(payload, where)
