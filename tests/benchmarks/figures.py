"""The figures a benchmark script reports, in one machine-readable shape that `bench_all.py` gathers.

Every script still prints its own human table; given `--json PATH` it also writes its figures there, so the
one-command run can put them side by side without parsing text.
"""

from __future__ import annotations

import json
import os
import platform
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Figure:
    """One reported number: what it measures, its value and unit, and the issue's target when there is one."""

    what: str
    value: float
    unit: str
    target: str | None = None
    met: bool | None = None


def machine() -> dict[str, Any]:
    """Where the figures were taken: a figure means little without the number of cores it ran on."""
    return {"cores": os.cpu_count(), "python": platform.python_version(), "system": platform.platform()}


def write_figures(path: str | None, bench: str, params: dict[str, Any], figures: list[Figure]) -> None:
    """Write the figures of one benchmark run to `path` as JSON (nothing when `path` is None)."""
    if path is None:
        return
    doc = {"bench": bench, "params": params, "machine": machine(), "figures": [asdict(f) for f in figures]}
    Path(path).write_text(json.dumps(doc, indent=2) + "\n")
