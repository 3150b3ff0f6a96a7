"""The way out of a damaged backup (rules.md BK1, BK2): what `backup verify` and a refused restore hint.

A backup whose copies are missing, missing a file or differ from its manifest cannot be restored (exit 6). The
next `backup create` of the location copies such segments again from its log (`services.backups._plan`), so
while that log is whole, a new backup is the repair. Once the log is damaged too (a disaster), no backup can
copy them again: an older backup may still be whole, or a recovery without one gives up what only the damaged
copies held. Pointing a damaged restore at `backup verify` and a plain recovery at the same backup sent the
operator back and forth between the two.

A copy whose digest differs may hold exactly what the live file holds: a backup copies a file under the digest
its segment row recorded at write (BK1), so one taken of a file whose bytes had already changed at their size
(bit rot) is damaged from the start, and every later backup copies the same bytes again. Such live files are
hashed (`LogStore.changed_files`) before a new backup is hinted; when they changed, the way out is another
backup that holds their seqs whole, or a recovery without one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from replctl.core import backups as bk
from replctl.core.model import LocationState, Segment
from replctl.services.damage import find_damage
from replctl.services.ports import BackupStore, Catalog, LogStore

# What `services.backups.damaged_copies` says of a copy whose files have the manifest's sizes but other bytes.
DIGEST_DIFFERS = "digest differs from the manifest's"


def damaged_copies(backups: BackupStore, manifest: bk.Manifest) -> dict[str, str]:
    """The backup's damaged segment copies (path -> why): missing, missing a file, or of sizes other than the
    manifest's bytes (`core.backups.copy_damage`, a listing), then those whose digest differs."""
    problems = {}
    for seg in manifest.segments:
        # Sizes first: a copy that lost a file is "missing" one, which says more than its digest does.
        wrong = bk.copy_damage(seg, backups.segment_sizes(seg.path))
        sha = None if wrong is not None else backups.segment_digest(seg.path)
        if wrong is None and sha is None:
            wrong = "missing"  # gone between the listing and the digest
        elif wrong is None and sha != seg.digest:
            wrong = DIGEST_DIFFERS
        if wrong is not None:
            problems[seg.path] = wrong
    return problems


def way_out(
    catalog: Catalog,
    store: LogStore,
    location: str,
    damaged: Mapping[str, str],
    backups: BackupStore,
    *,
    others: Callable[[], Iterable[bk.Manifest]],
) -> str:
    """The hint for a backup of `location` whose segment copies `damaged` (log-store path -> what is wrong) are
    not whole, in the backup store `backups`. `others`: this catalog's other backups of `location`, asked
    only when the live files behind the copies changed too (`_past_the_rot`).

    Reads the catalog and lists the live segments' files (the census, DR0), and hashes the live files behind
    the copies whose digest differs; never reads an event: it runs only once a backup was found damaged.
    """
    with catalog.transaction(readonly=True) as tx:
        loc = next((x for x in tx.locations() if x.name == location), None)
        segments = tx.segments(location) if loc is not None and not loc.retired else []
    older = f"restore an older backup (`replctl backup list {location}`, then `replctl backup verify ID`)"
    if loc is None or loc.retired:
        return older
    if loc.state is LocationState.ACTIVE and not find_damage(store, segments):
        live = {s.path: s for s in segments}
        # `backup create` checks a copy it reuses by its files' sizes only (BK1: incremental backups read no
        # copy): one of the right sizes but other bytes must go first, or the new backup reuses it as it is.
        altered = sorted(path for path, why in damaged.items() if why == DIGEST_DIFFERS)
        # BK1: a copy takes the digest the row recorded at write; a live file whose bytes changed since
        # (same size, so the census above passes it) is copied as it is, and every new backup is damaged too.
        rotted = [live[p] for p in altered if p in live and store.changed_files(live[p])]
        if rotted:
            return _past_the_rot(location, rotted, backups, others)
        copies = ", ".join(f"{backups.roots()[0]}/segments/{p}" for p in altered)
        first = f"remove the copies whose bytes differ ({copies}), then " if altered else ""
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


def _past_the_rot(
    location: str,
    rotted: Sequence[Segment],
    backups: BackupStore,
    others: Callable[[], Iterable[bk.Manifest]],
) -> str:
    """The way out when the live files behind damaged copies changed too (DR0: `log verify` reports them):
    the newest other backup whose segments hold their seqs and whose copies are whole (BK2 restores those
    events), else a recovery without a backup, which discards the changed files (DR0's consent)."""
    runs = sorted((s.seq_lo, s.seq_hi) for s in rotted)
    seqs = ", ".join(f"{lo}..{hi}" if hi != lo else str(lo) for lo, hi in runs)
    said = (
        f"{location}'s log holds the same changed bytes (its segment(s) {', '.join(s.path for s in rotted)} differ "
        f"from the SHA-256 their catalog rows recorded: `replctl log verify {location}`), so a new backup would "
        "copy them again"
    )
    # Newest first; only a backup that holds the seqs is hashed, one at a time, none past the first whole one
    # (a copy is shared by every backup that lists its path, so one listing a damaged copy is damaged too).
    for m in sorted(others(), key=bk.age_order, reverse=True):
        if bk.holds_seqs(m, runs) and not damaged_copies(backups, m):
            return (
                f"{said}: restore backup {m.id}, which holds seq {seqs} whole: "
                f"`replctl recover location {location} --from-backup {m.id}`"
            )
    return (
        f"{said}, and no other backup holds seq {seqs} whole: recover {location} without one, accepting the loss: "
        f"`replctl recover location {location} --accept-loss`"
    )
