"""Files on the operator's machine (not the log store): content digests and atomic replacement.

Plans digest the input files they were made from, appends digest their input to recognise a re-run, and plan
files and HTML reports are written so that a reader never sees half of one. One implementation serves all.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from pathlib import Path

_CHUNK = 1 << 20


def make_folders(folder: Path, mode: int) -> None:
    """Create `folder` and its missing parents, each with exactly `mode` (the umask does not narrow it);
    folders that exist keep their permissions."""
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    for each in reversed(missing):
        try:
            each.mkdir(mode=mode)
        except FileExistsError:
            continue  # made meanwhile by another process: it is theirs to set
        each.chmod(mode)


def file_digest(path: Path) -> str:
    """The sha256 (hex) of one file's bytes, read in chunks."""
    sha = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            sha.update(chunk)
    return sha.hexdigest()


def digest(path: Path) -> str | None:
    """The sha256 (hex) of a file, or of a folder's files by relative path and content (a Parquet dataset);
    None when nothing is there. OSError propagates: the caller says what could not be read and why."""
    if path.is_dir():
        whole = hashlib.sha256()
        for file in sorted(p for p in path.rglob("*") if p.is_file()):
            whole.update(file.relative_to(path).as_posix().encode() + b"\0")
            whole.update(file_digest(file).encode() + b"\n")
        return whole.hexdigest()
    if path.is_file():
        return file_digest(path)
    return None


def write_atomically(path: Path, text: str) -> int:
    """Replace `path` with `text` (UTF-8) through a temporary file beside it, fsync and rename.

    A reader (a browser refreshing, `replctl apply`, a file share syncing) sees the old file or the whole new
    one. The temporary file is created with mode "x", so the umask applies as for any file the user writes
    (mkstemp would make it private). Returns the size in bytes; OSError propagates after the temporary file is
    removed.
    """
    data = text.encode("utf-8")
    # Next to the target, so that the rename stays within one file system and is atomic.
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with temporary.open("xb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        temporary.replace(path)
    except OSError:
        temporary.unlink(missing_ok=True)
        raise
    return len(data)
