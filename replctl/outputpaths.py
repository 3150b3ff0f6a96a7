"""Output files the operator names, and the places they must never land on: replctl's own state.

`--plan-out FILE`, `report --html FILE`, `db backup FILE` and `demo --dir FOLDER` write where the operator
says. Named by a slip of the tab key, such a path could be the catalog (or the `-wal`, `-shm` or `-journal`
file SQLite keeps beside it), a file in the log store (a segment of acknowledged events, the store's marker),
a backup's manifest or segment copy (in the configured backup store, or in the one `backup create --to` names
on the same command), or the config file in use; replacing it would destroy what it holds. Each of those
writers calls `check_output` first, before anything is read or computed, so a refusal (exit 2,
`output-overlap`) leaves everything as it was.

Paths are compared as `replctl.storeroots` compares store roots: user expanded, resolved through symlinks and
`..`, so `./x/../.replctl/catalog.db` and a link to the catalog's folder are caught too. Only local places can
meet a local output path; a remote store or a PostgreSQL catalog is never one of them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from replctl.errors import InvalidInput
from replctl.storeroots import LOCAL, Overlap, StoreRoot, overlap, root_of

HINT = "name a file outside the catalog and the stores"

# The files SQLite keeps beside a database, by suffix, as a message names them: writing over one corrupts
# the catalog as surely as writing over the database itself (a stale WAL or journal is replayed into it).
# What the backup store reads under its root (`adapters.backupstore`).
_BACKUP_FOLDERS = ("manifests", "segments")

_SIDE_FILES = {
    "-wal": "the catalog's write-ahead log",
    "-shm": "the catalog's shared-memory index",
    "-journal": "the catalog's rollback journal",
}


@dataclass(frozen=True)
class OwnPlaces:
    """Where replctl keeps its state, as configured for this command."""

    catalog: Path | None  # the SQLite file; None for a PostgreSQL catalog
    log_store: str  # a root as `--store` takes it: a path, a file:// URI or a remote URI
    backup_store: str
    config: Path | None  # the config file in use, if any
    # A backup store the command itself names (`backup create --to URI`): it writes there, as to its own.
    named_backup_store: str | None = None


def check_output(path: Path, option: str, what: str, places: OwnPlaces) -> None:
    """Refuse (exit 2, `output-overlap`) an output path that is one of replctl's own places: the catalog or a
    side file of it, the log or backup store's root or anything inside one, or the config file in use.

    `option` names the path in the message as the operator gave it (`--plan-out`), `what` is what would be
    written there (`the plan`). The message names the file, never the catalog's URL (it may carry a password).
    """
    clash = _clash(root_of(str(path)), places)
    if clash is None:
        return
    place, consequence = clash
    raise InvalidInput(
        f"{option} {path} {place}; writing {what} there {consequence}",
        code="output-overlap",
        hint=HINT,
    )


def check_output_folder(path: Path, option: str, what: str, places: OwnPlaces) -> None:
    """`check_output` for a folder an output fills (`demo --dir`), and refuse too (exit 2, `output-overlap`)
    one that holds the catalog, a store or the config file in use that is there now: whatever writes into
    the folder, or would ever clean it up, could then reach them."""
    check_output(path, option, what, places)
    folder = root_of(str(path))
    held = [
        (name, place)
        for name, place in (
            ("the catalog", places.catalog),
            ("the log store", _local_place(places.log_store)),
            ("the backup store", _local_place(places.backup_store)),
            ("the config file in use", places.config),
        )
        if place is not None and os.path.lexists(place)
    ]
    for name, place in held:
        if overlap(root_of(str(place)), folder) is Overlap.INSIDE:
            raise InvalidInput(
                f"{option} {path} holds {name} {place}; {what} must not write beside it",
                code="output-overlap",
                hint="name a new or empty folder apart from the catalog and the stores",
            )


def _local_place(root: str) -> Path | None:
    """The folder of a local store root (a path or file:// URI), None for a remote one."""
    normalised = root_of(root)
    return Path(str(normalised)) if normalised.scheme == LOCAL else None


def _clash(target: StoreRoot, places: OwnPlaces) -> tuple[str, str] | None:
    """How `target` lands on one of `places`: what it is and what writing there does; None when apart."""
    return _file_clash(target, places) or _store_clash(target, places)


def _file_clash(target: StoreRoot, places: OwnPlaces) -> tuple[str, str] | None:
    """`target` as the catalog, a side file of it, or the config file in use."""
    if places.catalog is not None:
        if target == root_of(str(places.catalog)):
            return "is the catalog", "would destroy it"
        for suffix, name in _SIDE_FILES.items():
            if target in _side_files(places.catalog, suffix):
                return f"is {name}", "would destroy the catalog"
    if places.config is not None and target == root_of(str(places.config)):
        return "is the config file in use", "would destroy it"
    return None


def _store_clash(target: StoreRoot, places: OwnPlaces) -> tuple[str, str] | None:
    """`target` as the log store or inside it, or as the backup store or inside one of its own folders."""
    normalised = root_of(places.log_store)
    how = overlap(target, normalised)
    if how is Overlap.SAME:
        return "is the log store", "would destroy it"
    if how is Overlap.INSIDE:
        # A new file there is no better: the store takes it for one of its own (an unknown file to remove).
        return f"lies inside the log store {normalised}", "could destroy the store's files"
    stores = [(places.backup_store, "the backup store")]
    if places.named_backup_store is not None:
        stores.append((places.named_backup_store, "the --to backup store"))
    for store, name in stores:
        if target == root_of(store):
            return f"is {name}", "would destroy it"
        # The backup store reads only its `manifests` and `segments` folders: a file beside them (a nightly
        # `db backup` kept with the backups) is the operator's, and harmless.
        for folder in _BACKUP_FOLDERS:
            held = root_of(f"{store.rstrip('/')}/{folder}")
            if overlap(target, held) in {Overlap.SAME, Overlap.INSIDE}:
                return f"lies inside {name}'s {folder} folder {held}", "could destroy its backups"
    return None


def _side_files(catalog: Path, suffix: str) -> set[StoreRoot]:
    """A side file as SQLite may place it: beside the configured path, or beside the file a link there points
    to."""
    return {root_of(f"{catalog}{suffix}"), root_of(f"{catalog.resolve()}{suffix}")}
