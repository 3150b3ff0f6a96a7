"""Removing what a committed change left in the store: the old segment folders of a deletion or a compaction.

These removals run after the catalog commit (REP3: a crash before it leaves orphans, never lost rows). A store
that refuses one must not end the command with its bare error, read as "nothing was done": the change stands,
and for a deletion the events' bytes are still on the storage. The error says both, names the folders left and
how to remove them.
"""

from __future__ import annotations

from collections.abc import Sequence

from replctl.errors import EnvironmentFailure
from replctl.services.ports import LogStore


def remove_after_commit(
    store: LogStore, location: str, paths: Sequence[str], *, committed: str, consequence: str
) -> None:
    """Remove the segment folders `paths` of `location` that the committed change `committed` left behind.

    Every folder is tried, so that as little as possible stays. When the store refuses any, raises an
    `EnvironmentFailure` (exit 6: the store failed, code `store-leftovers`) whose message says that `committed`
    stands, which folders are left and `consequence` (what they still hold), with the command that removes them.
    """
    left: list[str] = []
    said: list[str] = []
    for path in paths:
        try:
            store.remove(path)
        except EnvironmentFailure as exc:
            left.append(path)
            said.append(_reason(exc))
    if not left:
        return
    if store.is_local:
        # No catalog row names them any more: they are orphans, which `--gc` collects once the store allows.
        hint = f"let the store remove them (permissions, locks), then: replctl log compact {location} --gc"
    else:
        hint = "remove them with the store's own tools (log compact --gc needs a local store): " + ", ".join(
            f"{store.root}/{path}" for path in left
        )
    raise EnvironmentFailure(
        f"{committed}, but the store refused to remove {len(left)} folder(s) the change left behind: "
        f"{', '.join(left)} ({said[0]}); the change stands and is not undone: {consequence}",
        code="store-leftovers",
        hint=hint,
        details={"committed": committed, "left": left},
    )


def _reason(exc: EnvironmentFailure) -> str:
    """Why the store refused, in its own words: the system's reason when it gave one ("Permission denied"),
    else the whole message (which names the path again)."""
    cause = exc.__cause__
    if isinstance(cause, OSError) and cause.strerror:
        return cause.strerror
    return exc.message
