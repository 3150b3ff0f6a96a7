"""The way out of a damaged backup (rules.md BK1, BK2): what `backup verify` and a refused restore hint.

A backup whose copies are missing, missing a file or differ from its manifest cannot be restored (exit 6). The
next `backup create` of the location copies such segments again from its log (`services.backups._plan`), so
while that log is whole, a new backup is the repair. Once the log is damaged too (a disaster), no backup can
copy them again: an older backup may still be whole, or a recovery without one gives up what only the damaged
copies held. Pointing a damaged restore at `backup verify` and a plain recovery at the same backup sent the
operator back and forth between the two.
"""

from __future__ import annotations

from collections.abc import Mapping

from replctl.core.model import LocationState
from replctl.services.damage import find_damage
from replctl.services.ports import Catalog, LogStore

# What `services.backups.damaged_copies` says of a copy whose files have the manifest's sizes but other bytes.
DIGEST_DIFFERS = "digest differs from the manifest's"


def way_out(
    catalog: Catalog, store: LogStore, location: str, damaged: Mapping[str, str], backup_store: str
) -> str:
    """The hint for a backup of `location` whose segment copies `damaged` (log-store path -> what is wrong) are
    not whole, in the backup store at `backup_store`.

    Reads the catalog and lists the live segments' files (the census, DR0), never reads an event: it runs
    only once a backup was found damaged.
    """
    with catalog.transaction(readonly=True) as tx:
        loc = next((x for x in tx.locations() if x.name == location), None)
        segments = tx.segments(location) if loc is not None and not loc.retired else []
    older = f"restore an older backup (`replctl backup list {location}`, then `replctl backup verify ID`)"
    if loc is None or loc.retired:
        return older
    if loc.state is LocationState.ACTIVE and not find_damage(store, segments):
        live = {s.path for s in segments}
        # `backup create` checks a copy it reuses by its files' sizes only (BK1: incremental backups read no
        # copy): one of the right sizes but other bytes must go first, or the new backup reuses it as it is.
        altered = sorted(path for path, why in damaged.items() if why == DIGEST_DIFFERS)
        first = (
            f"remove the copies whose bytes differ ({', '.join(f'{backup_store}/segments/{p}' for p in altered)}), "
            "then "
            if altered
            else ""
        )
        if all(path in live for path in damaged):
            return f"{first}run `replctl backup create {location}`: it copies the damaged segments again from its log"
        return (
            f"run `replctl backup create {location}` for a whole backup of its log as it is now (the log no "
            "longer holds every damaged segment, so this backup stays damaged)"
        )
    return (
        f"{location}'s log is damaged or recovering, so no new backup can copy the damaged segments again: "
        f"{older}, or recover {location} without one, accepting the loss: "
        f"`replctl recover location {location} --accept-loss`"
    )
