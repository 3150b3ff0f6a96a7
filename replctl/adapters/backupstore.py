"""The backup store (rules.md BK1): segment copies and manifests under one root, beside the log store.

Layout: `<root>/segments/<location>/seg-<first seq>-<uuid8>/` holds a copy of the log-store segment of the same
relative path (segments are immutable and their names unique, so one copy serves every backup that lists it),
and `<root>/manifests/<backup id>.json` the manifests. A segment is copied into a hidden temporary folder and
renamed into place, and the manifest is written last, atomically: a crash leaves at most unreferenced files,
never a manifest naming a missing or half-written segment.

Locally, each copied file and its temporary folder are fsynced before the rename, so a segment folder that shows
is whole on disk; the folders the renames changed are fsynced once each, just before the manifest that names
the copies is written (`put_manifest`). An fsync costs a disk round trip whatever it flushes (a busy disk makes
it long even for a folder that has not changed): once per backup for the folder that holds a location's copies,
not once per segment, is what a backup of many segments pays.

The root is a URI like the log store's (`adapters.logstore`): a path or `file://` is worked on with the local
file system; any other scheme the log store takes (`hdfs://`, `s3a://`, ...) through pyarrow's file systems,
as the log store removes remote segments. A move on an object store is not atomic, so there a copy no manifest
lists yet is copied again rather than trusted: the manifest stays the only proof that a copy is whole.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO
from urllib.parse import unquote, urlparse

from replctl.adapters.logstore import LogStore, arrow_uri
from replctl.adapters.remotefiles import folder_digest, folder_file_digests, folder_files, remote_failure
from replctl.core.backups import Manifest, age_order
from replctl.core.model import SegmentFile
from replctl.errors import EnvironmentFailure
from replctl.failpoints import hit
from replctl.localfiles import (
    combined_digest,
    digest,
    file_digests,
    kind_of,
    sync_file,
    sync_folder,
    write_atomically,
)

if TYPE_CHECKING:
    import pyarrow.fs as pafs

_CHUNK = 1 << 20
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_ID = re.compile(r"^[A-Za-z0-9_.-]+$")
# How a damaged copy set aside for the whole one replacing it is named: `.<segment folder>.<uuid8>.damaged`.
_ASIDE_SUFFIX = ".damaged"


def _is_data(relative: str) -> bool:
    # `_SUCCESS` markers and Hadoop's `.crc` side files are not data: readers skip them (LogStore.segment_files).
    return not any(part.startswith(("_", ".")) for part in relative.split("/"))


class BackupStore:
    """Segment copies and manifests of backups under one root: a local path, `file://`, or a remote URI."""

    def __init__(self, root: str | Path, *, filesystem: pafs.FileSystem | None = None) -> None:
        """`filesystem` works on `root` (a path within it) through that pyarrow file system, as a remote store
        is worked on; None chooses by the URI's scheme."""
        text = str(root).rstrip("/") or "/"
        self._fs: pafs.FileSystem | None = filesystem
        self._base = text
        self.uri = text
        self.root = Path(text)
        if filesystem is not None:
            return
        if not _SCHEME.match(text):
            self.root = Path(text).resolve()
        elif urlparse(text).scheme == "file":
            self.root = Path(unquote(urlparse(text).path))
        else:
            import pyarrow.fs as pafs

            try:
                self._fs, self._base = pafs.FileSystem.from_uri(arrow_uri(text))
            except (OSError, ValueError) as exc:  # ArrowInvalid/ArrowIOError derive from these
                failure = remote_failure(f"cannot open the backup store {text}", text, exc)
                raise EnvironmentFailure(
                    failure.message,
                    code="backup-store",
                    hint="check backup_store (or --to): a path, file://, or a URI the log store could use",
                ) from exc
        if self._fs is None:
            self.uri = self.root.as_uri()

    @property
    def is_local(self) -> bool:
        """True for a store worked on with the local file system (a path or `file://`)."""
        return self._fs is None

    @property
    def place(self) -> str:
        """Where the store is, for `replctl.storeroots`: a local root's absolute folder, else the URI as given."""
        return str(self.root) if self._fs is None else self.uri

    def not_a_folder(self) -> str | None:
        """What a local root is when something other than a folder is there (`"a file"`, `"a device"`...);
        None for a folder, for nothing there yet (the first backup creates it) and for a remote root."""
        if self._fs is not None or self.root.is_dir() or not self.root.exists():
            return None
        return kind_of(self.root) or "a file"

    def _segment(self, path: str) -> Path:
        return self.root.joinpath("segments", *path.split("/"))

    def _manifest(self, backup_id: str) -> Path:
        return self.root / "manifests" / f"{backup_id}.json"

    def _remote(self, *parts: str) -> str:
        return "/".join([self._base.rstrip("/"), *parts])

    def has_segment(self, path: str) -> bool:
        """Whether a complete copy of the segment at log-store path `path` is held (remote: never trusted
        without a manifest, see the module docstring)."""
        return self._fs is None and self._segment(path).is_dir()

    def put_segment(
        self,
        source: LogStore,
        path: str,
        names: Sequence[str] | None = None,
        *,
        recorded: Sequence[SegmentFile] | None = None,
    ) -> tuple[int, str]:
        """Copy the data files `names` of segment `path` of the log store `source` in as `path` (None: every
        data file of the folder, for a row that does not name its files; a file the row does not name is not
        the segment's, issue 19); returns (bytes, digest) of the copy. The folder appears only when whole (a
        rename; remote: a move, and the manifest vouches for it). A copy already there, which `backup create`
        found missing a file or of another size, is replaced by the whole one (`_set_aside`).

        Only data files are copied (`_is_data`): the manifest's digest covers every byte the backup holds.
        `_SUCCESS` and `.crc` made three of the four files of a Spark-written segment, and creating files is
        what a copy of small segments spends its time on.

        A file whose size and sha256 the segment's row `recorded` at write, copied from a local log store into
        a local backup store, is copied by the kernel (`shutil.copyfile`: no byte passes through Python, which
        made a full backup four times a `cp -r`, issue 16) and stands under the digest recorded at write, its
        copy's size checked against the row. That digest is what the log was written as: should the source
        file have changed since, `backup verify` and a restore, which hash the copy, find the backup damaged
        instead of vouching for the changed bytes. Any other file is read once, digested while copied.
        """
        target = f"segments/{path}"
        temporary = f"segments/{path.rsplit('/', 1)[0]}/.{path.rsplit('/', 1)[-1]}.{uuid.uuid4().hex[:8]}.tmp"
        holder = self._segment(path).parent
        new_holder = self._fs is None and not holder.is_dir()
        whole = hashlib.sha256()
        size = 0
        known = (
            {f.name: f for f in recorded or () if f.sha256 is not None}
            if source.is_local and self._fs is None
            else {}
        )
        try:
            self._make_folder(temporary)
            if new_holder:
                self._sync_above(holder)
            # The same digest as `segment_digest` of the copy: relative path and content of each file, sorted.
            for relative, opened in _source_files(source, path, names):
                if "/" in relative:
                    self._make_folder(f"{temporary}/{relative.rsplit('/', 1)[0]}", exist_ok=True)
                entry = known.get(relative)
                if entry is not None and entry.sha256 is not None:
                    size += self._copy_recorded(
                        source.local_path(path) / relative, f"{temporary}/{relative}", entry
                    )
                    file_sha = entry.sha256
                else:
                    sha = hashlib.sha256()
                    with opened() as src, self._create(f"{temporary}/{relative}") as dst:
                        while chunk := src.read(_CHUNK):
                            sha.update(chunk)
                            dst.write(chunk)
                            size += len(chunk)
                        if self._fs is None:
                            dst.flush()
                            os.fsync(dst.fileno())  # see `_copy_recorded`
                    file_sha = sha.hexdigest()
                whole.update(relative.encode() + b"\0")
                whole.update(file_sha.encode() + b"\n")
            aside: Path | None = None
            if self._fs is not None:
                # A copy a crashed backup left (no manifest vouches for it), or one a backup found damaged:
                # this whole one replaces it.
                self._remove_folder(target, missing_ok=True)
            else:
                # The names in the copy on disk before it shows (its files are already): a copy a backup
                # that died before its manifest left is whole, and a later backup keeps it (HELD). The
                # folder it is renamed into is synced before the manifest names it (`put_manifest`).
                for here, _, _ in os.walk(self.root.joinpath(*temporary.split("/")), topdown=False):
                    sync_folder(Path(here))
                aside = self._set_aside(path)  # a copy found damaged (`backup create`, BK1)
            self._move(temporary, target)
            if aside is not None:
                hit("backup.before-aside-removed")
                shutil.rmtree(aside, ignore_errors=True)
        except OSError as exc:
            with suppress(OSError):  # the failure to report is the copy's, not the clean-up's
                self._remove_folder(temporary, missing_ok=True)
            raise EnvironmentFailure(
                f"cannot copy {source.uri(path)} into the backup store {self.uri}: {exc}", code="backup-store"
            ) from exc
        return size, whole.hexdigest()

    def _set_aside(self, path: str) -> Path | None:
        """Move a copy `backup create` found damaged (a file missing or of another size, BK1) out of the way
        of the whole one about to be renamed into its place (a rename does not replace a folder that holds
        files); the caller removes it once the whole one is in place. A crash in between leaves the copy
        missing, which it already was in effect, and the next backup copies it again; the folder set aside is
        hidden, as a copy's temporary one is, and a crash before its removal leaves it for the next backup or
        prune of the location to remove (`remove_set_aside`). None when there is no copy to set aside."""
        folder = self._segment(path)
        if not folder.is_dir():
            return None
        aside = folder.with_name(f".{folder.name}.{uuid.uuid4().hex[:8]}{_ASIDE_SUFFIX}")
        folder.rename(aside)
        return aside

    def remove_set_aside(self, location: str) -> list[str]:
        """Remove the damaged copies of `location`'s segments that a recopy set aside (`_set_aside`) and a crash
        left behind; returns the folder names it removed. They are no copy of anything: no manifest names
        them, and nothing lists or counts them. Best effort, errors ignored: leftover junk that cannot be
        removed (permissions, a busy file) must not fail the backup or prune that tidies it (their dry runs
        say they would work); the next one tries again. Another catalog's recopy sharing the store removes its
        own with errors ignored, so removing one under it is harmless. Remote: none is ever set aside (a whole
        copy replaces a damaged one in place)."""
        if self._fs is not None:
            return []
        holder = self.root.joinpath("segments", *location.split("/"))
        try:
            entries = sorted(holder.iterdir()) if holder.is_dir() else []
        except OSError:
            return []
        removed = []
        for entry in entries:
            if entry.name.startswith(".") and entry.name.endswith(_ASIDE_SUFFIX) and entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
                if not entry.exists():
                    removed.append(entry.name)
        return removed

    def _copy_recorded(self, source: Path, relative: str, recorded: SegmentFile) -> int:
        """Kernel copy of one local file into the (local) store; its size must be the one recorded at write."""
        copy = self.root.joinpath(*relative.split("/"))
        shutil.copyfile(source, copy)
        # On disk before the manifest names it (BK1): a power cut must not leave a listed backup whose files
        # were still only in the page cache. Synced here, in the copying thread, while other copies go on.
        size = sync_file(copy)
        if size != recorded.size:
            # Segments are immutable: a different size is a damaged source, never a backup of it (DR0).
            raise OSError(f"{source} holds {size} bytes, but its segment row says {recorded.size}")
        return size

    def _sync_above(self, holder: Path) -> None:
        """A location's first copy made the folder that holds its copies: its name, and those above it up to
        the root, on disk now. Later backups sync only that folder (`put_manifest`): an fsync of a folder that
        has not changed still waits for the disk."""
        for folder in holder.parents:
            sync_folder(folder)
            if folder == self.root:
                return

    def segment_digest(self, path: str) -> str | None:
        """The digest of a held segment copy (as `put_segment` returns it), None when it is missing."""
        with _failing(f"cannot read the backup copy of {path}"):
            if self._fs is None:
                return digest(self._segment(path))
            return self._remote_digest(f"segments/{path}")

    def segment_digests(self, path: str) -> tuple[str, dict[str, str]] | None:
        """The digest of a held segment copy (as `segment_digest`) and each of its files' sha256 (relative
        name -> hex), from one read; None when it is missing."""
        with _failing(f"cannot read the backup copy of {path}"):
            if self._fs is None:
                folder = self._segment(path)
                files = file_digests(folder) if folder.is_dir() else None
            else:
                files = folder_file_digests(self._fs, self._remote("segments", path))
        return None if files is None else (combined_digest(files), files)

    def segment_bytes(self, path: str) -> int:
        """The bytes of a held segment copy's files (0 when there is none), from the same listing as
        `segment_sizes`."""
        return sum((self.segment_sizes(path) or {}).values())

    def segment_sizes(self, path: str) -> dict[str, int] | None:
        """The files of a held segment copy (path relative to it -> size), None when there is no copy: a
        listing and a stat per file, never a read, so that an incremental backup can check every copy it
        reuses (BK1). Remote: one listing, which gives the sizes; an empty folder there is no copy either."""
        with _failing(f"cannot list the backup copy of {path}"):
            if self._fs is None:
                return _local_sizes(self._segment(path))
            return {name: info.size or 0 for name, info in self._remote_files(f"segments/{path}")} or None

    def segment_store(self) -> LogStore:
        """The segment copies seen as a log store (same relative paths), for `backup verify` to read the
        backup's events with the code that reads live logs, without touching the live log."""
        return LogStore(self.root / "segments" if self._fs is None else f"{self.uri}/segments")

    def copy_segment_to(self, path: str, store: LogStore, relative: str) -> None:
        """Copy a held segment into the log store `store` as `relative` (BK2's restore), from a local or remote
        backup store into a local or remote log store. The caller checks the copy's digest against the
        manifest (`LogStore.segment_digest`) and removes it on any failure."""
        if self._fs is None and store.is_local:
            store.copy_folder_in(self._segment(path), relative)
            return
        if store.is_local:
            self._copy_to_local(path, store, relative)
        else:
            self._copy_to_remote(path, store, relative)

    def _held_files(self, path: str) -> list[tuple[str, Callable[[], BinaryIO]]]:
        """The files of a held segment copy as (relative name, opener), sorted by name."""
        if self._fs is None:
            folder = self._segment(path)
            return [
                (f.relative_to(folder).as_posix(), _opener(f))
                for f in sorted(folder.rglob("*"))
                if f.is_file()
            ]
        fs = self._fs
        return [
            (name, functools.partial(fs.open_input_stream, self._remote("segments", path, name)))
            for name, _ in self._remote_files(f"segments/{path}")
        ]

    def _copy_to_local(self, path: str, store: LogStore, relative: str) -> None:
        # A hidden temporary folder renamed into place: the segment folder appears only when whole.
        target = store.local_path(relative)
        temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.tmp")
        try:
            temporary.mkdir(parents=True)
            for name, opened in self._held_files(path):
                out = temporary.joinpath(*name.split("/"))
                out.parent.mkdir(parents=True, exist_ok=True)
                with opened() as src, out.open("xb") as dst:
                    while chunk := src.read(_CHUNK):
                        dst.write(chunk)
            temporary.rename(target)
        except OSError as exc:
            shutil.rmtree(temporary, ignore_errors=True)
            raise EnvironmentFailure(
                f"cannot copy the backup copy of {path} to {store.uri(relative)}: {exc}", code="store"
            ) from exc

    def _copy_to_remote(self, path: str, store: LogStore, relative: str) -> None:
        # Written in place, as Spark writes a segment there: an object store has no atomic folder move, and
        # the fresh path is named by no catalog row until the restore commits, so a torn copy is never read
        # (docs/stores.md); the restore removes it on failure.
        import pyarrow.fs as pafs

        fs, target = store.remote(relative)
        try:
            if fs.get_file_info(target).type != pafs.FileType.NotFound:
                raise EnvironmentFailure(
                    f"cannot copy onto an existing segment: {store.uri(relative)}", code="store"
                )
            fs.create_dir(target, recursive=True)
            for name, opened in self._held_files(path):
                if "/" in name:
                    fs.create_dir(f"{target}/{name.rsplit('/', 1)[0]}", recursive=True)
                with opened() as src, fs.open_output_stream(f"{target}/{name}") as dst:
                    while chunk := src.read(_CHUNK):
                        dst.write(chunk)
        except OSError as exc:  # ArrowIOError derives from it
            raise EnvironmentFailure(
                f"cannot copy the backup copy of {path} to {store.uri(relative)}: {exc}", code="store"
            ) from exc

    def remove_segment(self, path: str) -> None:
        """Remove a segment copy; removing what is absent is not an error."""
        with _failing(f"cannot remove the backup copy of {path}"):
            self._remove_folder(f"segments/{path}", missing_ok=True)

    def put_manifest(self, manifest: Manifest) -> None:
        """Write a manifest last and atomically: from then on the backup exists."""
        text = _manifest_text(manifest.to_json())
        with _failing(f"cannot write the manifest of {manifest.id} in {self.uri}"):
            if self._fs is None:
                target = self._manifest(manifest.id)
                if not target.parent.is_dir():
                    target.parent.mkdir(parents=True, exist_ok=True)
                    sync_folder(self.root)  # the name of the `manifests` folder just made
                # The renames that put the copies in place, on disk before the manifest names them (BK1):
                # one fsync per folder they went into (a location's), whatever the number of segments. The
                # folders above were synced when a location's first copy made its folder (`put_segment`).
                # From the paths' text: a Path per listed segment cost more than the fsync at 250 segments.
                for folder in sorted({s.path.rpartition("/")[0] for s in manifest.segments}):
                    sync_folder(self._segment(folder))
                write_atomically(target, text)
                return
            temporary = f"manifests/.{manifest.id}.{uuid.uuid4().hex[:8]}.tmp"
            self._fs.create_dir(self._remote("manifests"), recursive=True)
            with self._fs.open_output_stream(self._remote(temporary)) as out:
                out.write(text.encode("utf-8"))
            # One object: a move (copy, then delete on an object store) shows all of it or none.
            self._fs.move(self._remote(temporary), self._remote("manifests", f"{manifest.id}.json"))

    def remove_manifest(self, backup_id: str) -> None:
        """Remove a manifest: the backup stops existing (its files are removed after, by the caller)."""
        with _failing(f"cannot remove the backup {backup_id}"):
            if self._fs is None:
                self._manifest(backup_id).unlink(missing_ok=True)
            elif self._info(f"manifests/{backup_id}.json").type != _file_type("NotFound"):
                self._fs.delete_file(self._remote("manifests", f"{backup_id}.json"))

    def manifest(self, backup_id: str) -> Manifest | None:
        """One backup's manifest, None when there is none; a damaged manifest is an environment failure."""
        if not _ID.match(backup_id):
            return None
        try:
            if self._fs is None:
                text = self._manifest(backup_id).read_text(encoding="utf-8")
            else:
                with self._fs.open_input_stream(self._remote("manifests", f"{backup_id}.json")) as src:
                    text = src.read().decode("utf-8")
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise EnvironmentFailure(
                f"cannot read the backup {backup_id}: {exc}", code="backup-store"
            ) from exc
        try:
            return Manifest.from_json(json.loads(text))
        except (ValueError, KeyError, TypeError) as exc:
            raise EnvironmentFailure(
                f"the manifest of backup {backup_id} is damaged: {exc}", code="backup-damaged"
            ) from exc

    def manifests(self, location: str | None = None) -> list[Manifest]:
        """Every complete backup (one with a manifest), oldest first; only `location`'s when given.

        A backup id starts with its location (`core.backups.backup_id`), so the other locations' manifests
        are not even read: a backup's cost does not grow with the backups of other locations.
        """
        prefix = "" if location is None else f"{location}-"
        found = [
            self.manifest(name.removesuffix(".json"))
            for name in self._manifest_names()
            if name.endswith(".json") and name.startswith(prefix) and _ID.match(name.removesuffix(".json"))
        ]
        return sorted(
            (m for m in found if m is not None and location in (None, m.location)),
            key=age_order,
        )

    # --- the file operations, local or through pyarrow ----------------------------------------------------

    def _manifest_names(self) -> list[str]:
        with _failing(f"cannot list the backups in {self.uri}"):
            if self._fs is None:
                folder = self.root / "manifests"
                return [p.name for p in folder.iterdir()] if folder.is_dir() else []
            return [name for name, _ in self._remote_files("manifests", recursive=False)]

    def _info(self, relative: str) -> pafs.FileInfo:
        assert self._fs is not None
        return self._fs.get_file_info(self._remote(relative))

    def _remote_files(self, relative: str, *, recursive: bool = True) -> list[tuple[str, pafs.FileInfo]]:
        """The files under a remote folder as (path relative to it, info), sorted; [] when it is absent."""
        assert self._fs is not None
        return folder_files(self._fs, self._remote(relative), recursive=recursive)

    def _remote_digest(self, relative: str) -> str | None:
        assert self._fs is not None
        return folder_digest(self._fs, self._remote(relative))

    def _make_folder(self, relative: str, *, exist_ok: bool = False) -> None:
        if self._fs is None:
            self.root.joinpath(*relative.split("/")).mkdir(parents=True, exist_ok=exist_ok)
        else:
            self._fs.create_dir(self._remote(relative), recursive=True)

    def _create(self, relative: str) -> BinaryIO:
        if self._fs is None:
            return self.root.joinpath(*relative.split("/")).open("xb")
        stream: BinaryIO = self._fs.open_output_stream(self._remote(relative))
        return stream

    def _move(self, source: str, target: str) -> None:
        if self._fs is None:
            self.root.joinpath(*source.split("/")).rename(self.root.joinpath(*target.split("/")))
        else:
            self._fs.move(self._remote(source), self._remote(target))

    def _remove_folder(self, relative: str, *, missing_ok: bool) -> None:
        if self._fs is None:
            try:
                shutil.rmtree(self.root.joinpath(*relative.split("/")))
            except FileNotFoundError:
                if not missing_ok:
                    raise
            return
        if self._info(relative).type == _file_type("NotFound") and missing_ok:
            return
        self._fs.delete_dir(self._remote(relative))


def _local_sizes(folder: Path) -> dict[str, int] | None:
    """A local folder's files (relative path -> size), None when it is not there; `os.scandir` stats each
    entry once, where `rglob` and `is_file` would stat it twice."""
    found: dict[str, int] = {}
    pending = [("", str(folder))]
    while pending:
        prefix, here = pending.pop()
        try:
            entries = list(os.scandir(here))
        except (FileNotFoundError, NotADirectoryError):
            if here == str(folder):
                return None
            continue  # a subfolder removed while listed: its files are not there
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                pending.append((f"{prefix}{entry.name}/", entry.path))
            elif entry.is_file(follow_symlinks=False):
                found[prefix + entry.name] = entry.stat(follow_symlinks=False).st_size
    return found


def _manifest_text(doc: dict[str, Any]) -> str:
    """A manifest as JSON, one key per line and one segment per line, readable in a pager.

    Each value is encoded by `json`'s C encoder; `indent` would take its pure-Python one, whose cost grows with
    the segments a manifest lists and was a visible share of an incremental backup (issue 16; README)."""

    def value(key: str) -> str:
        if key == "segments" and doc[key]:
            return "[\n" + ",\n".join(f"  {json.dumps(s, sort_keys=True)}" for s in doc[key]) + "\n ]"
        return json.dumps(doc[key], sort_keys=True)

    return "{\n" + ",\n".join(f" {json.dumps(key)}: {value(key)}" for key in sorted(doc)) + "\n}\n"


@contextmanager
def _failing(what: str) -> Iterator[None]:
    """Translate a file-system failure into an environment failure (exit 6) that says what was being done."""
    try:
        yield
    except OSError as exc:  # ArrowIOError derives from it
        raise EnvironmentFailure(f"{what}: {exc}", code="backup-store") from exc


def _file_type(name: str) -> pafs.FileType:
    import pyarrow.fs as pafs

    found: pafs.FileType = getattr(pafs.FileType, name)
    return found


def _source_files(
    source: LogStore, path: str, names: Sequence[str] | None
) -> Iterator[tuple[str, Callable[[], BinaryIO]]]:
    """The data files of a log-store segment as (relative name, opener), sorted by name; the opener opens
    the file when called, so files are opened one at a time. Only `names` when the row names its files."""
    if names is not None:
        for name in sorted(names):
            if source.is_local:
                yield name, _opener(source.local_path(path) / name)
            else:
                yield name, _remote_opener(source, f"{path}/{name}")
        return
    if source.is_local:
        folder = source.local_path(path)
        for file in sorted(p for p in folder.rglob("*") if p.is_file()):
            relative = file.relative_to(folder).as_posix()
            if _is_data(relative):
                yield relative, _opener(file)
        return
    import pyarrow.fs as pafs

    fs, base = source.remote(path)
    found = fs.get_file_info(pafs.FileSelector(base, recursive=True))
    for info in sorted(found, key=lambda i: i.path):
        relative = info.path[len(base) :].lstrip("/")
        if info.type == pafs.FileType.File and _is_data(relative):
            yield relative, functools.partial(fs.open_input_stream, info.path)


def _remote_opener(source: LogStore, relative: str) -> Callable[[], BinaryIO]:
    fs, file = source.remote(relative)
    return functools.partial(fs.open_input_stream, file)


def _opener(file: Path) -> Callable[[], BinaryIO]:
    def open_for_reading() -> BinaryIO:
        return file.open("rb")

    return open_for_reading
