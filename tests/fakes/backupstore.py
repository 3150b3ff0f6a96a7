"""An in-memory backup store: the `replctl.services.ports.BackupStore` port over dicts, bound to a `FakeStore`.

Manifests are kept by id as the real store keeps their files; segment copies live in a `FakeStore` of their
own (same relative paths), so a backup's events are read back by a `FakeDataPlane` over it, as the real store's
copies are read by a Spark data plane over its `segments/` folder. Like the fake log store, a copy's "bytes"
are its row count and its digest the fake store's digest of its rows. The service stories of backups and
restores run on it and on the real adapters (tests/services), which keeps it honest.
"""

from __future__ import annotations

from collections.abc import Sequence

from fakes.dataplane import DATA_FILE, FakeDataPlane, FakeStore
from replctl.core.backups import Manifest, age_order
from replctl.core.model import SegmentFile
from replctl.errors import EnvironmentFailure


class FakeBackupStore:
    """Backups of the fake log store `live`: manifests by id and segment copies in a store of their own."""

    def __init__(self, live: FakeStore, roots: tuple[str, str] = ("mem://backups", "mem://logs")) -> None:
        self.live = live
        self._roots = roots
        self.held = FakeStore()
        self.written: dict[str, Manifest] = {}

    def roots(self) -> tuple[str, str]:
        """(backup store, log store) as given: in memory they are apart unless a test says otherwise."""
        return self._roots

    def not_a_folder(self) -> str | None:
        """In memory the root is always a folder."""
        return None

    def manifests(self, location: str | None = None) -> list[Manifest]:
        """Every backup with a manifest, oldest first; only `location`'s when given."""
        return sorted((m for m in self.written.values() if location in (None, m.location)), key=age_order)

    def manifest(self, backup_id: str) -> Manifest | None:
        """One backup's manifest, None when there is none."""
        return self.written.get(backup_id)

    def put_manifest(self, manifest: Manifest) -> None:
        """The backup exists from now on."""
        self.written[manifest.id] = manifest

    def remove_manifest(self, backup_id: str) -> None:
        """The backup stops existing; its copies stay until removed."""
        self.written.pop(backup_id, None)

    def has_segment(self, path: str) -> bool:
        """Whether a copy of the segment is held (a fake copy is always whole)."""
        return self.held.exists(path)

    def segment_bytes(self, path: str) -> int:
        """The copy's row count (the fake's size)."""
        return len(self.held.segments[path])

    def segment_digest(self, path: str) -> str | None:
        """The digest of the held copy's rows, None when it is missing."""
        return self.held.segment_digest(path)

    def segment_digests(self, path: str) -> tuple[str, dict[str, str]] | None:
        """The held copy's digest, its one data file's the same; None when it is missing."""
        digest = self.held.segment_digest(path)
        return None if digest is None else (digest, {DATA_FILE: digest})

    def segment_sizes(self, path: str) -> dict[str, int] | None:
        """The copy's one data file and its row count (the fake's size), None when it is missing."""
        return self.held.segment_files(path)

    def remove_segment(self, path: str) -> None:
        """Drop a copy; nothing there is not an error."""
        self.held.remove(path)

    def remove_set_aside(self, location: str) -> list[str]:
        """Nothing is ever set aside in memory: a copy replaces another at once."""
        return []

    def copy_in(
        self, path: str, names: Sequence[str] | None, *, recorded: Sequence[SegmentFile] | None
    ) -> tuple[int, str]:
        """Copy the live segment `path` in whole (a fake segment is one data file); (rows, digest)."""
        rows = self.live.segments.get(path)
        if rows is None:
            # As the real store reports a source file that went (a compaction removed it meanwhile, BK1).
            raise EnvironmentFailure(
                f"cannot copy {path} into the backup store: it is gone", code="backup-store"
            )
        self.held.segments[path] = [dict(e) for e in rows]
        digest = self.held.segment_digest(path)
        assert digest is not None
        return len(rows), digest

    def copy_out(self, path: str, relative: str) -> None:
        """Copy a held segment into the live store as `relative`."""
        rows = self.held.segments.get(path)
        if rows is None:
            raise EnvironmentFailure(f"cannot copy the backup copy of {path}: it is gone", code="store")
        self.live.write(relative, [dict(e) for e in rows])

    def copies(self) -> FakeDataPlane:
        """A fake data plane over the held copies."""
        return FakeDataPlane(self.held)
