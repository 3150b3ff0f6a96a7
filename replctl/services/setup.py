"""Creating and migrating the catalog and the store (`init`, `db upgrade`, `db current`).

Only `init` creates anything: the SQLite file (and its folder) and a local store root, with the configured
owner-only permissions. `db upgrade` and `db current` work on a catalog that exists, so that a mistyped
`--db` is refused (exit 6) instead of becoming an empty database somewhere. What is done to the files and the
schema is the installer's (`services.ports.Installer`); the order, the store marker and the repairs are here.
"""

from __future__ import annotations

from typing import Any

from replctl.services.ports import Installer
from replctl.services.repair import repair_pruned_identities
from replctl.services.store_identity import mark_store


def _mark_store(installer: Installer) -> dict[str, Any]:
    """Create and mark the store for this catalog (or check its marker); see `services.store_identity`."""
    with installer.opened() as (catalog, store):
        return mark_store(catalog, store)


def _repair(installer: Installer) -> dict[str, Any]:
    """Repairs of data written by earlier releases that migrations cannot do, after the migrations: the
    vector entries of clock prunings (`services.repair`, which reads the store) and the progress of removed
    connections left past their source's seq by recoveries (DR2)."""
    with installer.opened() as (catalog, store):
        pruned = repair_pruned_identities(catalog, store)["repaired"]
        with catalog.transaction() as tx:
            cleared = tx.clear_stale_removed_progress()
    return {
        "repaired_prunings": pruned,
        "cleared_removed_progress": [{"source": s, "target": t} for s, t in cleared],
    }


def init(installer: Installer) -> dict[str, Any]:
    """`replctl init`: create and migrate the catalog to head and create the store; idempotent."""
    installer.create_catalog_file()
    installer.check_catalog_exists()  # a folder where the file should be
    previous, revision = installer.migrate()
    installer.create_store_root()
    _mark_store(installer)
    _repair(installer)
    return {
        "created": previous is None,
        "db": installer.printable_db,
        "store": installer.printable_store,
        "revision": revision,
    }


def upgrade(installer: Installer) -> dict[str, Any]:
    """`replctl db upgrade` of an existing catalog: migrations, then the repairs of data they cannot do
    (`services.repair`), marking the store of a catalog made before store markers first
    (`services.store_identity`)."""
    installer.check_catalog_exists()
    previous, revision = installer.migrate()
    _mark_store(installer)
    return {"db": installer.printable_db, "revision": revision, "previous": previous, **_repair(installer)}


def current(installer: Installer) -> dict[str, Any]:
    """`replctl db current` of an existing catalog."""
    installer.check_catalog_exists()
    revision = installer.current_revision()
    head = installer.head_revision()
    return {"db": installer.printable_db, "revision": revision, "head": head, "up_to_date": revision == head}
