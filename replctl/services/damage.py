"""The census of damage run before every write to a location and by `status` (core.damage, DR0).

A damaged location takes no appends, replication into it, deletion at it or compaction of it: each would
build on a log that lost events, and the next recovery, which trusts the catalog, would drop what was added
(issue 14, case 2). They exit 4 with the hint to recover, as while a recovery is under way.
"""

from __future__ import annotations

from replctl.core.damage import SegmentDamage, census, describe
from replctl.core.model import Location, LocationState, Segment
from replctl.errors import DamagedLog, LockHeld
from replctl.failpoints import hit
from replctl.services.ports import LogStore


def find_damage(store: LogStore, segments: list[Segment]) -> list[SegmentDamage]:
    """The catalogued segments the store does not hold as recorded (names and sizes; local stores only)."""
    if not store.is_local or not segments:
        return []
    return census(segments, {s.path: _stored(store, s) for s in segments})


def _stored(store: LogStore, segment: Segment) -> dict[str, int] | None:
    """What the census needs of a segment's files: a row naming its files needs only theirs, looked up by
    name; the folder is listed when the row names none, or when none of its files is there, to tell a
    segment gone (or emptied) from one whose files differ (`core.damage.census`)."""
    if segment.files:
        found = store.file_sizes(segment.path, [f.name for f in segment.files])
        if found:
            return found
    return store.segment_files(segment.path)


def refuse_damaged(store: LogStore, name: str, segments: list[Segment]) -> None:
    """Exit 4 (`damaged`, DR0) when `name`'s log is damaged: it is neither read (no decision rests on a
    partial read) nor written until it is recovered."""
    damage = find_damage(store, segments)
    if damage:
        hit("damage.before-refusal")  # a crash here has written nothing; the re-run refuses the same way
        raise DamagedLog(
            name, f"{describe(name, damage)}; it is neither read nor written until it is recovered (DR0)"
        )


def refuse_unwritable(store: LogStore, location: Location, segments: list[Segment]) -> None:
    """Exit 4 when nothing may be written to `location`: it is recovering, or its log is damaged (DR0)."""
    if location.state is LocationState.RECOVERING:
        raise LockHeld(
            f"{location.name} is recovering; nothing is written to it until recovery ends (DR0)",
            code="recovering",
            hint=f"finish it: replctl recover location {location.name}",
        )
    refuse_damaged(store, location.name, segments)
