"""The store marker: a small JSON file at the store root naming the catalog the store belongs to, and how far
that catalog had got (its version with that version's lineage token, each location's seq) when a command last
changed it through this store.

`replctl init` writes it; every command that reads or writes the store compares it with the catalog
(`services.store_identity`). Local stores are read and written through the file system, remote ones
(`hdfs://`, `s3a://`) through pyarrow's file systems, as `LogStore.remove` does.
"""

from __future__ import annotations

import json
import os
import tempfile
from datetime import datetime
from pathlib import Path

from replctl.adapters.logstore import LogStore, arrow_uri
from replctl.adapters.remotefiles import remote_failure
from replctl.core.model import StoreMarker
from replctl.errors import EnvironmentFailure

MARKER_NAME = "replctl-store.json"


def marker_uri(store: LogStore) -> str:
    """Where the marker of `store` lives (for messages)."""
    return store.uri(MARKER_NAME)


def root_exists(store: LogStore) -> bool:
    """Whether the store's root folder exists (remote roots are taken to exist: their marker decides)."""
    if not store.is_local:
        return True
    return store.local_path(MARKER_NAME).parent.is_dir()


def read_marker(store: LogStore) -> StoreMarker | None:
    """The store's marker, or None when it has none; an unreadable marker is an environment failure."""
    try:
        if store.is_local:
            path = store.local_path(MARKER_NAME)
            if not path.is_file():
                return None
            text: str | None = path.read_text(encoding="utf-8")
        else:
            try:
                text = _read_remote(store)
            except OSError as exc:  # pyarrow's errors derive from it: the file system is not reached
                raise remote_failure(
                    f"the store marker {marker_uri(store)} cannot be read",
                    store.root,
                    exc,
                    code="store-marker",
                ) from exc
        if text is None:
            return None
        doc = json.loads(text)
        return StoreMarker(
            str(doc["catalog_id"]),
            datetime.fromisoformat(str(doc["created_at"])),
            int(doc.get("catalog_version", 0)),
            {str(name): int(seq) for name, seq in doc.get("seqs", {}).items()},
            _token(doc.get("catalog_version_token")),
        )
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        raise EnvironmentFailure(
            f"the store marker {marker_uri(store)} cannot be read: {exc}",
            code="store-marker",
            hint="check --store; the marker is written by `replctl init`",
        ) from exc


def write_marker(store: LogStore, marker: StoreMarker) -> None:
    """Write the marker through a temporary file renamed into place, so a reader never sees half of it."""
    doc: dict[str, object] = {"catalog_id": marker.catalog_id, "created_at": marker.created_at.isoformat()}
    if marker.catalog_version or marker.seqs:
        doc |= {"catalog_version": marker.catalog_version, "seqs": dict(sorted(marker.seqs.items()))}
    if marker.version_token is not None:
        doc["catalog_version_token"] = marker.version_token
    text = json.dumps(doc) + "\n"
    try:
        if store.is_local:
            path = store.local_path(MARKER_NAME)
            fd, tmp = tempfile.mkstemp(prefix=".marker-", dir=path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
            Path(tmp).replace(path)
        else:
            _write_remote(store, text)
    except OSError as exc:
        raise EnvironmentFailure(
            f"cannot write the store marker {marker_uri(store)}: {exc}", code="store"
        ) from exc


def _token(value: object) -> str | None:
    """The lineage token as read: absent (a marker written by an older replctl) is None; anything but a string
    is a damaged marker (a token read as another type would refuse every catalog)."""
    if value is None or isinstance(value, str):
        return value
    raise ValueError(f"catalog_version_token is not a string: {value!r}")


def _read_remote(store: LogStore) -> str | None:
    import pyarrow.fs as pafs

    fs, path = pafs.FileSystem.from_uri(arrow_uri(marker_uri(store)))
    if fs.get_file_info(path).type != pafs.FileType.File:
        return None
    with fs.open_input_stream(path) as stream:
        data: bytes = stream.read()
    return data.decode("utf-8")


def _write_remote(store: LogStore, text: str) -> None:
    import pyarrow.fs as pafs

    fs, path = pafs.FileSystem.from_uri(arrow_uri(marker_uri(store)))
    with fs.open_output_stream(path) as stream:
        stream.write(text.encode("utf-8"))
