"""Folders of files on a pyarrow file system (a remote store: `hdfs://`, `s3a://`, ...): listing and digest.

The log store and the backup store both read segment folders there; the digest is the one
`localfiles.digest` takes of a local folder (relative path and sha256 of each file, sorted), so a copy made
on one kind of store can be checked against a digest taken on the other (BK1, BK2).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow.fs as pafs

_CHUNK = 1 << 20


def folder_files(
    fs: pafs.FileSystem, base: str, *, recursive: bool = True
) -> list[tuple[str, pafs.FileInfo]]:
    """The files under the folder `base` as (path relative to it, info), sorted; [] when it is absent."""
    import pyarrow.fs as pafs

    if fs.get_file_info(base).type != pafs.FileType.Directory:
        return []
    found = fs.get_file_info(pafs.FileSelector(base, recursive=recursive))
    return sorted((i.path[len(base) :].lstrip("/"), i) for i in found if i.type == pafs.FileType.File)


def folder_digest(fs: pafs.FileSystem, base: str) -> str | None:
    """The digest of the folder `base` as `localfiles.digest` takes it; None when nothing is there."""
    import pyarrow.fs as pafs

    files = folder_files(fs, base)
    if not files and fs.get_file_info(base).type == pafs.FileType.NotFound:
        return None
    whole = hashlib.sha256()
    for name, _ in files:
        sha = hashlib.sha256()
        with fs.open_input_stream(f"{base.rstrip('/')}/{name}") as src:
            while chunk := src.read(_CHUNK):
                sha.update(chunk)
        whole.update(name.encode() + b"\0")
        whole.update(sha.hexdigest().encode() + b"\n")
    return whole.hexdigest()
