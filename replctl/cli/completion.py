"""Shell completion of names (issue 18): location and group names read from the catalog the command line
points at.

Completion runs before any command, inside the shell's key press: it must never print an error into the
shell nor hang on it, so any failure (no catalog, an unreachable server, a bad config) completes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from replctl.services.ports import CatalogTransaction


def _settings_flags(ctx: Any) -> dict[str, Any]:
    # The global options typed so far (Click parsed them, without running the root callback).
    root = ctx.find_root().params if ctx is not None else {}
    return {name: root.get(name) for name in ("config", "db", "store")} | {"spark_conf": []}


def _names(ctx: Any, incomplete: str, read: Callable[[CatalogTransaction], Iterable[str]]) -> list[str]:
    """The names `read` finds in the catalog that start with `incomplete`, sorted; nothing on any error."""
    try:
        from replctl.cli.context import AppContext
        from replctl.config import resolve

        app = AppContext(settings=resolve(_settings_flags(ctx)))
        try:
            with app.catalog().transaction(readonly=True) as tx:
                names = set(read(tx))
        finally:
            app.close()
    except Exception:  # completion stays quiet whatever went wrong (module docstring)
        return []
    return sorted(name for name in names if name.startswith(incomplete))


def _locations(tx: CatalogTransaction) -> list[str]:
    return [loc.name for loc in tx.locations() if not loc.retired]


def _groups(tx: CatalogTransaction) -> list[str]:
    from replctl.services.topology_state import load_state

    return list(load_state(tx).groups)


def _members(tx: CatalogTransaction) -> list[str]:
    from replctl.services.topology_state import load_state

    return [member for members in load_state(tx).groups.values() for member in members]


def location_names(ctx: Any, incomplete: str) -> list[str]:
    """The active locations whose name starts with `incomplete`; nothing on any error."""
    return _names(ctx, incomplete, _locations)


def group_names(ctx: Any, incomplete: str) -> list[str]:
    """The declared groups (RFC1) whose name starts with `incomplete`; nothing on any error."""
    return _names(ctx, incomplete, _groups)


def location_or_group_names(ctx: Any, incomplete: str) -> list[str]:
    """Active locations and declared groups (either side of a filter may name a group, RFC2)."""
    return _names(ctx, incomplete, lambda tx: [*_locations(tx), *_groups(tx)])


def member_names(ctx: Any, incomplete: str) -> list[str]:
    """The locations that are members of a declared group (`topology failover --from/--to`, FO1)."""
    return _names(ctx, incomplete, _members)
