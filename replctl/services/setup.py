"""Creating and migrating the catalog and the store."""

from __future__ import annotations

from typing import Any

from replctl.config import Settings


def _mark_store(settings: Settings) -> dict[str, Any]:
    """Create and mark the store for this catalog (or check its marker); see `services.store_identity`."""
    from replctl.adapters.catalog.repository import Catalog
    from replctl.adapters.logstore import LogStore
    from replctl.services.store_identity import mark_store

    with Catalog(settings.db) as catalog:
        return mark_store(catalog, LogStore(settings.store))


def _migrate(settings: Settings) -> tuple[str | None, str | None]:
    """Upgrade the catalog to head; (revision before, revision after)."""
    from replctl.adapters.catalog import migrate
    from replctl.adapters.catalog.engine import make_engine

    engine = make_engine(settings.db)
    try:
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


def init(settings: Settings) -> dict[str, Any]:
    """`replctl init`: migrate the catalog to head and create the store; idempotent."""
    previous, revision = _migrate(settings)
    _mark_store(settings)
    _repair(settings)
    return {"created": previous is None, "db": settings.db, "store": settings.store, "revision": revision}


def upgrade(settings: Settings) -> dict[str, Any]:
    """`replctl db upgrade`: migrations, then the repairs of data they cannot do (`services.repair`), marking
    the store of a catalog made before store markers first (`services.store_identity`)."""
    previous, revision = _migrate(settings)
    _mark_store(settings)
    return {"db": settings.db, "revision": revision, "previous": previous, **_repair(settings)}


def current(settings: Settings) -> dict[str, Any]:
    """`replctl db current`."""
    from replctl.adapters.catalog import migrate
    from replctl.adapters.catalog.engine import make_engine

    engine = make_engine(settings.db)
    try:
        with engine.connect() as conn:
            revision = migrate.current_revision(conn)
    finally:
        engine.dispose()
    head = migrate.head_revision()
    return {"db": settings.db, "revision": revision, "head": head, "up_to_date": revision == head}
