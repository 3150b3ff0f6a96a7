"""Store identity: a store belongs to exactly one catalog, and every command checks it before using the store.

Without it a mistyped `--store` looked like a store whose every log was lost: `log show` called the log damaged
and the hinted `recover location` reset the catalog from an empty folder (the catalog outlives the store, DR1,
so the loss it then recorded was real). `init` writes a marker naming the catalog's id at the store root; every
command that reads or writes the store compares the two first and exits 6 naming the path when the store is
missing or belongs to another catalog, before anything is read as a log.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from replctl.core.model import StoreMarker
from replctl.errors import EnvironmentFailure
from replctl.services.ports import Catalog, LogStore

STORE_HINT = "check --store (or REPLCTL_STORE): it must be the store `replctl init` created for this catalog"


@dataclass(frozen=True)
class StoreMarking:
    """What `mark_store` did: the catalog's id, and whether this call wrote the marker (else it was there)."""

    catalog_id: str
    marked: bool


def check_store(catalog: Catalog, store: LogStore) -> StoreMarker:
    """The store's marker when it names this catalog; otherwise exit 6 (`store-not-found` / `store-foreign`)."""
    catalog_id, _ = _identity(catalog)
    marker = store.read_marker()
    if marker is None:
        raise _not_found(store)
    if marker.catalog_id != catalog_id:
        raise _foreign(store, marker)
    return marker


def mark_store(catalog: Catalog, store: LogStore) -> StoreMarking:
    """Create (if needed) and mark the store for this catalog (`init`, `db upgrade`); idempotent.

    A store of a catalog made before markers is adopted only when it holds the catalog's segments (or the
    catalog has none yet), so a mistyped path is refused rather than marked as the catalog's store.
    """
    catalog_id, marked_at = _identity(catalog)
    marker = store.read_marker() if store.root_exists() else None
    if marker is not None:
        if marker.catalog_id != catalog_id:
            raise _foreign(store, marker)
        if marked_at is None:
            _record(catalog, marker)
        return StoreMarking(catalog_id, marked=False)
    if marked_at is not None:
        # This catalog marked a store once: an unmarked folder is not it (a typo, or a store wiped whole).
        raise _not_found(store)
    _check_adoptable(catalog, store)
    store.create_root()
    marker = StoreMarker(catalog_id, catalog.clock())
    store.write_marker(marker)
    _record(catalog, marker)
    return StoreMarking(catalog_id, marked=True)


def _identity(catalog: Catalog) -> tuple[str, datetime | None]:
    with catalog.transaction(readonly=True) as tx:
        catalog_id, marked_at = tx.catalog_identity()
    if catalog_id is None:
        raise EnvironmentFailure(
            "the catalog has no id (catalog_state.catalog_id); it was changed outside replctl",
            code="catalog-inconsistent",
            hint="run: replctl db upgrade",
        )
    return catalog_id, marked_at


def _record(catalog: Catalog, marker: StoreMarker) -> None:
    with catalog.transaction() as tx:
        tx.record_store_marked(marker.catalog_id, marker.created_at)


def _check_adoptable(catalog: Catalog, store: LogStore) -> None:
    if not store.is_local:
        return
    with catalog.transaction(readonly=True) as tx:
        paths = tx.segment_paths()
    if paths and not any(store.exists(path) for path in paths):
        raise EnvironmentFailure(
            f"the store at {store.root} holds none of the catalog's {len(paths)} segment(s); "
            "it is not this catalog's store, so it is not marked as one",
            code="store-not-found",
            hint=STORE_HINT,
        )


def _not_found(store: LogStore) -> EnvironmentFailure:
    where = "does not exist" if not store.root_exists() else f"has no marker ({store.marker_uri()})"
    return EnvironmentFailure(
        f"store not found: {store.root} {where}; nothing was read as a log",
        code="store-not-found",
        hint=STORE_HINT,
    )


def _foreign(store: LogStore, marker: StoreMarker) -> EnvironmentFailure:
    return EnvironmentFailure(
        f"the store at {store.root} belongs to another catalog (its marker names catalog {marker.catalog_id})",
        code="store-foreign",
        hint=STORE_HINT,
    )
