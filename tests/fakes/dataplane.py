"""An in-memory data plane: the `replctl.services.ports.DataPlane` port over Python lists, no JVM, no files.

A segment is a list of event dicts under its relative path; each job is the rule it implements, written
plainly (REP1's four steps, DEL1's cut, DEL3's coverage through the identity...). It is a second
implementation on purpose: the service stories run against it in seconds and against the Spark adapter as a
contract suite (tests/services), so where the two disagree a story fails, and the fake is checked, not trusted.

Filters are evaluated with sqlglot's Python executor (the same Spark SQL dialect the catalog stores); it
covers the plain comparisons the stories use, not every Spark function.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from replctl.core.jobs import (
    InvariantViolation,
    PassResult,
    PassSpec,
    RewriteResult,
    SegmentRewrite,
    SegmentStats,
    appended_stats,
)
from replctl.core.model import Segment, SegmentFile, StoreMarker
from replctl.core.recovery import FileRead
from replctl.core.vectortime import VectorTime
from replctl.errors import DamagedLog, EnvironmentFailure, InvalidInput

# The one data file of a fake segment (what the census compares with the catalog row, DR0).
DATA_FILE = "events"


class FakeStore:
    """The log store as a dict: relative segment path → its events in seq order."""

    def __init__(self) -> None:
        self.segments: dict[str, list[dict[str, Any]]] = {}
        # Each segment's digest when written: what a real segment row records of its files' bytes.
        self.written: dict[str, str | None] = {}
        self.marker: StoreMarker | None = None
        self._ids = itertools.count(1)

    @property
    def root(self) -> str:
        """A name for messages."""
        return "memory://fake-store"

    def create_root(self, mode: int = 0o700) -> None:
        """Nothing to create."""

    def marker_uri(self) -> str:
        """Where the marker would be."""
        return f"{self.root}/replctl-store.json"

    def root_exists(self) -> bool:
        """Always there."""
        return True

    def read_marker(self) -> StoreMarker | None:
        """The marker written, if any."""
        return self.marker

    def write_marker(self, marker: StoreMarker) -> None:
        """Keep the marker."""
        self.marker = marker

    @property
    def is_local(self) -> bool:
        """True: the fake holds every segment itself, so the census and clean-ups run as on a local store."""
        return True

    def new_segment_path(self, location: str, first_seq: int) -> str:
        """A fresh path, unique like the real store's (a counter instead of a random suffix)."""
        return f"{location}/seg-{first_seq:012d}-{next(self._ids):04d}"

    def local_path(self, relative: str) -> Any:
        """Not a file system: a service that needs a local path is not on the ports yet."""
        raise NotImplementedError(f"the fake store has no local path for {relative}")

    def exists(self, relative: str) -> bool:
        """True when a segment is held at `relative`."""
        return relative in self.segments

    def remove(self, relative: str) -> None:
        """Drop the segment at `relative`; nothing there is not an error (as the real store)."""
        self.segments.pop(relative, None)
        self.written.pop(relative, None)

    def identity_extent(self, segment: Segment, origins: Sequence[str]) -> dict[str, tuple[int, int]]:
        """Per origin of `origins`, the smallest and largest origin_time in the segment."""
        found: dict[str, tuple[int, int]] = {}
        for e in self.segments.get(segment.path, []):
            if e["origin"] in origins:
                lo, hi = found.get(e["origin"], (e["origin_time"], e["origin_time"]))
                found[e["origin"]] = (min(lo, e["origin_time"]), max(hi, e["origin_time"]))
        return found

    def list_segment_dirs(self, location: str) -> list[str]:
        """Every segment held for `location`, catalogued or not."""
        return sorted(p for p in self.segments if p.startswith(f"{location}/"))

    def segment_files(self, relative: str) -> dict[str, int] | None:
        """The one data file of the segment, its "size" being its row count; None when it is gone."""
        rows = self.segments.get(relative)
        return None if rows is None else {DATA_FILE: len(rows)}

    def file_sizes(self, relative: str, names: Sequence[str]) -> dict[str, int]:
        """The segment's one data file when it is among `names`, as `segment_files` gives it."""
        return {name: size for name, size in (self.segment_files(relative) or {}).items() if name in names}

    def copy_segment(self, src_rel: str, dst_rel: str, names: Sequence[str] | None = None) -> None:
        """Copy a segment's events to another path."""
        self.segments[dst_rel] = [dict(e) for e in self.segments[src_rel]]
        self.written[dst_rel] = self.written.get(src_rel)

    def segment_digest(self, relative: str) -> str | None:
        """A sha256 of the segment's events (the fake's own digest: no backup store copies its segments)."""
        rows = self.segments.get(relative)
        if rows is None:
            return None
        return hashlib.sha256(json.dumps(rows, sort_keys=True, default=str).encode()).hexdigest()

    def changed_files(self, segment: Segment) -> frozenset[str]:
        """The segment's one data file when its events are no longer the ones written, their count (its
        "size") kept: the fake's bit rot, told by the digest taken at write (`written`)."""
        rows = self.segments.get(segment.path)
        recorded = self.written.get(segment.path)
        if rows is None or recorded is None or len(rows) != segment.count:
            return frozenset()
        return frozenset() if self.segment_digest(segment.path) == recorded else frozenset({DATA_FILE})

    def write(self, relative: str, events: list[dict[str, Any]]) -> None:
        """Write a new segment; like Spark's `mode("error")`, an existing path is refused."""
        if relative in self.segments:
            raise AssertionError(f"segment {relative} written twice")
        self.segments[relative] = sorted(events, key=lambda e: e["seq"])
        self.written[relative] = self.segment_digest(relative)


def identity_covered(event: Mapping[str, Any], cvv: Mapping[str, int]) -> bool:
    """CF1 through the identity (RET4): `CVV[origin] ≥ origin_time`."""
    return int(cvv.get(event["origin"], 0)) >= int(event["origin_time"])


def stored_lub(events: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """The LUB of `vt ⊔ identity` over `events` (a segment row's vt_lub, RET4)."""
    lub = VectorTime()
    for e in events:
        lub = lub | VectorTime(e["vt"]) | VectorTime({e["origin"]: e["origin_time"]})
    return lub.to_dict()


def stats_of(events: Sequence[Mapping[str, Any]]) -> SegmentStats | None:
    """A segment row's statistics for `events`, None for none."""
    if not events:
        return None
    return SegmentStats(len(events), events[0]["seq"], events[-1]["seq"], stored_lub(events))


class FakeDataPlane:
    """The data-plane port over a `FakeStore`."""

    def __init__(self, store: FakeStore | None = None) -> None:
        self.store = store or FakeStore()

    def _read(self, segments: Sequence[Segment]) -> list[dict[str, Any]]:
        """Every event of `segments` in seq order, each segment counted against its row (DR0)."""
        events: list[dict[str, Any]] = []
        for seg in segments:
            rows = self.store.segments.get(seg.path)
            if rows is None or len(rows) != seg.count:
                raise DamagedLog(seg.location, f"segment {seg.path} does not hold its {seg.count} events")
            events.extend(dict(e) for e in rows)
        return sorted(events, key=lambda e: e["seq"])

    def record_files(self, relative: str) -> tuple[SegmentFile, ...] | None:
        """The inventory of a written segment: one file, rows and seq range (None when the segment is not
        there, e.g. a pass that wrote nothing, as the real store's)."""
        rows = self.store.segments.get(relative)
        if not rows:
            return None
        return (SegmentFile(DATA_FILE, len(rows), len(rows), rows[0]["seq"], rows[-1]["seq"]),)

    def append_events(
        self,
        location: str,
        *,
        events: list[dict[str, Any]] | None = None,
        parquet_path: str | None = None,
        generate: int | None = None,
        seed: int = 0,
        start_seq: int,
        cvv: Mapping[str, int],
        out_rel: str,
    ) -> SegmentStats:
        """EM1: seq = origin_time = start_seq + i, vt = cvv ⊔ {location: seq} (as `logstore.writer`)."""
        if events is None:
            raise NotImplementedError("the fake appends given events only (no Parquet, no --generate)")
        if not events:
            raise InvalidInput("no events to append")
        own_base = int(cvv.get(location, 0))
        rows = []
        for i, e in enumerate(events):
            seq = start_seq + i
            vt = {k: int(v) for k, v in cvv.items() if k != location and int(v)}
            vt[location] = max(seq, own_base)
            rows.append(
                {
                    "seq": seq,
                    "origin": location,
                    "origin_time": seq,
                    "vt": dict(sorted(vt.items())),
                    "type": e.get("type"),
                    "key": e.get("key"),
                    "tags": list(e.get("tags") or []),
                    "payload": e.get("payload"),
                }
            )
        self.store.write(out_rel, rows)
        return appended_stats(location, start_seq, len(rows), cvv)

    def read_log(
        self, segments: Sequence[Segment], *, from_seq: int = 0, limit: int | None = None
    ) -> Iterator[dict[str, Any]]:
        """The stored events from `from_seq` in seq order, at most `limit`."""
        events = [e for e in self._read(segments) if e["seq"] >= from_seq]
        yield from events[:limit] if limit is not None else events

    def verify_log(
        self,
        segments: Sequence[Segment],
        *,
        seq: int,
        cvv: Mapping[str, int],
        dvv: Mapping[str, int],
        baseline: Mapping[str, int],
        described_by: str = "the catalog",
    ) -> list[InvariantViolation]:
        """SEG, I7, I2, I1 and I3 (rules.md §9) written plainly, pairwise where Spark aggregates; the messages
        are the fake's own (the stories compare which invariants fail, not the wording)."""
        found: list[InvariantViolation] = []
        events: list[dict[str, Any]] = []
        for seg in segments:
            rows = self.store.segments.get(seg.path, [])
            if stats_of(rows) is None or (len(rows), rows[0]["seq"], rows[-1]["seq"]) != (
                seg.count,
                seg.seq_lo,
                seg.seq_hi,
            ):
                found.append(InvariantViolation("SEG", f"{seg.path} differs from {described_by}", seg.seq_lo))
            events.extend(rows)
        seqs = [e["seq"] for e in events]
        if any(b <= a for a, b in itertools.pairwise(seqs)) or (seqs and seqs[-1] > seq):
            found.append(InvariantViolation("I7", "seq is not strictly increasing up to the location's seq"))
        identities = [(e["origin"], e["origin_time"]) for e in events]
        if len(set(identities)) != len(identities):
            found.append(InvariantViolation("I2", "an identity is stored twice"))
        stamps = [VectorTime(e["vt"]) | VectorTime({e["origin"]: e["origin_time"]}) for e in events]
        for i, later in enumerate(stamps):
            if any(later < earlier for earlier in stamps[:i]):
                found.append(InvariantViolation("I1", "an event is stored after one it precedes", seqs[i]))
                break
        expected = VectorTime(stored_lub(events)) | VectorTime(dvv) | VectorTime(baseline)
        if VectorTime(cvv) != expected:
            found.append(InvariantViolation("I3", f"CVV {dict(cvv)} ≠ {expected.to_dict()}"))
        return found

    def replicate_pass(self, spec: PassSpec) -> PassResult:
        """REP1 over X's events with seq > progress: (1) CF1 skip, (2) filter skip (NULL rejects), (3) RFC2's
        admission check blocks the pass, (4) else written with seq shifted by `target_seq - progress`."""
        events = [e for e in self._read(spec.source_segments) if e["seq"] > spec.progress]
        examined = causal = filtered = 0
        written: list[dict[str, Any]] = []
        blocked_at: int | None = None
        last = spec.progress
        for e in events:
            if identity_covered(e, spec.target_cvv):
                causal += 1
            # The filter is asked only of the events the pass examines: none past a block (REP1 (3)).
            elif not _filter([e], spec.filter_sql):
                filtered += 1
            elif spec.admission and not _admissible(e, spec.admission, spec.target_cvv):
                blocked_at = e["seq"]
                break
            else:
                written.append({**e, "seq": e["seq"] + spec.target_seq - spec.progress})
            examined += 1
            last = e["seq"]
        segment = None
        if written:
            self.store.write(spec.out_rel, written)
            segment = stats_of(written)
        return PassResult(examined, len(written), causal, filtered, blocked_at, last, segment)

    def filter_failure(
        self,
        segments: Sequence[Segment],
        progress: int,
        filter_sql: str,
        target_cvv: Mapping[str, int] | None = None,
        *,
        admission: Sequence[str] = (),
    ) -> str | None:
        """The evaluator's error when `filter_sql` fails on the events after `progress` (those CF1 does not
        skip into `target_cvv`, when given, and with `admission`, up to the first one RFC2 blocks), else
        None."""
        events = [e for e in self._read(segments) if e["seq"] > progress]
        if target_cvv is not None:
            events = [e for e in events if not identity_covered(e, target_cvv)]
        try:
            for e in events:
                admitted = _filter([e], filter_sql)
                if (
                    admission
                    and admitted
                    and target_cvv is not None
                    and not _admissible(e, admission, target_cvv)
                ):
                    break  # REP1 (3): the pass stops here and asks nothing of the events after it
        except Exception as exc:  # the evaluator's own errors, reported as Spark's first line is
            return str(exc).splitlines()[0]
        return None

    def first_needed(
        self,
        segments: Sequence[Segment],
        *,
        upto: int,
        targets: Mapping[str, tuple[int, Mapping[str, int]]],
    ) -> dict[str, int | None]:
        """DEL3: per target, the smallest seq ≤ `upto` after its progress that its CVV does not cover."""
        events = [e for e in self._read(segments) if e["seq"] <= upto] if segments else []
        return {
            name: min(
                (e["seq"] for e in events if e["seq"] > progress and not identity_covered(e, cvv)),
                default=None,
            )
            for name, (progress, cvv) in targets.items()
        }

    def dropped_lub(self, segment: Segment, *, upto: int) -> dict[str, int]:
        """DEL2 for a dry run: the LUB of what a cut at `upto` drops from `segment`."""
        return stored_lub([e for e in self._read([segment]) if e["seq"] <= upto])

    def rewrite_from(
        self,
        segment: Segment,
        keep_from_seq: int,
        out_rel: str,
        *,
        keys: Sequence[str] | None = None,
        identity_origins: Sequence[str] = (),
    ) -> RewriteResult:
        """DEL1: keep the events seq ≥ `keep_from_seq` in a new segment; none is left when nothing remains."""
        events = self._read([segment])
        kept = [e for e in events if e["seq"] >= keep_from_seq]
        if kept:
            self.store.write(out_rel, kept)
        return RewriteResult(stats_of(kept), stats_of([e for e in events if e["seq"] < keep_from_seq]))

    def last_seq_emitted_before(self, segments: Sequence[Segment], cutoff: datetime) -> int | None:
        """Not implemented: the fake's events carry no wall-clock emission time."""
        raise NotImplementedError("--older-than runs on the Spark data plane only")

    def census(self, segments: Sequence[Segment]) -> dict[str, dict[str, FileRead]]:
        """DR0: per segment still held, its one data file's rows and seq range."""
        found: dict[str, dict[str, FileRead]] = {}
        for seg in segments:
            rows = self.store.segments.get(seg.path)
            if rows:
                found[seg.path] = {DATA_FILE: FileRead(len(rows), rows[0]["seq"], rows[-1]["seq"])}
        return found

    def truncate_below(
        self,
        segment: Segment,
        keep_below: int,
        out_rel: str,
        *,
        keys: Sequence[str],
        identity_origins: Sequence[str] = (),
    ) -> SegmentStats | None:
        """DR1: what the damaged segment still holds below `keep_below`, as a new segment (None: nothing)."""
        kept = [dict(e) for e in self.store.segments.get(segment.path, []) if e["seq"] < keep_below]
        if kept:
            self.store.write(out_rel, kept)
        return stats_of(kept)

    def survivors_below(self, segment: Segment, keep_below: int) -> SegmentStats | None:
        """DR1 on paper: what `truncate_below` would keep, written nowhere."""
        return stats_of([e for e in self.store.segments.get(segment.path, []) if e["seq"] < keep_below])

    def unheld(
        self,
        segments: Sequence[Segment],
        *,
        seq_from: int,
        seq_below: int | None,
        elsewhere: Sequence[Segment],
        origin: str | None = None,
    ) -> dict[str, list[int]]:
        """DR0, RET1: per origin, the origin times of the events of `segments` in the seq range that no
        segment of `elsewhere` stores (segments the store no longer holds are skipped)."""
        stored = {(e["origin"], e["origin_time"]) for e in self._held(elsewhere)}
        out: dict[str, set[int]] = {}
        for e in self._held(segments):
            inside = e["seq"] >= seq_from and (seq_below is None or e["seq"] < seq_below)
            wanted = inside and (origin is None or e["origin"] == origin)
            if wanted and (e["origin"], e["origin_time"]) not in stored:
                out.setdefault(e["origin"], set()).add(e["origin_time"])
        return {o: sorted(t) for o, t in sorted(out.items())}

    def origin_times(
        self, segments: Sequence[Segment], origin: str, *, above: int, upto: int, seq_below: int | None = None
    ) -> set[int]:
        """DR0's report: the origin times in (`above`, `upto`] of `origin`'s events that `segments` store
        (with seq < `seq_below`, when given)."""
        return {
            e["origin_time"]
            for e in self._held(segments)
            if e["origin"] == origin
            and above < e["origin_time"] <= upto
            and (seq_below is None or e["seq"] < seq_below)
        }

    def _held(self, segments: Sequence[Segment]) -> list[dict[str, Any]]:
        """The events the store still holds of `segments`, whatever a disaster took (no count check)."""
        return [e for seg in segments for e in self.store.segments.get(seg.path, [])]

    def cut_files(self, segment: Segment, from_seq: int) -> None:
        """`drill disaster`: the segment loses its events seq ≥ `from_seq`; with none left it is gone."""
        kept = [e for e in self.store.segments.get(segment.path, []) if e["seq"] < from_seq]
        if kept:
            self.store.segments[segment.path] = kept
        else:
            self.store.remove(segment.path)

    def stored_from(self, segment: Segment, from_seq: int) -> bool:
        """`drill disaster`: whether the segment still holds an event seq ≥ `from_seq`."""
        return any(e["seq"] >= from_seq for e in self.store.segments.get(segment.path, []))

    def prune_log(
        self,
        rewrites: Sequence[SegmentRewrite],
        *,
        key: str,
        keys: Sequence[str],
        identity_origins: Sequence[str] = (),
    ) -> list[SegmentStats | None]:
        """RET2: copy each segment without `key` in its vts; the LUB keeps `key` through the identities."""
        out: list[SegmentStats | None] = []
        for rewrite in rewrites:
            events = [
                {**e, "vt": {k: v for k, v in e["vt"].items() if k != key}}
                for e in self._read([rewrite.source])
            ]
            if events:
                self.store.write(rewrite.target, events)
            out.append(stats_of(events))
        return out

    def compact(
        self,
        segments: Sequence[Segment],
        out_rel: str,
        *,
        keys: Sequence[str] | None = None,
        identity_origins: Sequence[str] = (),
    ) -> SegmentStats:
        """Merge `segments` into one at `out_rel`, same rows, in seq order."""
        events = self._read(segments)
        self.store.write(out_rel, events)
        stats = stats_of(events)
        assert stats is not None
        return stats


def _filter(events: Sequence[Mapping[str, Any]], filter_sql: str | None) -> set[int]:
    """The seqs of `events` the filter affirms (NULL rejects), by sqlglot's Python executor.

    sqlglot reads Spark's CAST as a TRY_CAST (Spark's rules before ANSI); under Spark's ANSI rules a CAST of a
    malformed value raises, so it is evaluated as a plain cast, which raises there too. An evaluator's error
    is the data plane's (`EnvironmentFailure`), as Spark's error of a failing pass is.
    """
    if filter_sql is None:
        return {e["seq"] for e in events}
    if not events:
        return set()
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ExecuteError
    from sqlglot.executor import execute

    def ansi(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.TryCast) and not node.args.get("safe"):
            return exp.Cast(this=node.this, to=node.args["to"])
        return node

    condition = sqlglot.parse_one(filter_sql, dialect="spark").transform(ansi)
    rows = [
        {k: e[k] for k in ("seq", "origin", "origin_time", "type", "key", "tags", "payload")} for e in events
    ]
    try:
        result = execute(exp.select("seq").from_("events").where(condition), tables={"events": rows})
    except ExecuteError as exc:
        raise EnvironmentFailure(f"replication pass failed in the evaluator: {exc}", code="spark") from exc
    return {int(r[0]) for r in result.rows}


def _admissible(event: Mapping[str, Any], admission: Sequence[str], cvv: Mapping[str, int]) -> bool:
    """RFC2: `(vt ⊔ identity)|P ≤ CVV-Y` (a missing key is 0, VT1)."""
    full = VectorTime(event["vt"]) | VectorTime({event["origin"]: event["origin_time"]})
    return all(full[k] <= int(cvv.get(k, 0)) for k in admission)


def payload_of(event: Mapping[str, Any]) -> Any:
    """The payload as JSON, for stories that compare it."""
    return None if event["payload"] is None else json.loads(event["payload"])
