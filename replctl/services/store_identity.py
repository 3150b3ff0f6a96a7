"""Store identity: a store belongs to exactly one catalog, and every command checks it before using the store.

Without it a mistyped `--store` looked like a store whose every log was lost: `log show` called the log damaged
and the hinted `recover location` reset the catalog from an empty folder (the catalog outlives the store, DR1,
so the loss it then recorded was real). `init` writes a marker naming the catalog's id at the store root; every
command that reads or writes the store compares the two first and exits 6 naming the path when the store is
missing or belongs to another catalog, before anything is read as a log.

A copy of the catalog (the runbook's catalog backup, restored; a second operator's `--db` naming a copy) has
the same id: accepted, it assigned again an identity the live catalog had acknowledged (M3) and `log compact
--gc` removed the newer segment as an orphan. So the marker also records how far the catalog had got when a
command last changed it through this store (`record_reach`), and a catalog behind that is refused
(`catalog-behind`, exit 6) as a foreign one is.

The version is a counter, so it alone cannot tell a copy that went on apart: catalog-only commands (which do
not check the store) raised a copy's version past the marker's, the copy was then accepted, and its recovery
called intact events lost and raised the marker past the live catalog. So the marker also records the token
that version got in the catalog's lineage (`adapters.catalog.version`), and a catalog whose token for that
version differs, or that has none for it, has another history and is refused the same way. The seqs need no
token: only a command that checked the store raises one. A marker without a token (written by an older
replctl) is checked by the numbers, as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime

from replctl.core.backups import CatalogIdentity, Manifest
from replctl.core.model import StoreMarker
from replctl.errors import EnvironmentFailure
from replctl.services.ports import Catalog, CatalogTransaction, LogStore

STORE_HINT = "check --store (or REPLCTL_STORE): it must be the store `replctl init` created for this catalog"
CATALOG_BEHIND_HINT = (
    "point --db (or REPLCTL_DB) at the live catalog; if it is lost, keep this store as it is "
    "(see docs/runbook.md, 'A catalog older than its store')"
)


@dataclass(frozen=True)
class StoreMarking:
    """What `mark_store` did: the catalog's id, and whether this call wrote the marker (else it was there)."""

    catalog_id: str
    marked: bool


@dataclass(frozen=True)
class CatalogReach:
    """How far the catalog has got: its version and each location's seq (both only ever rise, M3, DR1), and
    the token its version got in its lineage (None: the catalog has no row for it)."""

    version: int
    seqs: Mapping[str, int]
    token: str | None


@dataclass(frozen=True)
class StoreCheck:
    """A store found to be this catalog's: its marker, and how far the catalog had got when it was checked."""

    marker: StoreMarker
    reach: CatalogReach


def check_store(catalog: Catalog, store: LogStore) -> StoreCheck:
    """The store's marker when it names this catalog and the catalog is not older than the store; otherwise
    exit 6 (`store-not-found`, `store-foreign`, `catalog-behind`)."""
    # The marker first: a command ending meanwhile raises the marker only after its catalog commit
    # (`record_reach`), so the catalog read after the marker has reached what it says. Read the other way
    # round, the live catalog could look behind a marker raised between the two reads.
    marker = store.read_marker()
    with catalog.transaction(readonly=True) as tx:
        catalog_id, _ = _checked_identity(tx)
        reach = _reach(tx)
    if marker is None:
        raise _not_found(store)
    if marker.catalog_id != catalog_id:
        raise _foreign(store, marker)
    if behind := _behind(marker, reach):
        raise _catalog_behind(store, marker, reach, behind)
    if _other_history(catalog, marker):
        raise _catalog_forked(store, marker, reach)
    return StoreCheck(marker, reach)


def catalog_reach(catalog: Catalog) -> CatalogReach:
    """The catalog's version and every location's seq, as one transaction sees them."""
    with catalog.transaction(readonly=True) as tx:
        return _reach(tx)


def _reach(tx: CatalogTransaction) -> CatalogReach:
    version = tx.catalog_version()
    return CatalogReach(
        version, {loc.name: loc.seq for loc in tx.locations()}, tx.catalog_version_token(version)
    )


def _other_history(catalog: Catalog, marker: StoreMarker) -> bool:
    """Whether this catalog reached the marker's version through other changes than the catalog that wrote
    it: another token for that version, or none (a copy whose lineage began after it). A marker without a
    token is checked by the numbers only."""
    if marker.version_token is None:
        return False
    # A transaction of its own: a lineage row never changes once written, so no snapshot needs sharing.
    with catalog.transaction(readonly=True) as tx:
        return tx.catalog_version_token(marker.catalog_version) != marker.version_token


def record_reach(catalog: Catalog, store: LogStore, seen: StoreCheck) -> bool:
    """After a command that used the store: raise the marker by what the command changed in the catalog (its
    version with the token that version got in the catalog's lineage, the seqs it raised), so an older copy
    of this catalog (a restored backup, a second `--db`), or one that went on apart, is refused by
    `check_store`; True when it wrote.

    Only what rose during the command: a command that merely reads an older copy of the store must not record
    there seqs whose segments it does not hold (`services.recovery` asks the marker whether the store ever
    saw them). The marker is raised after the catalog commits, so a crash in between leaves it behind the
    catalog, which refuses nothing; two commands ending together may each write what they saw, leaving the
    marker lower than the catalog, never higher.
    """
    reach = catalog_reach(catalog)
    rose = {name: seq for name, seq in reach.seqs.items() if seq > seen.reach.seqs.get(name, 0)}
    if reach.version <= seen.reach.version and not rose:
        return False
    current = store.read_marker()
    if current is None or current.catalog_id != seen.marker.catalog_id:
        return False
    seqs = dict(current.seqs)
    for name, seq in rose.items():
        seqs[name] = max(seq, seqs.get(name, 0))
    if reach.version > current.catalog_version:
        version, token = reach.version, reach.token
    else:
        # The marker's version stays (another command, ending together, got further): and so does its token.
        version, token = current.catalog_version, current.version_token
        if seqs == dict(current.seqs):
            return False
    store.write_marker(replace(current, catalog_version=version, seqs=seqs, version_token=token))
    return True


def _behind(marker: StoreMarker, reach: CatalogReach) -> list[str]:
    """What the store's marker holds that this catalog never reached (empty when the catalog is current)."""
    behind = [
        f"{name} up to seq {seq} (this catalog: {reach.seqs[name]})"
        if name in reach.seqs
        else f"{name} up to seq {seq} (this catalog has no location {name})"
        for name, seq in sorted(marker.seqs.items())
        if seq > reach.seqs.get(name, 0)
    ]
    if marker.catalog_version > reach.version:
        behind.insert(0, f"catalog version {marker.catalog_version} (this catalog: {reach.version})")
    return behind


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


def backup_owner(
    catalog: Catalog, manifests: Iterable[Manifest], *, known_id: str | None = None
) -> CatalogIdentity:
    """What a backup among `manifests` must name to be this catalog's (BK1): the catalog's id, and, only when
    one of them names none (made before backups named their catalog), the backups its journal records.

    `known_id`: the catalog's id as this operation already read it (`backup create` reads it with the
    location, issue 16); then no catalog transaction is opened unless a manifest names no catalog. A catalog's
    id never changes once set, so the earlier read stands. None reads (and checks) it here."""
    unnamed = any(m.catalog_id is None for m in manifests)
    if known_id is not None and not unnamed:
        return CatalogIdentity(known_id)
    with catalog.transaction(readonly=True) as tx:
        catalog_id, _ = _checked_identity(tx)
        journaled = frozenset(tx.journaled_backups()) if unnamed else frozenset()
    return CatalogIdentity(catalog_id, journaled)


def _identity(catalog: Catalog) -> tuple[str, datetime | None]:
    with catalog.transaction(readonly=True) as tx:
        return _checked_identity(tx)


def _checked_identity(tx: CatalogTransaction) -> tuple[str, datetime | None]:
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


def _catalog_behind(
    store: LogStore, marker: StoreMarker, reach: CatalogReach, behind: list[str]
) -> EnvironmentFailure:
    # M3, DR1: with this catalog an append would assign again identities the store already holds, and
    # `log compact --gc` would take the newer segments for orphans and remove them.
    return EnvironmentFailure(
        f"this catalog is older than the store at {store.root}: the store was last written at "
        f"{', '.join(behind)}; this catalog is an older copy (a restored catalog backup, or --db naming a "
        "copy), and using it would assign again event identities the store holds (M3) and take newer segments "
        "for orphans; nothing was read as a log",
        code="catalog-behind",
        hint=CATALOG_BEHIND_HINT,
    )


def _catalog_forked(store: LogStore, marker: StoreMarker, reach: CatalogReach) -> EnvironmentFailure:
    # M3, DR1: the version alone matched, but through other changes: this copy's seqs, segments and losses are
    # not the store's, and a recovery judged on them would call intact events lost (as `_catalog_behind`).
    return EnvironmentFailure(
        f"this catalog has another history than the store at {store.root}: the store was last written at "
        f"catalog version {marker.catalog_version}, which this catalog (now at version {reach.version}) reached "
        "through other changes; this catalog is a copy that went on apart from the live catalog (a restored "
        "catalog backup, or --db naming a copy), and using it would assign again event identities the store "
        "holds (M3) and take newer segments for orphans; nothing was read as a log",
        code="catalog-behind",
        hint=CATALOG_BEHIND_HINT,
    )


def _foreign(store: LogStore, marker: StoreMarker) -> EnvironmentFailure:
    return EnvironmentFailure(
        f"the store at {store.root} belongs to another catalog (its marker names catalog {marker.catalog_id})",
        code="store-foreign",
        hint=STORE_HINT,
    )
