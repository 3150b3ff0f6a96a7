"""Shell completion of names (issue 18): location names read from the catalog the command line points at.

Completion runs before any command, inside the shell's key press: it must never print an error into the
shell nor hang on it, so any failure (no catalog, an unreachable server, a bad config) completes nothing.
"""

from __future__ import annotations

from typing import Any


def _settings_flags(ctx: Any) -> dict[str, Any]:
    # The global options typed so far (Click parsed them, without running the root callback).
    root = ctx.find_root().params if ctx is not None else {}
    return {name: root.get(name) for name in ("config", "db", "store")} | {"spark_conf": []}


def location_names(ctx: Any, incomplete: str) -> list[str]:
    """The active locations whose name starts with `incomplete`; nothing on any error."""
    try:
        from replctl.cli.context import AppContext
        from replctl.config import resolve

        app = AppContext(settings=resolve(_settings_flags(ctx)))
        try:
            with app.catalog().transaction(readonly=True) as tx:
                names = [loc.name for loc in tx.locations() if not loc.retired]
        finally:
            app.close()
    except Exception:  # completion stays quiet whatever went wrong (module docstring)
        return []
    return sorted(name for name in names if name.startswith(incomplete))
