"""Creating and migrating the catalog and the store.

Only `init` creates anything: the SQLite file (and its folder) and a local store root, with the configured
owner-only permissions. `db upgrade` and `db current` work on a catalog that exists, so that a mistyped
`--db` is refused (exit 6) instead of becoming an empty database somewhere.
"""

from __future__ import annotations

import os
from typing import Any

from replctl.config import Settings
from replctl.errors import EnvironmentFailure
from replctl.localfiles import make_folders
from replctl.masking import mask_url


def _make_store(settings: Settings) -> None:
    # The store decodes file:// URIs itself; a remote root (hdfs://, s3a://) is created by its own tools.
    from replctl.adapters.logstore import LogStore

    LogStore(settings.store).create_root(mode=settings.folder_mode)


def _mark_store(settings: Settings) -> dict[str, Any]:
    """Create and mark the store for this catalog (or check its marker); see `services.store_identity`."""
    from replctl.adapters.catalog.repository import Catalog
    from replctl.adapters.logstore import LogStore
    from replctl.services.store_identity import mark_store

    with Catalog(settings.db) as catalog:
        return mark_store(catalog, LogStore(settings.store))


def _make_sqlite_file(settings: Settings) -> None:
    """Create a SQLite catalog's folder and empty file with the configured modes, before SQLite opens it.

    SQLite would create the file with the umask's mode (its WAL and shared-memory files copy the file's).
    """
    from replctl.adapters.catalog.engine import parse_url, sqlite_path

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


def _migrate(settings: Settings) -> tuple[str | None, str | None]:
    """Upgrade the catalog to head; (revision before, revision after)."""
    from replctl.adapters.catalog import migrate
    from replctl.adapters.catalog.engine import make_engine, translate_errors

    engine = make_engine(settings.db)
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


def _repair(settings: Settings) -> dict[str, Any]:
    """Repairs of data written by earlier releases that migrations cannot do, after the migrations: the
    vector entries of clock prunings (`services.repair`, which reads the store) and the progress of removed
    connections left past their source's seq by recoveries (DR2)."""
    from replctl.adapters.catalog.repository import Catalog
    from replctl.adapters.logstore import LogStore
    from replctl.services.repair import repair_pruned_identities

    with Catalog(settings.db) as catalog:
        pruned = repair_pruned_identities(catalog, LogStore(settings.store))["repaired"]
        with catalog.transaction() as tx:
            cleared = tx.clear_stale_removed_progress()
    return {
        "repaired_prunings": pruned,
        "cleared_removed_progress": [{"source": s, "target": t} for s, t in cleared],
    }


def _printable_db(settings: Settings) -> str:
    from replctl.adapters.catalog.engine import safe_url

    return safe_url(settings.db)


def init(settings: Settings) -> dict[str, Any]:
    """`replctl init`: create and migrate the catalog to head and create the store; idempotent."""
    from replctl.adapters.catalog.engine import check_exists

    _make_sqlite_file(settings)
    check_exists(settings.db)  # a folder where the file should be
    previous, revision = _migrate(settings)
    _make_store(settings)
    _mark_store(settings)
    _repair(settings)
    return {
        "created": previous is None,
        "db": _printable_db(settings),
        "store": mask_url(settings.store),
        "revision": revision,
    }


def upgrade(settings: Settings) -> dict[str, Any]:
    """`replctl db upgrade` of an existing catalog: migrations, then the repairs of data they cannot do
    (`services.repair`), marking the store of a catalog made before store markers first
    (`services.store_identity`)."""
    from replctl.adapters.catalog.engine import check_exists

    check_exists(settings.db)
    previous, revision = _migrate(settings)
    _mark_store(settings)
    return {"db": _printable_db(settings), "revision": revision, "previous": previous, **_repair(settings)}


def current(settings: Settings) -> dict[str, Any]:
    """`replctl db current` of an existing catalog."""
    from replctl.adapters.catalog import migrate
    from replctl.adapters.catalog.engine import check_exists, make_engine, translate_errors

    check_exists(settings.db)
    engine = make_engine(settings.db)
    try:
        with translate_errors(engine.url), engine.connect() as conn:
            revision = migrate.current_revision(conn)
    finally:
        engine.dispose()
    head = migrate.head_revision()
    return {
        "db": _printable_db(settings),
        "revision": revision,
        "head": head,
        "up_to_date": revision == head,
    }
