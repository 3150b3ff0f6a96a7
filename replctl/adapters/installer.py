"""What `init` and `db upgrade|current` do to the catalog and the store themselves (the `services.ports.Installer`
port): the SQLite file and the store root with the configured modes, the schema migrations, and opening both.

Only `init` creates anything; `db upgrade` and `db current` work on a catalog that exists, so that a mistyped
`--db` is refused (exit 6) instead of becoming an empty database somewhere (`services.setup` decides which).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from replctl.adapters.catalog import migrate
from replctl.adapters.catalog.engine import (
    check_exists,
    make_engine,
    parse_url,
    safe_url,
    sqlite_path,
    translate_errors,
)
from replctl.adapters.catalog.repository import Catalog
from replctl.adapters.catalog.snapshot import backup_sqlite
from replctl.adapters.logstore import LogStore
from replctl.adapters.logstore.marker import MARKER_NAME
from replctl.config import Settings
from replctl.errors import EnvironmentFailure
from replctl.localfiles import make_folders
from replctl.masking import mask_url


def _missing_folders(folder: Path) -> list[Path]:
    """`folder` and those above it that are not there (creating `folder` creates them), deepest first."""
    return [p for p in (folder, *folder.parents) if not os.path.lexists(p)]


def undo_creation(files: list[Path], folders: list[Path]) -> None:
    """Remove what a failed `init` created: the `files` it made, then the `folders`, deepest first, each
    only if empty. Anything another process put there meanwhile stays, and so do the folders holding it; a
    file already gone is fine, and one that cannot be removed stays (the command's own error is the one to
    report)."""
    for file in files:
        with suppress(OSError):
            file.unlink(missing_ok=True)
    for folder in sorted(set(folders), key=lambda p: len(p.parts), reverse=True):
        with suppress(OSError):  # not empty: someone else's now
            folder.rmdir()


class Installer:
    """The catalog at `settings.db` and the store at `settings.store`, before either is opened as a port."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @property
    def printable_db(self) -> str:
        """The catalog's URL, password masked."""
        return safe_url(self.settings.db)

    @property
    def printable_store(self) -> str:
        """The store's root, any password masked."""
        return mask_url(self.settings.store)

    def create_catalog_file(self) -> None:
        """Create a SQLite catalog's folder and empty file with the configured modes, before SQLite opens it.

        SQLite would create the file with the umask's mode (its WAL and shared-memory files copy the file's).
        """
        settings = self.settings
        path = sqlite_path(parse_url(settings.db))
        if path is None or path.exists():
            return
        try:
            make_folders(path.parent, settings.folder_mode)
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, settings.file_mode))
            # The umask may have taken bits the configuration asked for.
            path.chmod(settings.file_mode)
        except FileExistsError:
            return
        except OSError as exc:
            raise EnvironmentFailure(
                f"cannot create the catalog {path}: {exc.strerror}",
                code="catalog-unreachable",
                hint="check --db / REPLCTL_DB and the folder's permissions",
            ) from exc

    @contextmanager
    def undone_on_failure(self) -> Iterator[None]:
        """Remove what the block created when it fails: the SQLite catalog (and its side files) and the local
        store's marker that were not there before, then the folders it had to create for them, deepest first,
        each only if empty (`undo_creation`): a file another process put in one meanwhile is not this init's.

        A failed `init` (a store that belongs to another catalog, an unreachable server, a bad setting found
        late) then leaves the operator's folders exactly as they were: no empty catalog that a later command
        would take for a real one, no store folder to trip over. Nothing that existed before is touched: a
        catalog that was there keeps its side files (another process may have it open), a store folder
        that was there keeps whatever it holds.
        """
        store = self._local_store_root()
        files = [] if store is None else [store / MARKER_NAME]
        folders = [] if store is None else _missing_folders(store.absolute())
        catalog = sqlite_path(parse_url(self.settings.db))
        if catalog is not None and not os.path.lexists(catalog):
            files += [Path(f"{catalog}{suffix}") for suffix in ("", "-wal", "-shm", "-journal")]
            folders += _missing_folders(catalog.absolute().parent)
        # Only what was not there: a marker or catalog that was keeps its file.
        files = [f.absolute() for f in files if not os.path.lexists(f)]
        try:
            yield
        except BaseException:
            undo_creation(files, folders)
            raise

    def _local_store_root(self) -> Path | None:
        """The root folder of a local store (None for a remote store: its own tools made it)."""
        store = LogStore(self.settings.store)
        if not store.is_local:
            return None
        return store.local_path(MARKER_NAME).parent

    def check_catalog_exists(self) -> None:
        """Refuse (exit 6) a catalog that is not there (or a folder where the SQLite file should be)."""
        check_exists(self.settings.db)

    def migrate(self) -> tuple[str | None, str | None]:
        """Upgrade the catalog to head; (revision before, revision after)."""
        engine = make_engine(self.settings.db)
        try:
            with translate_errors(engine.url):
                with engine.connect() as conn:
                    previous = migrate.current_revision(conn)
                migrate.upgrade(engine)
                with engine.connect() as conn:
                    revision = migrate.current_revision(conn)
        finally:
            engine.dispose()
        return previous, revision

    def current_revision(self) -> str | None:
        """The catalog's schema revision."""
        engine = make_engine(self.settings.db)
        try:
            with translate_errors(engine.url), engine.connect() as conn:
                return migrate.current_revision(conn)
        finally:
            engine.dispose()

    def head_revision(self) -> str:
        """The revision this replctl's migrations end at."""
        return migrate.head_revision()

    def create_store_root(self) -> None:
        """Create a local store's root; the store decodes file:// URIs itself, and a remote root (hdfs://,
        s3a://) is created by its own tools."""
        LogStore(self.settings.store).create_root(mode=self.settings.folder_mode)

    def copy_catalog(self, file: Path) -> tuple[Path, int]:
        """`db backup FILE`: a copy of a SQLite catalog by SQLite's online backup API (`catalog.snapshot`)."""
        return backup_sqlite(self.settings.db, file)

    @contextmanager
    def opened(self) -> Iterator[tuple[Catalog, LogStore]]:
        """The catalog (closed after the block) and the log store."""
        with Catalog(self.settings.db) as catalog:
            yield catalog, LogStore(self.settings.store)
