"""Files on the operator's machine: content digests, atomic replacement, and the folders replctl creates.

Plans digest the input files they were made from, appends digest their input to recognise a re-run, and plan
files and HTML reports are written so that a reader never sees half of one, never through a link, FIFO or
device, and readable by the owner only unless configured. One implementation serves all.
"""

from __future__ import annotations

import hashlib
import os
import stat
import uuid
from collections.abc import Mapping
from pathlib import Path

from replctl.errors import InvalidInput

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
        return combined_digest(file_digests(path))
    if path.is_file():
        return file_digest(path)
    return None


def file_digests(folder: Path) -> dict[str, str]:
    """The sha256 (hex) of each file under `folder`, by path relative to it, sorted; OSError propagates."""
    return {
        file.relative_to(folder).as_posix(): file_digest(file)
        for file in sorted(p for p in folder.rglob("*") if p.is_file())
    }


def combined_digest(files: Mapping[str, str]) -> str:
    """A folder's digest from its files' (`file_digests`): relative path and sha256 of each file, sorted by
    path; what `digest` takes of a local folder and `adapters.remotefiles` of a remote one."""
    whole = hashlib.sha256()
    for name in sorted(files):
        whole.update(name.encode() + b"\0")
        whole.update(files[name].encode() + b"\n")
    return whole.hexdigest()


def size(path: Path) -> int | None:
    """The size in bytes of a file, or of a folder's files together (a Parquet dataset); None when nothing
    is there. OSError propagates, as for `digest`."""
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    if path.is_file():
        return path.stat().st_size
    return None


# The kinds of file system entry that are not a regular file, as messages name them.
_KINDS = {
    stat.S_ISLNK: "a symbolic link",
    stat.S_ISFIFO: "a FIFO",
    stat.S_ISCHR: "a device",
    stat.S_ISBLK: "a device",
    stat.S_ISSOCK: "a socket",
    stat.S_ISDIR: "a folder",
}


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS.items() if test(mode)), "not a regular file")


def kind_of(path: Path) -> str | None:
    """What `path` is when it is there but is no regular file (`"a folder"`, `"a device"`, ...), following
    links as a reader does; None for a regular file or for nothing there (a broken link too).

    So a refusal to read one says what the operator named instead of "no such file".
    """
    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    return None if stat.S_ISREG(mode) else _kind(mode)


def check_replaceable(path: Path) -> None:
    """Refuse (exit 2) to write over anything but a regular file: a symbolic link, a FIFO, a device, a socket
    or a folder at `path`.

    Following a link would replace a file elsewhere (with the report's permissions); opening a FIFO would
    block, and a device would receive the text.
    """
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise InvalidInput(f"cannot write {path}: {exc.strerror}", code="bad-path") from exc
    if stat.S_ISREG(mode):
        return
    raise InvalidInput(
        f"refusing to write {path}: it is {_kind(mode)}",
        code="bad-path",
        hint="name a new file, or a regular file to replace",
    )


def write_atomically(path: Path, text: str, mode: int = 0o600) -> int:
    """Replace `path` with `text` (UTF-8) through a temporary file beside it, fsync and rename.

    A reader (a browser refreshing, `replctl apply`, a file share syncing) sees the old file or the whole new
    one. Only a regular file is replaced (`check_replaceable`, exit 2). The new file has exactly `mode`
    (owner-only unless configured: plans and reports describe the topology and the journal). Returns the
    size in bytes; OSError propagates after the temporary file is removed.
    """
    check_replaceable(path)
    data = text.encode("utf-8")
    # Next to the target, so that the rename stays within one file system and is atomic.
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
        with os.fdopen(descriptor, "wb") as handle:
            os.fchmod(descriptor, mode)  # the umask may have taken bits the configuration asked for
            handle.write(data)
            handle.flush()
            os.fsync(descriptor)
        # rename() replaces a link itself, never its target: one swapped in since the check is not followed.
        temporary.replace(path)
    except OSError:
        temporary.unlink(missing_ok=True)
        raise
    sync_folder_entry(path)
    return len(data)


def sync_file(path: Path) -> int:
    """fsync one file, so that what a later write (a backup's manifest, BK1) vouches for is on disk, not only
    in the page cache; returns its size. The folder naming it is synced separately (`sync_folder`)."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
        return os.fstat(descriptor).st_size
    finally:
        os.close(descriptor)


def sync_folder(folder: Path) -> None:
    """fsync a folder: the names in it (a new file, a rename) are durable only once it is."""
    _fsync(folder, os.O_RDONLY | os.O_DIRECTORY)


def sync_folder_entry(path: Path) -> None:
    """fsync the folder holding `path`: a rename or a new file is durable only once its folder is."""
    sync_folder(path.parent)


def _fsync(path: Path, flags: int) -> None:
    descriptor = os.open(path, flags)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
