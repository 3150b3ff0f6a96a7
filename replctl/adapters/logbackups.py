"""The backup store of one log store: the `services.ports.BackupStore` port over `adapters.backupstore`.

A `BackupStore` copies from and into whichever log store it is handed; the services see a backup store bound
to the log store it backs up (the composition root binds them), so no service holds two adapters to pair.
The backup's own events are read by a data plane over its segment copies, built by `reader` on first use
(a command that reads no event never starts Spark).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from replctl.adapters.backupstore import BackupStore
from replctl.adapters.dataplane import Engine
from replctl.adapters.logstore import LogStore
from replctl.core.backups import Manifest
from replctl.core.model import SegmentFile


class LogBackups:
    """The backup store `backups` of the log store `live`; `reader` makes the data plane over its copies."""

    def __init__(self, backups: BackupStore, live: LogStore, reader: Callable[[LogStore], Engine]) -> None:
        self.backups = backups
        self.live = live
        self._reader = reader
        self._copies: Engine | None = None

    def roots(self) -> tuple[str, str]:
        """(backup store, log store): where each is (`place`)."""
        return self.backups.place, self.live.place

    def not_a_folder(self) -> str | None:
        """What the backup store's root is when it is there but no folder (a file...); else None."""
        return self.backups.not_a_folder()

    def manifests(self, location: str | None = None) -> list[Manifest]:
        """Every complete backup, oldest first; only `location`'s when given."""
        return self.backups.manifests(location)

    def manifest(self, backup_id: str) -> Manifest | None:
        """One backup's manifest, None when there is none."""
        return self.backups.manifest(backup_id)

    def put_manifest(self, manifest: Manifest) -> None:
        """Write a manifest last and atomically."""
        self.backups.put_manifest(manifest)

    def remove_manifest(self, backup_id: str) -> None:
        """Remove a manifest."""
        self.backups.remove_manifest(backup_id)

    def has_segment(self, path: str) -> bool:
        """Whether a complete copy of the segment is held."""
        return self.backups.has_segment(path)

    def segment_bytes(self, path: str) -> int:
        """The bytes of a held segment copy's files."""
        return self.backups.segment_bytes(path)

    def segment_digest(self, path: str) -> str | None:
        """The digest of a held segment copy, None when it is missing."""
        return self.backups.segment_digest(path)

    def segment_digests(self, path: str) -> tuple[str, dict[str, str]] | None:
        """The digest of a held segment copy and each of its files', None when it is missing."""
        return self.backups.segment_digests(path)

    def segment_sizes(self, path: str) -> dict[str, int] | None:
        """The files of a held segment copy and their sizes, None when it is missing."""
        return self.backups.segment_sizes(path)

    def remove_segment(self, path: str) -> None:
        """Remove a segment copy."""
        self.backups.remove_segment(path)

    def remove_set_aside(self, location: str) -> list[str]:
        """Remove the damaged copies a crashed recopy left set aside (`BackupStore.remove_set_aside`)."""
        return self.backups.remove_set_aside(location)

    def copy_in(
        self, path: str, names: Sequence[str] | None, *, recorded: Sequence[SegmentFile] | None
    ) -> tuple[int, str]:
        """Copy the live log's segment `path` in (`BackupStore.put_segment`)."""
        return self.backups.put_segment(self.live, path, names, recorded=recorded)

    def copy_out(self, path: str, relative: str) -> None:
        """Copy a held segment into the live log store as `relative` (`BackupStore.copy_segment_to`)."""
        self.backups.copy_segment_to(path, self.live, relative)

    def copies(self) -> Engine:
        """The data plane over the segment copies (`BackupStore.segment_store`), made once."""
        if self._copies is None:
            self._copies = self._reader(self.backups.segment_store())
        return self._copies
