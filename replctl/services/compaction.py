"""`log compact`: merge small segments, and collect orphan segment files (`--gc`)."""

from __future__ import annotations

from typing import Any

from replctl.adapters.catalog.repository import Catalog
from replctl.core.compaction import merge_runs, orphans
from replctl.core.vectortime import VectorTime
from replctl.failpoints import hit
from replctl.services.engine import Engine
from replctl.services.lookup import get_location
from replctl.services.operations import OperationContext, location_resource, operation

DEFAULT_TARGET_SIZE = 1_000_000


def compact(
    catalog: Catalog,
    engine: Engine,
    name: str,
    *,
    gc: bool = False,
    target_size: int = DEFAULT_TARGET_SIZE,
    reason: str | None = None,
    dry_run: bool = False,
) -> dict[str, Any]:
    """Merge runs of small segments of one log; with `gc`, remove segment folders no catalog row names."""

    def body(ctx: OperationContext) -> dict[str, Any]:
        with ctx.transaction() as tx:
            loc = get_location(tx, name)
            segments = tx.segments(name)
        runs = merge_runs(segments, target_size)
        doc: dict[str, Any] = {
            "location": name,
            "dry_run": ctx.dry_run,
            "segments_before": len(segments),
            "merged": [{"from": len(run), "seq_lo": run[0].seq_lo, "seq_hi": run[-1].seq_hi} for run in runs],
            "orphans_removed": [],
        }
        if not ctx.dry_run:
            from replctl.adapters.spark.jobs import compact as merge

            for run in runs:
                out_rel = engine.store.new_segment_path(name, run[0].seq_lo)
                stats = merge(
                    engine.spark(), engine.store, [s.path for s in run], out_rel, keys=sorted(loc.cvv)
                )
                hit("compact.after-write")
                with ctx.transaction() as tx:
                    tx.delete_segments([s.id for s in run])
                    tx.add_segment(
                        name,
                        out_rel,
                        stats.seq_lo,
                        stats.seq_hi,
                        stats.count,
                        VectorTime(stats.vt_lub),
                        ctx.id,
                    )
                    ctx.step(tx, "merge", {"segments": len(run), "into": out_rel})
                hit("compact.after-commit")
                for seg in run:
                    engine.store.remove(seg.path)
        if gc and engine.store.is_local:
            with ctx.transaction() as tx:
                named = {s.path for s in tx.segments(name)}
            found = orphans(engine.store.list_segment_dirs(name), named)
            doc["orphans_removed"] = found
            if not ctx.dry_run:
                for path in found:
                    engine.store.remove(path)
        with ctx.transaction() as tx:
            doc["segments_after"] = len(tx.segments(name))
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
