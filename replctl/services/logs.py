"""Log use cases: append (EM1, ROLE1), show, verify (§9), compact.

An append is made idempotent across a crash (REP3) by the digest of its input: it is journalled in the
operation's args, and the commit step `append` lands in the same transaction as the segment row. A re-run of
the same append at the same location that finds the latest such operation interrupted after that commit
(never finished, or failed after it) appends nothing and completes the interrupted operation instead; one
that finds it finished appends again, as an operator repeating an append on purpose expects.
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, replace
from itertools import islice
from pathlib import Path
from typing import Any

from replctl import localfiles
from replctl.core import recovery as dr
from replctl.core.damage import describe
from replctl.core.events import MAX_PAYLOAD_BYTES, NewEvent, parse_event_text, parse_jsonl
from replctl.core.journal import Operation, Outcome
from replctl.core.model import Role, Segment
from replctl.core.outcomes import AllOrNothing, Completion
from replctl.core.retirement import clocks
from replctl.core.vectortime import VectorTime
from replctl.errors import DamagedLog, EnvironmentFailure, InvalidInput, Refused
from replctl.failpoints import hit
from replctl.services import plans
from replctl.services.damage import find_damage, refuse_unwritable
from replctl.services.lookup import get_location
from replctl.services.operations import OperationContext, applied_plan, location_resource, operation
from replctl.services.ports import Catalog, CatalogTransaction, DataPlane, EventFiles


@dataclass(frozen=True)
class AppendSource:
    """Where the events of one append come from (exactly one is set)."""

    events: tuple[NewEvent, ...] = ()
    parquet: str | None = None
    generate: int | None = None
    seed: int = 0

    def digest(self) -> str:
        """`sha256:<hex>` of the input, so that a re-run of the same append is recognised (REP3).

        Events (from `--event` or a `.jsonl` file) are hashed as their canonical list, so that spelling
        and key order do not matter; a Parquet file or folder by its bytes (folder: every file, by relative
        path); `--generate N` by N and the seed, from which the job derives the events.
        """
        sha = hashlib.sha256()
        if self.generate is not None:
            sha.update(f"generate:{self.generate}:{self.seed}".encode())
        elif self.parquet is not None:
            sha.update(b"parquet:" + str(localfiles.digest(Path(self.parquet))).encode())
        else:
            rows = [event.as_row() for event in self.events]
            canonical = json.dumps(rows, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            sha.update(b"events:" + canonical.encode())
        return f"sha256:{sha.hexdigest()}"


def read_source(
    event_texts: list[str],
    file: Path | None,
    generate: int | None,
    seed: int,
    max_payload_bytes: int = MAX_PAYLOAD_BYTES,
    *,
    event_files: EventFiles,
    location: str = "LOC",
) -> AppendSource:
    """Parse and validate the input before anything is written (a bad one exits 2, nothing changes).

    `location` is the location the events are for, named in the hint of a refusal (issue 18).

    Every path gets the same checks (issue 19): `--event`, a `.jsonl` file and a Parquet file or folder
    (`event_files`, before any job reads it), each payload within `max_payload_bytes`.
    """
    given = sum([bool(event_texts), file is not None, generate is not None])
    if given != 1:
        raise InvalidInput(
            "give exactly one of --event, --file or --generate",
            code="bad-option",
            hint=f'replctl log append {location} --event \'{{"key": "e1"}}\'',
        )
    if generate is not None:
        if generate < 1:
            raise InvalidInput(f"--generate takes a positive count, got {generate}", code="bad-number")
        return AppendSource(generate=generate, seed=seed)
    if file is not None:
        if file.is_dir() or file.suffix == ".parquet":
            if not file.exists():
                raise InvalidInput(f"no such file: {file}", code="bad-file")
            event_files.check_parquet_events(file, max_payload_bytes)
            return AppendSource(parquet=str(file.resolve()))  # a Parquet file or a folder of them
        if not file.is_file():
            kind = localfiles.kind_of(file)
            # A device or FIFO named by mistake: say what it is, not that nothing is there.
            what = f"{file} is {kind}, not a file" if kind else f"no such file: {file}"
            raise InvalidInput(what, code="bad-file")
        if file.suffix != ".jsonl":
            raise InvalidInput(f"{file}: expected a .jsonl or .parquet file", code="bad-file")
        data = file.read_bytes()
        # Under `replctl apply`: the bytes parsed are the plan's, not only the ones checked before the command.
        plans.check_read(applied_plan(), "--file", file, data)
        return AppendSource(events=tuple(parse_jsonl(data, file.name, max_payload_bytes)))
    return AppendSource(
        events=tuple(
            parse_event_text(t, f"--event #{i}", max_payload_bytes) for i, t in enumerate(event_texts, 1)
        )
    )


APPEND_COMMAND = "log append"


@dataclass(frozen=True)
class AppendOutcome(AllOrNothing):
    """`log append`: the seqs the events took (EM1) and the location's CVV after them (EM2).

    A dry run knows `seq_to` and `cvv` only when it knows the count (not for a Parquet file's, issue 14);
    `resumed_from` is the interrupted append this one completed instead of appending again (REP3).
    """

    location: str
    dry_run: bool
    appended: int | None
    seq_from: int
    seq_to: int | None = None
    cvv: dict[str, int] | None = None
    resumed_from: str | None = None

    def to_json(self) -> dict[str, Any]:
        """`log append --json` (cli.md): the keys a dry run cannot know are left out, not null."""
        doc: dict[str, Any] = {
            "ok": True,
            "location": self.location,
            "dry_run": self.dry_run,
            "appended": self.appended,
            "seq_from": self.seq_from,
        }
        if self.seq_to is not None:
            doc["seq_to"] = self.seq_to
        if self.cvv is not None:
            doc["cvv"] = self.cvv
        if self.resumed_from is not None:
            doc["resumed_from"] = self.resumed_from
        return doc


# The journal step committed with the segment row: its presence is what "the events are in" means.
APPEND_STEP = "append"


def append(
    catalog: Catalog,
    engine: DataPlane,
    name: str,
    source: AppendSource,
    *,
    reason: str | None = None,
    dry_run: bool = False,
) -> AppendOutcome:
    """`log append`: EM1 numbering and clocks, refused at hub and read-only locations (ROLE1).

    Idempotent across a crash (REP3): when the latest append of the same input (`AppendSource.digest`) at
    `name` committed its events but was interrupted before it finished, nothing is appended again; the
    document is a normal append's (that append's seq range, the location's current CVV) plus `resumed_from`
    (the interrupted operation's id), and a dry run reports the same without completing anything.
    """
    digest = source.digest()

    def body(ctx: OperationContext) -> AppendOutcome:
        with catalog.transaction() as tx:
            loc = get_location(tx, name)
            clk = clocks(tx.locations())
            interrupted = interrupted_append(tx, name, digest, ctx.id)
            segments = tx.segments(name)
        refuse_unwritable(engine.store, loc, segments)
        if loc.retired:
            raise Refused(f"refused [RET1]: {name} is retired", code="RET1")
        if loc.role is not Role.READ_WRITE:
            raise Refused(
                f"refused [ROLE1]: {name} is a {loc.role.value} location and accepts no local appends",
                code="ROLE1",
                hint="append at a read-write location",
            )
        if interrupted is not None:
            return _resume(ctx, name, digest, interrupted)
        if ctx.dry_run:
            count = source.generate or len(source.events) or None
            if count is None:
                return AppendOutcome(name, dry_run=True, appended=None, seq_from=loc.seq + 1)
            # EM1/EM2: consecutive seqs from seq_from; CVV-X grows by the last event's vt (issue 14: the
            # dry run reports what the run will, where the count is known before reading a Parquet file).
            seq_to = loc.seq + count
            last_vt = clk.emission_base(loc.cvv) | VectorTime({name: seq_to})
            return AppendOutcome(
                name,
                dry_run=True,
                appended=count,
                seq_from=loc.seq + 1,
                seq_to=seq_to,
                cvv=(loc.cvv | last_vt).to_dict(),
            )
        out_rel = engine.store.new_segment_path(name, loc.seq + 1)
        # EM1 after a clock pruning: new vts leave pruned ids out (RET2).
        base = clk.emission_base(loc.cvv).to_dict()
        stats = engine.append_events(
            name,
            events=[e.as_row() for e in source.events] if source.events else None,
            parquet_path=source.parquet,
            generate=source.generate,
            seed=source.seed,
            start_seq=loc.seq + 1,
            cvv=base,
            out_rel=out_rel,
        )
        hit("append.after-write")
        try:
            # Under `replctl apply`: what the job read is what the plan was made from (checked before, too).
            plans.check_still_read(applied_plan())
        except Refused:
            engine.store.remove(out_rel)  # no catalog row names it: nothing was appended
            raise
        # The inventory reads and hashes the new files: before the write lock is taken, not under it (no other
        # operation touches files no catalog row names yet).
        files = engine.record_files(out_rel)
        with ctx.transaction() as tx:
            current = get_location(tx, name)
            # EM2: CVV-X := CVV-X ⊔ vt(e) for every new event; their LUB is the last one's vt.
            tx.add_written_segment(name, out_rel, stats, ctx.id, files)
            tx.put_location(replace(current, seq=stats.seq_hi, cvv=current.cvv | VectorTime(stats.vt_lub)))
            # The step commits with the segment row: a re-run that finds it knows the events are in (REP3).
            ctx.step(
                tx,
                APPEND_STEP,
                {
                    "segment": out_rel,
                    "count": stats.count,
                    "seq_lo": stats.seq_lo,
                    "seq_hi": stats.seq_hi,
                    "digest": digest,
                },
            )
        return AppendOutcome(
            name,
            dry_run=False,
            appended=stats.count,
            seq_from=stats.seq_lo,
            seq_to=stats.seq_hi,
            cvv=(current.cvv | VectorTime(stats.vt_lub)).to_dict(),
        )

    return operation(
        catalog,
        command=APPEND_COMMAND,
        args={"location": name, "digest": digest},
        reason=reason,
        resources=[location_resource(name)],
        dry_run=dry_run,
        body=body,
    )


def interrupted_append(
    tx: CatalogTransaction, name: str, digest: str, current: str | None
) -> Operation | None:
    """The append of the same input at `name` that committed its events but never finished, if any (REP3).

    The journal is read newest first, the running operation `current` left out. An append that left no
    effect (refused, or interrupted before its commit) does not count: the one before it decides. The first
    one with an effect decides: finished (`succeeded`, also when it completed an interrupted one) means the
    operator appends the same events again on purpose; committed (its `append` step journalled) but still
    `running`, `failed` or `interrupted` means it was interrupted after its commit, and it is returned.

    Such an operation can no longer commit anything: the caller holds the location's lease, so the
    interrupted one's lease was taken over (its holder died, `holder-died`) or had expired, and fencing
    refuses its commits either way.
    """
    for op in tx.find_operations(APPEND_COMMAND, {"location": name, "digest": digest}):
        if op.id == current:
            continue
        committed = any(step.name == APPEND_STEP for step in op.steps)
        # Ctrl-C after the commit (issue 18) is an interruption like a crash: resumed, never appended twice.
        if op.outcome in (Outcome.RUNNING, Outcome.FAILED, Outcome.INTERRUPTED):
            if committed:
                return op
            continue  # no effect: look further back
        if op.outcome is Outcome.REFUSED:
            continue
        return None  # finished: a repeated append is deliberate
    return None


def _resume(ctx: OperationContext, name: str, digest: str, interrupted: Operation) -> AppendOutcome:
    """Complete the interrupted append instead of appending again: its events are already in (REP3)."""
    detail = next(step.detail for step in interrupted.steps if step.name == APPEND_STEP)
    count, seq_hi = int(detail["count"]), int(detail["seq_hi"])
    seq_lo = int(detail.get("seq_lo", seq_hi - count + 1))
    with ctx.transaction() as tx:
        cvv = get_location(tx, name).cvv.to_dict()
        if not ctx.dry_run and ctx.id is not None:
            # Both operations' journals say what happened, in one transaction with the lease check.
            tx.complete_interrupted(interrupted.id, by=ctx.id)
            ctx.step(
                tx,
                "resume",
                {"operation": interrupted.id, "seq_lo": seq_lo, "seq_hi": seq_hi, "digest": digest},
            )
    return AppendOutcome(
        name,
        dry_run=ctx.dry_run,
        appended=count,
        seq_from=seq_lo,
        seq_to=seq_hi,
        cvv=cvv,
        resumed_from=interrupted.id,
    )


def check_stored(engine: DataPlane, name: str, segments: list[Segment]) -> None:
    """Refuse to read a log whose catalogued segments are gone from the store (a disaster, DR0), with the way out."""
    damage = find_damage(engine.store, segments)
    if damage:
        raise EnvironmentFailure(
            describe(name, damage),
            code="store-damaged",
            hint=f"replctl recover location {name}",
        )


@dataclass(frozen=True)
class LogPage:
    """`log show` as a stream: the log's metadata, its events in seq order (read lazily), and how many events
    are physically stored from `from_seq` on (the segments' catalogued counts, no read needed)."""

    location: str
    seq: int
    deleted_upto: int
    logical_deleted_upto: int
    events: Iterator[dict[str, Any]]
    stored: int
    newest: int | None = None  # only the newest N events were read (a terminal's default view)

    def head(self) -> dict[str, Any]:
        """The `log show --json` document but its `events`: the CLI writes the events after it one by one as
        they are read, so a long log is never held whole (issue 18), and `ok` after them (`emit_json_stream`),
        so that a read failing part way still ends the one document."""
        return {
            "ok": True,
            "location": self.location,
            "seq": self.seq,
            "deleted_upto": self.deleted_upto,
            "logical_deleted_upto": self.logical_deleted_upto,
        }

    def to_json(self) -> dict[str, Any]:
        """The whole `log show --json` document (cli.md), its events read into the list (the page's events
        can be read once)."""
        return {**self.head(), "events": list(self.events)}


def show(
    catalog: Catalog,
    engine: DataPlane,
    name: str,
    *,
    from_seq: int = 0,
    limit: int | None = None,
) -> dict[str, Any]:
    """`log show`: the physically stored events in seq order (cli.md JSON shape)."""
    doc = show_page(catalog, engine, name, from_seq=from_seq, limit=limit).to_json()
    del doc["ok"]
    return doc


def show_page(
    catalog: Catalog,
    engine: DataPlane,
    name: str,
    *,
    from_seq: int = 0,
    limit: int | None = None,
    newest: int | None = None,
) -> LogPage:
    """The stored events of a log from `from_seq` on, at most `limit`, or only the `newest` N (issue 18).

    On a local store the events are read one segment at a time, so a long log is never held whole in memory;
    `newest` reads only the last segments, the ones that hold those N events (their catalogued counts say
    which). Logically deleted events are included (cli.md), as the stored log holds them.
    """
    with catalog.transaction(readonly=True) as tx:
        loc = get_location(tx, name)
        segments = sorted((s for s in tx.segments(name) if s.seq_hi >= from_seq), key=lambda s: s.seq_lo)
    if segments:
        check_stored(engine, name, segments)
    stored = sum(s.count for s in segments)
    if newest is not None:
        tail: list[Segment] = []
        for segment in reversed(segments):
            tail.insert(0, segment)
            if sum(s.count for s in tail) >= newest:
                break
        segments = tail
    # Spark reads the segments in one job: it takes the limit itself rather than reading the whole log.
    events = _read_events(engine, segments, from_seq, None if newest is not None else limit)
    if newest is not None:
        events = iter(deque(events, maxlen=newest))
    elif limit is not None:
        events = islice(events, limit)
    return LogPage(name, loc.seq, loc.deleted_upto, loc.logical_deleted_upto, events, stored, newest)


_EVENT_KEYS = ("seq", "origin", "origin_time", "vt", "type", "key", "tags", "payload")


def _read_events(
    engine: DataPlane, segments: list[Segment], from_seq: int, limit: int | None
) -> Iterator[dict[str, Any]]:
    if not segments:
        return
    try:
        # Each segment is read whole and counted against its row before its events are shown.
        for e in engine.read_log(segments, from_seq=from_seq, limit=limit):
            yield {k: e[k] for k in _EVENT_KEYS}
    except DamagedLog as damaged:
        # Found by the read itself (a file lost or changed after the census): the census's refusal.
        raise EnvironmentFailure(damaged.message, code="store-damaged", hint=damaged.hint) from damaged


@dataclass(frozen=True)
class LogCheck:
    """One log's verdict under `log verify`: the invariant violations found (none: the log is ok)."""

    location: str
    violations: tuple[dict[str, Any], ...]

    @property
    def ok(self) -> bool:
        """Whether every invariant holds on this log."""
        return not self.violations

    @property
    def hint(self) -> str:
        """The next command for a violated log: a segment file missing, truncated or overwritten (SEG) is
        damage, repaired by recovery (DR0); any other violation is inspected first."""
        if any(v["invariant"] == "SEG" for v in self.violations):
            return f"replctl recover location {self.location}"
        return f"inspect it with: replctl log show {self.location}"


@dataclass(frozen=True)
class VerifyOutcome:
    """`log verify`: each log's check and the topology's I6 violations; violated when any is found."""

    logs: tuple[LogCheck, ...]
    topology: tuple[dict[str, Any], ...]

    @property
    def completion(self) -> Completion:
        """Violated (exit 3) when any log or the topology breaks an invariant."""
        return (
            Completion.VIOLATED
            if self.topology or not all(log.ok for log in self.logs)
            else Completion.COMPLETE
        )

    def to_json(self) -> dict[str, Any]:
        """`log verify --json` (cli.md): on a violation `ok` is false and `error` names the first one."""
        bad = [log for log in self.logs if not log.ok]
        failed = self.completion is Completion.VIOLATED
        doc: dict[str, Any] = {
            "ok": not failed,
            "logs": [
                {"location": log.location, "ok": log.ok, "violations": list(log.violations)}
                for log in self.logs
            ],
            "topology": list(self.topology),
        }
        if failed:
            first = bad[0].violations[0] if bad else self.topology[0]
            where = f"{bad[0].location}: " if bad else ""
            doc["error"] = {
                "code": first["invariant"],
                "message": where + first["message"],
                "hint": bad[0].hint if bad else "inspect it with: replctl log show ",
            }
        return doc


def verify(catalog: Catalog, engine: DataPlane, names: list[str]) -> VerifyOutcome:
    """`log verify`: the invariants of rules.md §9 on each log; the catalog-only ones without Spark."""
    from replctl.core.topology_rules import validate as validate_state
    from replctl.services.topology_state import load_state

    with catalog.transaction(readonly=True) as tx:
        every = {loc.name: loc for loc in tx.locations()}
        wanted = names or [n for n, loc in every.items() if not loc.retired]
        for n in wanted:
            get_location(tx, n)
        connections = tx.connections()
        segments = {n: tx.segments(n) for n in wanted}
        state = load_state(tx)
    report: list[LogCheck] = []
    for n in wanted:
        loc = every[n]
        found: list[dict[str, Any]] = []
        for c in connections:  # I5: progress(Y,X) ≤ X.seq
            if c.source == n and c.progress > loc.seq:
                found.append(
                    {
                        "invariant": "I5",
                        "seq": c.progress,
                        "message": f"progress({c.target},{n}) = {c.progress} > {n}.seq = {loc.seq}",
                    }
                )
        # While A recovers, an entry held back is not in its CVV yet (DR1): I3 and I4 count the rest.
        dvv, baseline = dr.counted_now(loc)
        found = (
            log_invariants(engine, segments[n], seq=loc.seq, cvv=loc.cvv, dvv=dvv, baseline=baseline) + found
        )
        report.append(LogCheck(n, tuple(found)))
    i6 = [v for v in validate_state(state) if not v.warning]
    return VerifyOutcome(
        tuple(report), tuple({"invariant": "I6", "code": v.code, "message": v.message} for v in i6)
    )


def log_invariants(
    engine: DataPlane,
    segments: list[Segment],
    *,
    seq: int,
    cvv: VectorTime,
    dvv: VectorTime,
    baseline: VectorTime,
    described_by: str = "the catalog",
) -> list[dict[str, Any]]:
    """I1–I4 and I7 of one log: `segments` (in seq order, read from `engine.store`) against the metadata
    they should agree with (`described_by` names it in messages). `log verify` passes a live log and its
    catalog row; `backup verify` a backup's copies and its manifest (services.backups). Spark starts only
    when there are events to read."""
    found: list[dict[str, Any]] = []
    if not dvv <= cvv:  # I4
        found.append({"invariant": "I4", "seq": None, "message": f"DVV {dvv} ≰ CVV {cvv}"})
    if segments:
        for v in engine.verify_log(
            segments,
            seq=seq,
            cvv=cvv.to_dict(),
            dvv=dvv.to_dict(),
            baseline=baseline.to_dict(),
            described_by=described_by,
        ):
            found.append({"invariant": v.code, "seq": v.seq, "message": v.message})
    elif cvv != (dvv | baseline):  # I3 for an empty log
        found.append(
            {
                "invariant": "I3",
                "seq": None,
                "message": f"CVV {cvv} ≠ LUB of stored and deleted vts {dvv | baseline}",
            }
        )
    return found
