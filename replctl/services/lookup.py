"""Looking up what an operator named: an unknown name exits 2 with the command that lists the known ones."""

from __future__ import annotations

from typing import TYPE_CHECKING

from replctl.errors import UnknownName

if TYPE_CHECKING:
    # Types only: the CLI imports this module at start-up, and `--help` must not pay for SQLAlchemy.
    from replctl.core.model import Location
    from replctl.services.ports import CatalogTransaction


def get_location(tx: CatalogTransaction, name: str) -> Location:
    """The location, or exit 2 naming it."""
    loc = tx.location(name)
    if loc is None:
        raise UnknownName(
            f"unknown location {name!r}",
            code="unknown-location",
            hint="list them with: replctl location list",
        )
    return loc
