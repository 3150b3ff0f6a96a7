"""What a job checks of the source log it reads, with or without Spark: the catalogued files are there (DR0) and
the vector times hold only the keys the source's CVV knows (I3).

The Spark jobs (`adapters.spark`) and the local pass (`logstore.localpass`) raise these errors from here, so an
operator meets one message whichever of them ran (a read that gives other rows than catalogued is refused by
each reader in its own words: `schema.CheckedRead`, `logstore.reader`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from replctl.adapters.logstore import inventory
from replctl.errors import DamagedLog, EnvironmentFailure

if TYPE_CHECKING:
    from replctl.adapters.logstore import LogStore
    from replctl.core.model import Segment

# Above this many keys a vector is "wide": one column per key would make the generated code of a stage so large
# that the JVM stops compiling it (HotSpot skips methods over 8,000 bytes of bytecode) and every row runs
# interpreted. Measured: a pass over vts of 50 keys took 17x a plain copy with per-key columns. A pass over
# narrow vectors checks the keys of every examined event, one over wide vectors those of the written ones.
WIDE_VECTOR_KEYS = 16


def is_wide(keys: Sequence[str]) -> bool:
    """Whether vectors over `keys` take the per-entry (lambda) path instead of one column per key."""
    return len(keys) > WIDE_VECTOR_KEYS


def outside_keys_failure() -> EnvironmentFailure:
    """A source vt holds a key outside the source's CVV: its catalog and store disagree, nothing is written."""
    return EnvironmentFailure(
        "the source log holds a vector time with a key outside its CVV (I3 is broken at the source); "
        "nothing was replicated",
        code="inconsistent",
        hint="run `replctl log verify` on the source location",
    )


def refuse_missing(store: LogStore, segments: Sequence[Segment]) -> None:
    """DamagedLog (DR0) when a catalogued data file of `segments` is missing or of another size."""
    missing = missing_files(store, segments)
    if missing:
        name = segments[0].location
        raise DamagedLog(
            name,
            f"{name}'s log is damaged: {missing[0]} is missing or of another size than catalogued; nothing was decided "
            "or written from the log (DR0)",
        )


@contextmanager
def damage_explains(store: LogStore, segments: Sequence[Segment]) -> Iterator[None]:
    """Turn a job's failure into DamagedLog when a catalogued file it read is gone or changed meanwhile:
    Spark says only that a file was not found, or that a page failed its CRC (bytes changed at the file's
    size), and the operator's way out is recovery, not the environment."""
    try:
        yield
    except EnvironmentFailure as exc:
        name = segments[0].location if segments else ""
        missing = missing_files(store, segments)
        if missing:
            raise DamagedLog(
                name,
                f"{name}'s log is damaged: {missing[0]} is catalogued but was gone or changed when it was "
                "read; nothing was decided or written from the read (DR0)",
            ) from exc
        changed = changed_files(store, segments, _failure_text(exc))
        if not changed:
            raise
        raise DamagedLog(
            name,
            f"{name}'s log is damaged: {changed[0]} changed since it was written (its SHA-256 differs from "
            "its catalog row's) and fails its read; nothing was decided or written from the read (DR0)",
        ) from exc


def changed_files(store: LogStore, segments: Sequence[Segment], failure: str) -> list[str]:
    """The catalogued data files (store paths) of the `segments` a failed read names in its text (`failure`)
    whose bytes are not the ones written (`inventory.digest_differs`), whether a page failed its CRC or the
    footer no longer parses. Only the named segments are hashed: hashing
    the whole log on every failure would cost a read of it, and would blame a failure that is the
    environment's on a file changed elsewhere in the log."""
    out = []
    for seg in segments:
        if any(f.name in failure for f in seg.files or ()):
            out += [f"{seg.path}/{name}" for name in sorted(inventory.digest_differs(store, seg))]
    return out


def _failure_text(exc: BaseException) -> str:
    """The text of `exc` and of the errors it was raised from: replctl's message keeps Spark's root cause
    only (a page failed its CRC), the file it was reading is named by the error around it."""
    texts = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        texts.append(str(current))
        current = current.__cause__ or current.__context__
    return "\n".join(texts)


def missing_files(store: LogStore, segments: Sequence[Segment]) -> list[str]:
    """The catalogued data files (store paths) of `segments` a local store does not hold at their recorded
    size; none is reported for a remote store, whose reads fail on a missing file instead."""
    if not store.is_local:
        return []
    out = []
    for seg in segments:
        stored = store.segment_files(seg.path) or {}
        if seg.files is None:
            if not stored:
                out.append(seg.path)
            continue
        out += [f"{seg.path}/{f.name}" for f in seg.files if stored.get(f.name) != f.size]
    return out
