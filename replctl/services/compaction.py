"""`log compact`: merge small segments, and collect orphan segment files (`--gc`).

Crash safety (REP3), run by run: the merged segment is written first; its row replaces the run's rows in one
transaction with the journal step `merge`; the run's old files are removed only after that commits. A crash
before the commit leaves the merged copy unreferenced, after it the old files: either way orphans, never read
(every reader goes through the segment rows), and collected by `--gc`. The events and their seqs are the same
before and after a merge, so a re-run merges what is still unmerged and reaches the same segment rows as an
uninterrupted run (`merge_runs` is a function of the rows alone).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from replctl.core.compaction import orphans, plan_compaction
from replctl.core.outcomes import AllOrNothing
from replctl.core.retirement import clocks
from replctl.core.topology_plans import case_twins
from replctl.errors import InvalidInput
from replctl.failpoints import hit
from replctl.services.damage import refuse_unwritable
from replctl.services.leftovers import remove_after_commit
from replctl.services.lookup import get_location
from replctl.services.operations import OperationContext, location_resource, operation
from replctl.services.ports import Catalog, DataPlane

DEFAULT_TARGET_SIZE = 1_000_000


@dataclass(frozen=True)
class MergedRun:
    """A run of `count` adjacent segments merged (or to merge) into one, seq `seq_lo`..`seq_hi`."""

    count: int
    seq_lo: int
    seq_hi: int


@dataclass(frozen=True)
class CompactionOutcome(AllOrNothing):
    """`log compact`: the runs merged, the orphans collected (`--gc`), the segment count before and after."""

    location: str
    dry_run: bool
    segments_before: int
    merged: tuple[MergedRun, ...]
    segments_after: int
    orphans_removed: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        """`log compact --json` (cli.md)."""
        return {
            "ok": True,
            "location": self.location,
            "dry_run": self.dry_run,
            "segments_before": self.segments_before,
            "merged": [{"from": m.count, "seq_lo": m.seq_lo, "seq_hi": m.seq_hi} for m in self.merged],
            "orphans_removed": list(self.orphans_removed),
            "segments_after": self.segments_after,
        }


def compact(
    catalog: Catalog,
    engine: DataPlane,
    name: str,
    *,
    gc: bool = False,
    target_size: int = DEFAULT_TARGET_SIZE,
    reason: str | None = None,
    dry_run: bool = False,
) -> CompactionOutcome:
    """Merge runs of small segments of one log; with `gc`, remove segment folders no catalog row names."""

    if gc and not engine.store.is_local:
        # Refused before anything runs: finding orphans lists the store's folders, which only a local store
        # allows here; answering `orphans_removed: []` would say none were there.
        raise InvalidInput(
            f"log compact --gc needs a local store: it lists the store's folders to find orphans, and the store "
            f"{engine.store.root} is not local; nothing was done",
            code="bad-option",
            hint=f"replctl log compact {name} (without --gc) merges small segments; remove orphan segment "
            "folders with the store's own tools",
        )

    def body(ctx: OperationContext) -> CompactionOutcome:
        with ctx.transaction() as tx:
            loc = get_location(tx, name)
            clk = clocks(tx.locations())
            segments = tx.segments(name)
        # DR0: merging a damaged log would turn its missing or altered files into a well-formed segment.
        refuse_unwritable(engine.store, loc, segments)
        planned = plan_compaction(segments, target_size)
        runs = planned.runs
        doc = CompactionOutcome(
            location=name,
            dry_run=ctx.dry_run,
            segments_before=planned.segments_before,
            merged=tuple(MergedRun(len(run), run[0].seq_lo, run[-1].seq_hi) for run in runs),
            # Issue 14: the count after comes from the plan, for the dry run as for the run (under the
            # location's lease nothing else changes this log's rows meanwhile).
            segments_after=planned.segments_after,
        )
        if not ctx.dry_run:
            for run in runs:
                out_rel = engine.store.new_segment_path(name, run[0].seq_lo)
                stats = engine.compact(
                    run,
                    out_rel,
                    keys=clk.vt_keys(loc.cvv),
                    identity_origins=clk.identity_origins,
                )
                hit("compact.after-write")
                files = engine.record_files(out_rel)  # reads and hashes the merged files: not under the lock
                with ctx.transaction() as tx:
                    tx.delete_segments([s.id for s in run])
                    tx.add_written_segment(name, out_rel, stats, ctx.id, files)
                    ctx.step(tx, "merge", {"segments": len(run), "into": out_rel})
                hit("compact.after-commit")  # the run's old files are orphans until removed just below
                remove_after_commit(
                    engine.store,
                    name,
                    [seg.path for seg in run],
                    committed=f"log compact {name}: the merge of seq {run[0].seq_lo}..{run[-1].seq_hi} "
                    f"({len(run)} segments) into {out_rel} is committed",
                    consequence="those folders hold copies of the merged events, which nothing reads",
                )
                hit("compact.after-remove")
        if gc:
            with ctx.transaction() as tx:
                # The rows of a location whose id differs only in case count as this log's: on a store whose
                # file system ignores case both logs share one folder, and their segments are no orphans.
                twins = case_twins(name, [x.name for x in tx.locations()])
                named = {s.path for owner in [name, *twins] for s in tx.segments(owner)}
            found = orphans(engine.store.list_segment_dirs(name), named)
            doc = replace(doc, orphans_removed=tuple(found))
            if not ctx.dry_run:
                for path in found:
                    engine.store.remove(path)
                    hit("compact.gc-after-remove")  # the rest stay orphans: a re-run collects them
        return doc

    return operation(
        catalog,
        command="log compact",
        args={"location": name, "gc": gc},
        reason=reason,
        resources=[location_resource(name)],
        dry_run=dry_run,
        body=body,
    )
