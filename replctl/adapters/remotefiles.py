"""Folders of files on a pyarrow file system (a remote store: `hdfs://`, `s3a://`, ...): listing and digest.

The log store and the backup store both read segment folders there; the digest is the one
`localfiles.digest` takes of a local folder (relative path and sha256 of each file, sorted), so a copy made
on one kind of store can be checked against a digest taken on the other (BK1, BK2).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from replctl.errors import EnvironmentFailure
from replctl.localfiles import combined_digest

if TYPE_CHECKING:
    import pyarrow.fs as pafs

_CHUNK = 1 << 20
# The longest cause a remote failure quotes: pyarrow's own text can run to thousands of characters (every
# folder where it looked for libjvm), one line of an operator's terminal is what it deserves.
_CAUSE_CHARS = 160
# pyarrow's words for a client library it could not load, and what that means to an operator.
_LIBRARIES = {
    "Unable to load libjvm": "pyarrow's HDFS client cannot load Java (libjvm)",
    "Unable to load libhdfs": "pyarrow's HDFS client cannot load libhdfs",
}
_HDFS_HINT = (
    "check the name node in --store (or REPLCTL_STORE) is reachable; pyarrow's HDFS client needs JAVA_HOME, "
    "HADOOP_HOME and CLASSPATH=$(hadoop classpath --glob)"
)


def remote_failure(what: str, uri: str, exc: BaseException, *, code: str = "store") -> EnvironmentFailure:
    """The exit-6 failure of a remote store's file system at `uri` (`what` failed): one short line naming the
    cause, and a hint for its scheme, instead of pyarrow's text (multi-line, escaped, thousands of characters
    when the HDFS client's libraries are not found)."""
    return EnvironmentFailure(f"{what}: {remote_cause(exc)}", code=code, hint=_remote_hint(uri))


def remote_cause(exc: BaseException) -> str:
    """The first line of a pyarrow file-system error, in plain words where they are known, cut short."""
    text = str(exc).replace("\\n", "\n").strip()
    first = text.split("\n", 1)[0].strip() or type(exc).__name__
    for prefix, meaning in _LIBRARIES.items():
        if first.startswith(prefix):
            return meaning
    return first if len(first) <= _CAUSE_CHARS else first[: _CAUSE_CHARS - 1].rstrip() + "…"


def _remote_hint(uri: str) -> str:
    if uri.lower().startswith(("hdfs://", "viewfs://")):
        return _HDFS_HINT
    return "check --store (or REPLCTL_STORE): the store must be reachable with the credentials Spark is given"


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
    files = folder_file_digests(fs, base)
    return None if files is None else combined_digest(files)


def folder_file_digests(fs: pafs.FileSystem, base: str) -> dict[str, str] | None:
    """The sha256 of each file under the folder `base`, by path relative to it (`localfiles.file_digests`);
    None when nothing is there."""
    import pyarrow.fs as pafs

    files = folder_files(fs, base)
    if not files and fs.get_file_info(base).type == pafs.FileType.NotFound:
        return None
    found = {}
    for name, _ in files:
        sha = hashlib.sha256()
        with fs.open_input_stream(f"{base.rstrip('/')}/{name}") as src:
            while chunk := src.read(_CHUNK):
                sha.update(chunk)
        found[name] = sha.hexdigest()
    return found
