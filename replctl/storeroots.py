"""Store roots, and whether two stores overlap: a backup store must lie apart from the log store (BK1, BK2).

A root is a local path, a `file://` URI or a remote URI (`hdfs://nn/logs`, `s3a://bucket/logs`). Two roots
*overlap* when they are the same folder or one lies inside the other: the log store keeps one folder per
location, so a backup store inside it looks like a location's log (and recovery, compaction, drills and the
census of unknown files may remove or misread its files), and one that holds the log store mixes its own
folders with the logs'.

`root_of` normalises a root; `overlap` is the pure decision on two normalised roots. A local root is compared
as the file system sees it (user expanded, resolved through symlinks and `..`, no trailing slash), so
`/srv/logs/`, `file:///srv/logs` and a link to it are one place. That asks the file system, which is why this
lives beside the other local-file helpers and not in `core`. A remote root is compared as text (scheme,
authority, path by segments): replctl cannot ask an object store or a name node whether `s3a://b/x` and
`s3://b/x`, or `hdfs://nn/x` and `hdfs://nn:8020/x`, name one place, so it takes them for different ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from urllib.parse import unquote, urlsplit

from replctl.errors import InvalidInput

# As the stores read a root (adapters.logstore, adapters.backupstore): a scheme followed by `://`.
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
LOCAL = "file"


class Overlap(Enum):
    """How a first root stands to a second one that it overlaps; the value reads between the two."""

    SAME = "is"
    INSIDE = "is inside"
    CONTAINS = "contains"


@dataclass(frozen=True)
class StoreRoot:
    """A normalised root: scheme (`file` for a local one), authority, and its path's segments."""

    scheme: str
    authority: str
    segments: tuple[str, ...]

    def __str__(self) -> str:
        path = "/" + "/".join(self.segments)
        return path if self.scheme == LOCAL else f"{self.scheme}://{self.authority}{path}"

    def child(self, name: str) -> StoreRoot:
        """The root of the folder `name` in this one."""
        return StoreRoot(self.scheme, self.authority, (*self.segments, name))

    @property
    def parent(self) -> StoreRoot | None:
        """The folder that holds this root; None for the top of a file system or bucket."""
        if not self.segments:
            return None
        return StoreRoot(self.scheme, self.authority, self.segments[:-1])


def check_root_text(text: str, where: str, *, code: str = "bad-option") -> None:
    """Refuse (exit 2) a root as given (`--store`, `--to`, store = ... in the config) that no store reads as
    the operator meant: an empty one, which a path would take for the working directory, and `file:` without
    `//` (`file:logs`), which the stores, reading a scheme only before `://`, would take for a folder
    literally named `file:logs`, and a file URI naming a host (`file://srv/logs`), whose host the stores
    ignore. `where` names the setting in the message."""
    if not text.strip():
        raise InvalidInput(
            f"{where} is empty: it names no store",
            code=code,
            hint="give a folder, a file:/// URI or a remote URI (hdfs://, s3a://)",
        )
    if text[:5].lower() == "file:" and not text[5:].startswith("//"):
        path = text[5:]
        raise InvalidInput(
            f"{where} {text!r} is not a file URI replctl reads: a file URI is file:///ABSOLUTE/PATH",
            code=code,
            hint=f"give the path without file: ({path}), or file:///ABSOLUTE/PATH",
        )
    if text[:7].lower() == "file://":
        host = urlsplit(text).netloc
        if host and host.lower() != "localhost":
            # `file://srv/logs` reads as host `srv`, path `/logs`: the stores open the path (RFC 8089), so
            # the logs would go to /logs, not to the srv/logs the operator most likely meant.
            raise InvalidInput(
                f"{where} {text!r} names the host {host!r}: replctl reads only local file URIs, and would "
                f"open {unquote(urlsplit(text).path) or '/'} there",
                code=code,
                hint=f"give file:///ABSOLUTE/PATH (three slashes), or the path itself: {text[7:]}",
            )


def root_of(text: str) -> StoreRoot:
    """Normalise a root as given to `--store`, `--to` or `backup_store`.

    Local (a path or `file://`): user expanded, made absolute against the working directory and resolved
    through symlinks, as the file system will see it. Remote: the scheme in lower case (RFC 3986 ignores its
    case), the authority as written, the path split into its non-empty segments.
    """
    if not _SCHEME.match(text):
        return _local(text)
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme == LOCAL:
        # As the stores open it: the decoded path, whatever host the URI names (RFC 8089).
        return _local(unquote(parts.path) or "/")
    return StoreRoot(scheme, parts.netloc, tuple(s for s in parts.path.split("/") if s))


def _local(path: str) -> StoreRoot:
    resolved = Path(path).expanduser().resolve()
    return StoreRoot(LOCAL, "", resolved.parts[1:])


def overlap(first: StoreRoot, second: StoreRoot) -> Overlap | None:
    """How `first` stands to `second`: the same root, inside it, or containing it; None when they are apart.

    Pure: a prefix of whole path segments on the same scheme and authority (`/srv/logs2` is apart from
    `/srv/logs`)."""
    if (first.scheme, first.authority) != (second.scheme, second.authority):
        return None
    a, b = first.segments, second.segments
    if a == b:
        return Overlap.SAME
    if b[: len(a)] == a:
        return Overlap.CONTAINS
    if a[: len(b)] == b:
        return Overlap.INSIDE
    return None


def apart_from(root: StoreRoot, name: str = "backups") -> StoreRoot | None:
    """A folder beside `root` that does not overlap it: `name` in its parent (so `<home>/backups` beside the
    default `<home>/logs`), `<root's name>-<name>` when `root` is itself called `name`; None for a top folder.
    """
    if root.parent is None:
        return None
    beside = root.parent.child(name)
    return beside if overlap(beside, root) is None else root.parent.child(f"{root.segments[-1]}-{name}")
