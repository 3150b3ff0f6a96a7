"""`recover location NAME --from-backup ID|latest` (rules.md BK2): a disaster recovery whose survivors are a backup.

The backup's segments are copied into the log store under fresh paths first; one transaction then makes them
A's log in place of the present segments, with `deleted_upto` and DVV-A from the backup (DVV-A keeping the
baselines merged since, core.recovery.restored_dvv), the clock floor and the progress resets of DR1–DR2
(core.recovery). The present files stay untouched until that commit and are
removed after it, so a crash before it leaves A as it was plus unreferenced copies. Event recovery and the
clock then follow exactly as for any recovery (services.recovery.finish_recovery).
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import Any

from replctl.core import recovery as dr
from replctl.core.backups import BackupSegment, Manifest
from replctl.core.jobs import SegmentRewrite
from replctl.core.model import Location, Segment
from replctl.core.retirement import clocks, parked_location
from replctl.core.vectortime import VectorTime, lub
from replctl.errors import EnvironmentFailure, Refused
from replctl.failpoints import hit
from replctl.services import backups as backup_service
from replctl.services import loss
from replctl.services.backup_repair import damaged_copies, way_out
from replctl.services.lookup import get_location
from replctl.services.operations import OperationContext, backup_resource, location_resource, operation
from replctl.services.ports import BackupStore, Catalog, DataPlane
from replctl.services.recovery import before_loss, before_loss_detail, finish_recovery
from replctl.services.topology_state import load_state


def restore(
    catalog: Catalog,
    engine: DataPlane,
    backups: BackupStore,
    name: str,
    ref: str,
    *,
    accept_loss: bool = False,
    reason: str | None = None,
    dry_run: bool = False,
) -> dr.RecoveryOutcome:
    """BK2: A's log becomes exactly the backup's events, then DR1–DR5. Another location's backup exits 3; a
    missing or damaged one exits 6; a backup store overlapping the log store exits 2; all before anything
    changes."""
    backup_service.check_apart(backups, "BK2", "nothing was changed")
    with catalog.transaction(readonly=True) as tx:
        loc = get_location(tx, name)
        if loc.retired:
            raise Refused(f"refused [RET1]: {name} is retired", code="RET1")
        around = dr.neighbours(load_state(tx), name)
    manifest = backup_service.find(catalog, backups, ref, name)
    if manifest.location != name:
        raise Refused(
            f"refused [BK2]: backup {manifest.id} is a backup of {manifest.location}, not of {name}",
            code="BK2",
            hint=f"replctl backup list {name}",
        )
    damaged = damaged_copies(backups, manifest)
    if damaged:
        problems = [f"{path}: {why}" for path, why in damaged.items()]
        raise EnvironmentFailure(
            f"backup {manifest.id} is damaged: {'; '.join(problems)}",
            code="backup-damaged",
            # The way out, not `backup verify`, which says the same: a new backup while A's log is whole,
            # else an older backup or a recovery without one (a plain recovery's BK3 refusal names this one).
            hint=way_out(
                catalog,
                engine.store,
                name,
                damaged,
                backups,
                others=partial(backup_service.other_backups, catalog, backups, manifest),
            ),
        )
    return operation(
        catalog,
        command="recover location",
        args={"location": name, "from_backup": manifest.id, "accept_loss": accept_loss},
        reason=reason,
        # The backups' lease too (BK1): no prune may remove a file of this backup while it is copied in.
        resources=[backup_resource(name), *(location_resource(n) for n in [name, *around])],
        dry_run=dry_run,
        body=lambda ctx: dr.RecoveryOutcome.of(_restore(ctx, engine, backups, manifest, accept_loss)),
    )


def _restore(
    ctx: OperationContext, engine: DataPlane, backups: BackupStore, manifest: Manifest, accept_loss: bool
) -> dict[str, Any]:
    name = manifest.location
    with ctx.transaction() as tx:
        loc = get_location(tx, name)
        present = tx.segments(name)
        clk = clocks(tx.locations())
    # A restore resumed after a kill measures what is lost against A before the loss, as any recovery.
    seq_before, cvv_before = before_loss(ctx, loc)
    # RET2: ids pruned since the backup was taken never come back; its copies lose them as the live log did.
    prune_ids = sorted(z for z in clk.pruned if any(z in s.vt_lub for s in manifest.segments))
    doc: dict[str, Any] = {
        "location": name,
        "backup": manifest.id,
        # Everything after the backup is lost from A's own log; it comes back only through event recovery.
        "lost_from": manifest.last_seq + 1,
        "dry_run": ctx.dry_run,
        "clock": {"before": seq_before, "after": seq_before},
        "progress_resets": [],
        "rounds": [],
        "refused": [],
        "accepted": [],
        "given_up": {},
        "cvv": loc.cvv.to_dict(),
        "discarded": {},
        "lost": {},
        "lost_runs": {},
        "clock_pruned": prune_ids,
    }
    _consent(ctx, engine, backups, loc, present, manifest=manifest, accept_loss=accept_loss, doc=doc)
    copies = [] if ctx.dry_run else _copy_all_in(engine, backups, manifest)
    if prune_ids:
        keys = clk.vt_keys(loc.cvv.merge(manifest.cvv))
        copies = _prune_copies(
            engine, manifest, copies, prune_ids, keys=keys, identity_origins=clk.identity_origins
        )
    hit("restore.after-copy")  # the backup's copies written, the catalog not: orphans
    # Their inventories read and hash every copied file: before the write lock, not under it.
    files = {rel: engine.record_files(rel) for rel, _ in copies}
    # BK2: DVV-A and deleted_upto come from the backup (DVV-A keeping the baselines merged since, which no
    # backup holds); a logical deletion asked for since still hides.
    base = replace(
        loc,
        dvv=dr.restored_dvv(loc, manifest.dvv),
        deleted_upto=manifest.deleted_upto,
        logical_deleted_upto=max(loc.logical_deleted_upto, manifest.logical_deleted_upto),
    )
    with ctx.transaction() as tx:
        others = [x.cvv for x in tx.locations() if x.name != name]
        clock = dr.recovered_clock(base, manifest.survivors_lub, others)
        resets = dr.progress_resets(tx.connections(), name, manifest.last_seq)
        doc["progress_resets"] = [r.to_json() for r in resets]
        doc["survivors_upto"] = manifest.last_seq
        doc["clock"]["floor"] = clock.floor
        doc["cvv"] = clock.cvv.to_dict()
        if not ctx.dry_run:
            tx.delete_segments([s.id for s in present])
            for rel, s in copies:
                tx.add_written_segment(name, rel, s, ctx.id, files[rel])
            for reset in resets:
                tx.put_connection(replace(reset.connection, progress=reset.to))
            restored = dr.recovering(base, clock, manifest.last_seq)
            # I3 as after the pruning itself: a CVV[Z] that no stored identity explains any more is parked
            # in the baseline (core.retirement.parked_location).
            stored = lub([s.vt_lub for _, s in copies])
            for z in prune_ids:
                restored = parked_location(restored, z, stored)
            tx.put_location(restored)
            ctx.step(
                tx,
                "restore",
                {
                    "backup": manifest.id,
                    "cvv": clock.cvv.to_dict(),
                    "floor": clock.floor,
                    **before_loss_detail(seq_before, cvv_before),
                },
            )
    if ctx.dry_run:
        kept = _kept_own(backups, manifest, above=dr.own_not_held(loc), upto=cvv_before[name])
        return finish_recovery(
            ctx,
            engine,
            name,
            accept_loss,
            doc,
            before=cvv_before,
            deleted_own=dr.own_not_held(loc),
            kept_own=kept,
        )
    hit("recover.after-metadata")
    for seg in present:
        engine.store.remove(seg.path)
    return finish_recovery(
        ctx, engine, name, accept_loss, doc, before=cvv_before, deleted_own=dr.own_not_held(loc)
    )


def _consent(
    ctx: OperationContext,
    engine: DataPlane,
    backups: BackupStore,
    loc: Location,
    present: list[Segment],
    *,
    manifest: Manifest,
    accept_loss: bool,
    doc: dict[str, Any],
) -> None:
    """Before anything changes, dry run and run alike: BK3's refusal to lose what a newer backup holds, then
    DR0's consent to discard what A still stores intact past the backup and no other live location stores."""
    name, how = loc.name, f" --from-backup {manifest.id}"
    # The census tells the intact part of A's log from what a disaster already took (DR0): only the
    # intact part is discarded by the restore's choice.
    read = engine.census(present) if present else {}
    found = dr.lost_from(present, read) if present else None
    # Past a gap in the middle of A's log the store still holds intact events, which the restore discards
    # with the rest: they need the consent too (`core.recovery.held_past`).
    below = None if found is not None and dr.held_past(read, found) else found
    cut, changed = dr.without_changed(
        [s for s in present if s.seq_hi > manifest.last_seq and (below is None or s.seq_lo < below)], read
    )
    # Reads only, around data-plane jobs (DR0's stored identities, BK3's hidden prefixes): no write lock.
    with ctx.transaction(readonly=True) as tx:
        others = [x.cvv for x in tx.locations() if x.name != name]
        base = replace(loc, dvv=dr.restored_dvv(loc, manifest.dvv))
        start = dr.recovered_clock(base, manifest.survivors_lub, others).cvv
        # BK3 before DR0, as a plain recovery asks them (`services.recovery._consent`): what a newer backup
        # holds comes back by restoring it, without consent; DR0's hint would have the operator accept its loss.
        loss.refuse_backup_held(
            tx,
            engine,
            loc,
            lambda: start,
            manifests=backup_service.mine(ctx.catalog, backups, name),
            restoring=manifest.id,
            how=how,
            accept_loss=accept_loss,
        )
        loss.refuse_discard(
            tx,
            engine,
            loc,
            cut,
            seq_from=manifest.last_seq + 1,
            seq_below=below,
            how=how,
            accept_loss=accept_loss,
            doc=doc,
            changed=changed,
        )


def _kept_own(backups: BackupStore, manifest: Manifest, *, above: int, upto: int) -> set[int]:
    """The dry run's survivors of a restore: the own origin times in (`above`, `upto`] the backup's segments
    store, read where the backup store keeps them (a backup may lack own events its CVV covers, after an
    earlier loss, so the CVV is no answer)."""
    name = manifest.location
    segments = [Segment(0, name, s.path, s.seq_lo, s.seq_hi, s.count, s.vt_lub) for s in manifest.segments]
    if not segments:
        return set()
    return backups.copies().origin_times(segments, name, above=above, upto=upto)


def _copy_all_in(
    engine: DataPlane, backups: BackupStore, manifest: Manifest
) -> list[tuple[str, BackupSegment]]:
    """Copy the backup's segments into the log store, each checked against the manifest's digest once
    copied (issue 19): a backup file changed since `damaged_copies` read it, or a copy torn on the way, would
    make A's restored log differ from the backup's rows (BK2). On a difference the copies go and nothing is
    restored (exit 6); the catalog is untouched."""
    copies: list[tuple[str, BackupSegment]] = []
    try:
        for seg in manifest.segments:
            rel = engine.store.new_segment_path(manifest.location, seg.seq_lo)
            copies.append((rel, seg))
            backups.copy_out(seg.path, rel)
            _check_copy(engine, manifest, seg, rel)
    except Exception:
        for rel, _ in copies:
            engine.store.remove(rel)
        raise
    return copies


def _prune_copies(
    engine: DataPlane,
    manifest: Manifest,
    copies: list[tuple[str, BackupSegment]],
    prune_ids: list[str],
    *,
    keys: list[str],
    identity_origins: list[str],
) -> list[tuple[str, BackupSegment]]:
    """RET2 on the restored copies: rewrite each copy that may hold a pruned id without it, as the pruning
    rewrote the live log (services.retirement), and return the copies to commit with their new statistics.
    Every row stays (BK2): the seq range and count are checked against the manifest. On any failure every
    copy goes and nothing is restored; the catalog is untouched."""
    out: list[tuple[str, BackupSegment]] = []
    current = list(copies)
    try:
        for z in prune_ids:
            for i, (rel, seg) in enumerate(current):
                if z not in seg.vt_lub:
                    continue
                source = Segment(
                    0,
                    manifest.location,
                    rel,
                    seg.seq_lo,
                    seg.seq_hi,
                    seg.count,
                    seg.vt_lub,
                    files=engine.record_files(rel),
                )
                target = engine.store.new_segment_path(manifest.location, seg.seq_lo)
                out.append((target, seg))
                [stat] = engine.prune_log(
                    [SegmentRewrite(source, target)], key=z, keys=keys, identity_origins=identity_origins
                )
                found = None if stat is None else (stat.count, stat.seq_lo, stat.seq_hi)
                if found != (seg.count, seg.seq_lo, seg.seq_hi):
                    raise EnvironmentFailure(
                        f"backup {manifest.id}: the pruned copy of {seg.path} holds {found} "
                        f"(count, first seq, last seq), the manifest says "
                        f"{(seg.count, seg.seq_lo, seg.seq_hi)}; nothing was restored (BK2)",
                        code="store",
                        hint=f"replctl backup verify {manifest.id}",
                    )
                assert stat is not None
                engine.store.remove(rel)
                current[i] = (target, replace(seg, vt_lub=VectorTime(stat.vt_lub)))
    except Exception:
        for rel, _ in [*current, *out]:
            engine.store.remove(rel)
        raise
    return current


def _check_copy(engine: DataPlane, manifest: Manifest, seg: BackupSegment, rel: str) -> None:
    """Raise EnvironmentFailure (backup-damaged) unless the copy at `rel`, read back from the log store, local
    or remote, has the manifest's digest (the same digest `copy_in` took: relative path and content of
    each file, BK2)."""
    sha = engine.store.segment_digest(rel)
    if sha != seg.digest:
        raise EnvironmentFailure(
            f"backup {manifest.id} is damaged: the copy of {seg.path} differs from the manifest's digest; "
            "nothing was restored (BK2)",
            code="backup-damaged",
            hint=f"replctl backup verify {manifest.id}",
        )
