"""Creating and migrating the catalog and the store (`init`, `db upgrade`, `db current`).

Only `init` creates anything: the SQLite file (and its folder) and a local store root, with the configured
owner-only permissions. `db upgrade` and `db current` work on a catalog that exists, so that a mistyped
`--db` is refused (exit 6) instead of becoming an empty database somewhere. What is done to the files and the
schema is the installer's (`services.ports.Installer`); the order, the store marker and the repairs are here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from replctl.core.outcomes import AllOrNothing
from replctl.errors import ReplctlError
from replctl.services.ports import Installer
from replctl.services.repair import repair_pruned_identities
from replctl.services.store_identity import mark_store


@dataclass(frozen=True)
class Initialised(AllOrNothing):
    """`init`: the catalog (created now, or already there) at its schema revision, and the store."""

    created: bool
    db: str  # masked
    store: str  # masked
    revision: str | None

    def to_json(self) -> dict[str, Any]:
        """`init --json`."""
        return {
            "ok": True,
            "created": self.created,
            "db": self.db,
            "store": self.store,
            "revision": self.revision,
        }


@dataclass(frozen=True)
class Repairs:
    """The repairs after the migrations: the retired ids whose clock prunings got their vector entries back
    (RET2, RET4) and the removed connections (source, target) whose stale progress was cleared (DR2)."""

    repaired_prunings: tuple[str, ...]
    cleared_removed_progress: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Upgraded(AllOrNothing):
    """`db upgrade`: the revision before and after, and the repairs made."""

    db: str  # masked
    revision: str | None
    previous: str | None  # None: the catalog was empty
    repairs: Repairs

    def to_json(self) -> dict[str, Any]:
        """`db upgrade --json`."""
        return {
            "ok": True,
            "db": self.db,
            "revision": self.revision,
            "previous": self.previous,
            "repaired_prunings": list(self.repairs.repaired_prunings),
            "cleared_removed_progress": [
                {"source": s, "target": t} for s, t in self.repairs.cleared_removed_progress
            ],
        }


@dataclass(frozen=True)
class SchemaRevision(AllOrNothing):
    """`db current`: the catalog's schema revision and the newest this replctl writes."""

    db: str  # masked
    revision: str | None  # None: not migrated at all
    head: str

    @property
    def up_to_date(self) -> bool:
        """True when the catalog is at the newest revision."""
        return self.revision == self.head

    def to_json(self) -> dict[str, Any]:
        """`db current --json`."""
        return {
            "ok": True,
            "db": self.db,
            "revision": self.revision,
            "head": self.head,
            "up_to_date": self.up_to_date,
        }


@dataclass(frozen=True)
class CatalogCopied(AllOrNothing):
    """`db backup FILE`: where the copy of the catalog was written and its size."""

    file: Path
    bytes: int

    def to_json(self) -> dict[str, Any]:
        """`db backup --json`."""
        return {"ok": True, "file": str(self.file), "bytes": self.bytes}


@dataclass(frozen=True)
class CatalogSchema:
    """The catalog's schema as `version` reports it: its revision and the newest, or why it was not read."""

    revision: str | None
    head: str
    error: str | None  # no catalog yet, or unreachable

    def to_json(self) -> dict[str, Any]:
        """The `catalog` object of `version --json`."""
        return {"revision": self.revision, "head": self.head, "error": self.error}


@dataclass(frozen=True)
class Versions(AllOrNothing):
    """`version`: replctl's, the installed pyspark's, the Java runtime's (None: none found) and the schema's."""

    replctl: str
    spark: str
    java: str | None
    catalog: CatalogSchema

    def to_json(self) -> dict[str, Any]:
        """`version --json`."""
        return {
            "ok": True,
            "replctl": self.replctl,
            "spark": self.spark,
            "java": self.java,
            "catalog": self.catalog.to_json(),
        }


def _mark_store(installer: Installer) -> None:
    """Create and mark the store for this catalog (or check its marker); see `services.store_identity`."""
    with installer.opened() as (catalog, store):
        mark_store(catalog, store)


def _repair(installer: Installer) -> Repairs:
    """Repairs of data written by earlier releases that migrations cannot do, after the migrations: the
    vector entries of clock prunings (`services.repair`, which reads the store) and the progress of removed
    connections left past their source's seq by recoveries (DR2)."""
    with installer.opened() as (catalog, store):
        pruned = repair_pruned_identities(catalog, store).repaired
        with catalog.transaction() as tx:
            cleared = tx.clear_stale_removed_progress()
    return Repairs(pruned, tuple(cleared))


def init(installer: Installer) -> Initialised:
    """`replctl init`: create and migrate the catalog to head and create the store; idempotent. A failed init
    removes what it created (`Installer.undone_on_failure`): the folders are as they were before."""
    with installer.undone_on_failure():
        installer.create_catalog_file()
        installer.check_catalog_exists()  # a folder where the file should be
        previous, revision = installer.migrate()
        installer.create_store_root()
        _mark_store(installer)
        _repair(installer)
    return Initialised(
        created=previous is None,
        db=installer.printable_db,
        store=installer.printable_store,
        revision=revision,
    )


def upgrade(installer: Installer) -> Upgraded:
    """`replctl db upgrade` of an existing catalog: migrations, then the repairs of data they cannot do
    (`services.repair`), marking the store of a catalog made before store markers first
    (`services.store_identity`)."""
    installer.check_catalog_exists()
    previous, revision = installer.migrate()
    _mark_store(installer)
    return Upgraded(installer.printable_db, revision, previous, _repair(installer))


def current(installer: Installer) -> SchemaRevision:
    """`replctl db current` of an existing catalog."""
    installer.check_catalog_exists()
    return SchemaRevision(installer.printable_db, installer.current_revision(), installer.head_revision())


def backup_catalog(installer: Installer, file: Path) -> CatalogCopied:
    """`replctl db backup FILE`: a consistent copy of a SQLite catalog, taken while it is in use."""
    copy, size = installer.copy_catalog(file)
    return CatalogCopied(copy, size)


def versions(installer: Installer, *, replctl: str, spark: str, java: str | None) -> Versions:
    """`replctl version`: the versions given, plus the catalog's schema revision; a catalog that is missing or
    unreachable is reported in `catalog.error`, since the other versions are still worth printing."""
    try:
        schema = current(installer)
        catalog = CatalogSchema(schema.revision, schema.head, None)
    except ReplctlError as exc:
        catalog = CatalogSchema(None, installer.head_revision(), exc.message)
    return Versions(replctl, spark, java, catalog)
