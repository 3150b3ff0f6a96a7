"""The layout of stored logs (architecture.md, "Where the data lives").

A store root is a path or a URI (`.replctl/logs`, `file:///srv/logs`, `hdfs://nn/logs`, `s3a://bucket/logs`).
A location's log is an ordered list of immutable segment directories `<location>/seg-<first seq>-<uuid8>`,
recorded in the catalog *relative* to the root so that a store can be moved. Store paths are joined with `/`
(they are URIs, not OS paths); only the local-file operations below touch the file system.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

from replctl.adapters.remotefiles import folder_digest, remote_failure
from replctl.core.model import Segment, StoreMarker
from replctl.errors import EnvironmentFailure, InvalidInput
from replctl.localfiles import digest, kind_of, make_folders

if TYPE_CHECKING:
    import pyarrow.fs as pafs

SEGMENT_PREFIX = "seg-"
# 19 digits hold every non-negative int64 seq, so names sort like their first seq.
_SEQ_DIGITS = 19
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_SEGMENT_NAME = re.compile(r"^seg-\d{19}-[0-9a-f]{8}$")


class LogStore:
    """Paths of the segments of every location's log under one root."""

    def __init__(self, root: str | Path, *, filesystem: pafs.FileSystem | None = None) -> None:
        """`filesystem` works on `root` (a path within it) through that pyarrow file system, as a remote store
        is worked on (tests run the remote paths on real folders so); None chooses by the URI's scheme."""
        text = str(root).rstrip("/") or "/"
        self._local: Path | None = None
        self._fs = filesystem
        if filesystem is None and not _SCHEME.match(text):
            self._local = Path(text).resolve()
        elif filesystem is None and urlparse(text).scheme == "file":
            # A file URI is percent-encoded (RFC 8089, `Path.as_uri()`); the folder is its decoded path.
            self._local = Path(unquote(urlparse(text).path))
        # Spark (Hadoop's `Path`) takes a path unencoded and encodes it itself: given `%20` it would write
        # to a folder literally named `%20`, beside the one local reads use. So a local root is handed over
        # decoded; other URIs are passed on as the operator wrote them.
        self.root = text if self._local is None else f"file://{self._local.as_posix()}"

    @property
    def is_local(self) -> bool:
        """True for a store on the local file system (plain path or `file://`)."""
        return self._local is not None

    @property
    def place(self) -> str:
        """Where the store is, for `replctl.storeroots`: a local root's absolute folder (decoded, never a URI
        whose `%` could be read twice), else the URI as given."""
        return self.root if self._local is None else str(self._local)

    def new_segment_path(self, location: str, first_seq: int) -> str:
        """A fresh relative path for a segment whose first event has seq `first_seq`."""
        _check_location(location)
        if first_seq < 0:
            raise InvalidInput(f"a seq is non-negative, got {first_seq}")
        return f"{location}/{SEGMENT_PREFIX}{first_seq:0{_SEQ_DIGITS}d}-{uuid.uuid4().hex[:8]}"

    def uri(self, relative: str) -> str:
        """The absolute URI of a relative store path, as Spark reads and writes it."""
        return f"{self.root}/{_check_relative(relative)}"

    # --- local stores only ---------------------------------------------------------------------------

    def local_path(self, relative: str) -> Path:
        """The file-system path of a relative store path (local stores only)."""
        if self._local is None:
            raise EnvironmentFailure(
                f"the store {self.root} is not on the local file system; this operation needs a local store",
                code="store",
            )
        return self._local.joinpath(*_check_relative(relative).split("/"))

    def exists(self, relative: str) -> bool:
        """Whether the segment (or any store path) exists."""
        return self.local_path(relative).exists()

    def remove(self, relative: str) -> None:
        """Remove a segment directory (or file); removing what is absent is not an error.

        Remote stores (s3a://, hdfs://, ...) go through pyarrow's file systems, so a physical deletion erases
        the data there too instead of leaving it behind after the catalog forgot it.
        """
        if self._local is None:
            self._remove_remote(relative)
            return
        path = self.local_path(relative)
        try:
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)
        except OSError as exc:
            raise EnvironmentFailure(f"cannot remove {self.uri(relative)}: {exc}", code="store") from exc

    def create_root(self, mode: int = 0o700) -> None:
        """Create the root folder of a local store, each missing folder with `mode` (remote stores are
        created by their own tools); an existing root keeps its permissions."""
        if self._local is not None:
            if kind := self._not_a_folder():
                # make_folders would pass over it, and the marker write would fail with "Not a directory".
                raise EnvironmentFailure(
                    f"cannot create the store {self.root}: it is {kind}, not a folder",
                    code="store",
                    hint="check --store (or REPLCTL_STORE): name a folder, or one that does not exist yet",
                )
            try:
                make_folders(self._local, mode)
            except OSError as exc:
                raise EnvironmentFailure(f"cannot create the store {self.root}: {exc}", code="store") from exc

    def check_root(self) -> None:
        """Refuse (exit 6) a local store whose root folder is not there: only `replctl init` creates one.

        Writing into a mistyped root would create it and scatter a log over two stores; reading one would
        find every segment missing and call the logs damaged.
        """
        if self._local is not None and not self._local.is_dir():
            kind = self._not_a_folder()
            where = f"is {kind}, not a folder" if kind else "does not exist"
            # The same refusal as a store without this catalog's marker (`services.store_identity`).
            raise EnvironmentFailure(
                f"store not found: {self.root} {where}; nothing was read as a log",
                code="store-not-found",
                hint="check --store (or REPLCTL_STORE): it must be the store `replctl init` created for this "
                "catalog",
            )

    def _not_a_folder(self) -> str | None:
        """What the local root is when something other than a folder is there (`"a file"`, `"a device"`...)."""
        if self._local is None or self._local.is_dir() or not self._local.exists():
            return None
        return kind_of(self._local) or "a file"

    def remote(self, relative: str) -> tuple[pafs.FileSystem, str]:
        """The pyarrow file system of a remote store and the path of `relative` on it (remote stores only)."""
        import pyarrow.fs as pafs

        if self._fs is not None:
            return self._fs, self.uri(relative)
        uri = self.uri(relative)
        try:
            fs, path = pafs.FileSystem.from_uri(arrow_uri(uri))
        except (OSError, ValueError) as exc:  # ArrowInvalid/ArrowIOError derive from these
            raise remote_failure(f"cannot open {uri}", uri, exc) from exc
        found: tuple[pafs.FileSystem, str] = (fs, path)
        return found

    def segment_digest(self, relative: str) -> str | None:
        """The digest of the segment at `relative` (relative path and sha256 of each file, sorted: what a
        backup's manifest records, BK1), on a local or a remote store; None when nothing is there."""
        try:
            if self._local is not None:
                return digest(self.local_path(relative))
            fs, path = self.remote(relative)
            return folder_digest(fs, path)
        except OSError as exc:  # ArrowIOError derives from it
            raise EnvironmentFailure(f"cannot read {self.uri(relative)}: {exc}", code="store") from exc

    def changed_files(self, segment: Segment) -> frozenset[str]:
        """The catalogued data files of `segment` held at their recorded size whose SHA-256 differs from the
        one its row recorded at write (`inventory.digest_differs`); none on a remote store."""
        # Here, not at the top: the inventory imports this module for its LogStore.
        from replctl.adapters.logstore.inventory import digest_differs

        return digest_differs(self, segment)

    def _remove_remote(self, relative: str) -> None:
        import pyarrow.fs as pafs

        uri = self.uri(relative)
        try:
            fs, path = self.remote(relative)
            if fs.get_file_info(path).type == pafs.FileType.Directory:
                fs.delete_dir(path)
            else:
                fs.delete_file(path)
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:  # ArrowInvalid/ArrowIOError derive from these
            raise EnvironmentFailure(f"cannot remove {uri}: {exc}", code="store") from exc

    def marker_uri(self) -> str:
        """Where the store's marker lives (for messages; `logstore.marker`)."""
        from replctl.adapters.logstore.marker import marker_uri

        return marker_uri(self)

    def root_exists(self) -> bool:
        """Whether the root folder exists (remote roots are taken to exist: their marker decides)."""
        from replctl.adapters.logstore.marker import root_exists

        return root_exists(self)

    def read_marker(self) -> StoreMarker | None:
        """The store's marker, None when it has none; an unreadable one exits 6 (`logstore.marker`)."""
        from replctl.adapters.logstore.marker import read_marker

        return read_marker(self)

    def write_marker(self, marker: StoreMarker) -> None:
        """Write the store's marker atomically (`logstore.marker`)."""
        from replctl.adapters.logstore.marker import write_marker

        write_marker(self, marker)

    def identity_extent(self, segment: Segment, origins: Sequence[str]) -> dict[str, tuple[int, int]]:
        """Per origin of `origins`, the smallest and largest origin_time stored in one local segment
        (`logstore.reader.identity_extent`)."""
        from replctl.adapters.logstore.reader import identity_extent

        return identity_extent(self, segment, origins)

    def list_segment_dirs(self, location: str) -> list[str]:
        """Relative paths of every segment directory of `location` in name (first seq) order.

        This includes orphans that no catalog row points to (a job that died before its commit); the caller
        compares with the catalog and removes them, it never reads them.
        """
        _check_location(location)
        folder = self.local_path(location)
        if not folder.is_dir():
            return []
        names = sorted(p.name for p in folder.iterdir() if p.is_dir() and _SEGMENT_NAME.match(p.name))
        return [f"{location}/{name}" for name in names]

    def segment_files(self, relative: str) -> dict[str, int] | None:
        """The data files of a segment as readers see them, name → size (None: the segment is gone, or the
        store is not local: only local stores are listed, so only they are censused).

        Names starting with `_` or `.` (`_SUCCESS`, checksum files) are not data: Spark skips them too.
        """
        if self._local is None:
            return None
        folder = self.local_path(relative)
        # One listing, and a stat of the data files only: the census runs before every write and every backup,
        # over every segment of the location (a pathlib listing stat'ed each name twice, side files too).
        try:
            with os.scandir(folder) as entries:
                return {
                    e.name: e.stat().st_size
                    for e in entries
                    if not e.name.startswith(("_", ".")) and e.is_file()
                }
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise EnvironmentFailure(f"cannot list {self.uri(relative)}: {exc}", code="store") from exc

    def file_sizes(self, relative: str, names: Sequence[str]) -> dict[str, int]:
        """Those of the data files `names` of the segment at `relative` that are there, name → size, as
        `segment_files` would list them ({} for a store that is not local).

        One stat per name and no listing: the census of a segment whose row names its files (DR0), run
        before every write and every backup over every segment of a location, took a listing of each folder
        (an open, two reads of its entries, a close) and a stat of each data file."""
        if self._local is None:
            return {}
        folder = self.local_path(relative)
        found = {}
        for name in names:
            if name.startswith(("_", ".")):
                continue  # not data, whatever a row says: `segment_files` would not list it
            try:
                info = (folder / name).stat()
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError as exc:
                raise EnvironmentFailure(
                    f"cannot read {self.uri(relative)}/{name}: {exc}", code="store"
                ) from exc
            if stat.S_ISREG(info.st_mode):
                found[name] = info.st_size
        return found

    def copy_segment(self, src_rel: str, dst_rel: str, names: Sequence[str] | None = None) -> None:
        """Copy a segment's data files `names` (None: its whole folder, for rows that do not name them); a
        copy of immutable files is a valid segment."""
        self.copy_folder_in(self.local_path(src_rel), dst_rel, names)

    def copy_folder_in(self, src: Path, dst_rel: str, names: Sequence[str] | None = None) -> None:
        """Copy the files `names` of a segment folder from anywhere on the local file system (a backup's
        copy) to `dst_rel`; None copies the whole folder. A named file that is missing fails the copy."""
        dst = self.local_path(dst_rel)
        if dst.exists():
            raise EnvironmentFailure(
                f"cannot copy onto an existing segment: {self.uri(dst_rel)}", code="store"
            )
        try:
            dst.parent.mkdir(parents=True, exist_ok=True)
            if names is None:
                shutil.copytree(src, dst)
                return
            dst.mkdir()
            for name in names:
                shutil.copy2(src / name, dst / name)
        except OSError as exc:
            raise EnvironmentFailure(f"cannot copy {src} to {dst_rel}: {exc}", code="store") from exc


def arrow_uri(uri: str) -> str:
    """A store URI as pyarrow's file systems name it (Hadoop's s3a:// is pyarrow's s3://)."""
    return "s3://" + uri.removeprefix("s3a://") if uri.startswith("s3a://") else uri


def _check_location(location: str) -> None:
    # A location id becomes a directory name: it must stay one path component.
    if not location or "/" in location or "\\" in location or location in {".", ".."}:
        raise InvalidInput(f"not a valid location id for a store path: {location!r}")


def _check_relative(relative: str) -> str:
    parts = relative.strip("/").split("/")
    if relative.startswith("/") or not relative or any(p in {"", ".", ".."} for p in parts):
        raise InvalidInput(f"not a relative store path: {relative!r}")
    return "/".join(parts)
