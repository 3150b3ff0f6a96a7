"""The backup store (rules.md BK1): segment copies and manifests under one root, beside the log store.

Layout: `<root>/segments/<location>/seg-<first seq>-<uuid8>/` holds a copy of the log-store segment of the same
relative path (segments are immutable and their names unique, so one copy serves every backup that lists it),
and `<root>/manifests/<backup id>.json` the manifests. A segment is copied into a hidden temporary folder and
renamed into place, and the manifest is written last, atomically: a crash leaves at most unreferenced files,
never a manifest naming a missing or half-written segment.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import uuid
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote, urlparse

from replctl.core.backups import Manifest
from replctl.errors import EnvironmentFailure
from replctl.localfiles import digest, write_atomically

_CHUNK = 1 << 20
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_ID = re.compile(r"^[A-Za-z0-9_.-]+$")


class BackupStore:
    """Segment copies and manifests of backups under one local root (a path or `file://`)."""

    def __init__(self, root: str | Path) -> None:
        text = str(root)
        if not _SCHEME.match(text):
            self.root = Path(text).resolve()
        elif urlparse(text).scheme == "file":
            self.root = Path(unquote(urlparse(text).path))
        else:
            raise EnvironmentFailure(
                f"the backup store {text} is not on the local file system; only local backup stores "
                f"(a path or file://) are supported so far",
                code="backup-store",
            )

    def _segment(self, path: str) -> Path:
        return self.root.joinpath("segments", *path.split("/"))

    def _manifest(self, backup_id: str) -> Path:
        return self.root / "manifests" / f"{backup_id}.json"

    def has_segment(self, path: str) -> bool:
        """Whether a complete copy of the segment at log-store path `path` is held."""
        return self._segment(path).is_dir()

    def put_segment(self, source: Path, path: str, names: Sequence[str] | None = None) -> tuple[int, str]:
        """Copy the data files `names` of the segment folder `source` in as `path` (None: every file of the
        folder, for a row that does not name its files; a file the row does not name is not the segment's,
        issue 19); returns (bytes, digest) of the copy, computed while copying so that every byte is read
        once. The folder appears only when whole (rename)."""
        target = self._segment(path)
        temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.tmp")
        try:
            temporary.mkdir(parents=True)
            whole = hashlib.sha256()
            size = 0
            # The same digest as `localfiles.digest` of a folder: relative path and content of each file, sorted.
            chosen = (
                [source / name for name in names]
                if names is not None
                else [p for p in source.rglob("*") if p.is_file()]
            )
            for file in sorted(chosen):
                relative = file.relative_to(source)
                out = temporary / relative
                out.parent.mkdir(parents=True, exist_ok=True)
                sha = hashlib.sha256()
                with file.open("rb") as src, out.open("xb") as dst:
                    while chunk := src.read(_CHUNK):
                        sha.update(chunk)
                        dst.write(chunk)
                        size += len(chunk)
                whole.update(relative.as_posix().encode() + b"\0")
                whole.update(sha.hexdigest().encode() + b"\n")
            temporary.rename(target)
        except OSError as exc:
            shutil.rmtree(temporary, ignore_errors=True)
            raise EnvironmentFailure(
                f"cannot copy {source} into the backup store: {exc}", code="backup-store"
            ) from exc
        return size, whole.hexdigest()

    def segment_digest(self, path: str) -> str | None:
        """The digest of a held segment copy (as `put_segment` returns it), None when it is missing."""
        try:
            return digest(self._segment(path))
        except OSError as exc:
            raise EnvironmentFailure(
                f"cannot read the backup copy of {path}: {exc}", code="backup-store"
            ) from exc

    def segment_folder(self, path: str) -> Path:
        """The folder of a held segment copy."""
        return self._segment(path)

    def remove_segment(self, path: str) -> None:
        """Remove a segment copy; removing what is absent is not an error."""
        try:
            shutil.rmtree(self._segment(path), ignore_errors=False)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise EnvironmentFailure(
                f"cannot remove the backup copy of {path}: {exc}", code="backup-store"
            ) from exc

    def put_manifest(self, manifest: Manifest) -> None:
        """Write a manifest last and atomically: from then on the backup exists."""
        target = self._manifest(manifest.id)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(target, json.dumps(manifest.to_json(), indent=1, sort_keys=True) + "\n")
        except OSError as exc:
            raise EnvironmentFailure(
                f"cannot write the manifest {target}: {exc}", code="backup-store"
            ) from exc

    def remove_manifest(self, backup_id: str) -> None:
        """Remove a manifest: the backup stops existing (its files are removed after, by the caller)."""
        try:
            self._manifest(backup_id).unlink(missing_ok=True)
        except OSError as exc:
            raise EnvironmentFailure(
                f"cannot remove the backup {backup_id}: {exc}", code="backup-store"
            ) from exc

    def manifest(self, backup_id: str) -> Manifest | None:
        """One backup's manifest, None when there is none; a damaged manifest is an environment failure."""
        if not _ID.match(backup_id):
            return None
        path = self._manifest(backup_id)
        try:
            text = path.read_text(encoding="utf-8")
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

    def manifests(self) -> list[Manifest]:
        """Every complete backup (one with a manifest), oldest first."""
        folder = self.root / "manifests"
        if not folder.is_dir():
            return []
        found = [self.manifest(p.stem) for p in folder.iterdir() if p.suffix == ".json" and _ID.match(p.stem)]
        # `created_at` has whole seconds: two backups taken within one second are ordered by the catalog
        # version they were taken at (the id's suffix is random), so `latest` and `prune --keep-last` keep
        # the newer one.
        return sorted(
            (m for m in found if m is not None), key=lambda m: (m.created_at, m.catalog_version, m.id)
        )
