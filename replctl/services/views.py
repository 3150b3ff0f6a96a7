"""JSON views of core values that several documents share (status, location list, topology show)."""

from __future__ import annotations

from typing import Any

from replctl.core.model import Location


def location_json(loc: Location) -> dict[str, Any]:
    """A location as in `status --json`."""
    return {
        "name": loc.name,
        "role": loc.role.value,
        "state": loc.state.value,
        "seq": loc.seq,
        "cvv": loc.cvv.to_dict(),
        "dvv": loc.dvv.to_dict(),
        "deleted_upto": loc.deleted_upto,
        "logical_deleted_upto": loc.logical_deleted_upto,
        "clock_pruned": loc.clock_pruned,
    }
