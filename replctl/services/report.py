"""`replctl report --html PATH`: the status of the whole system as one self-contained HTML page.

The report reads what `status` reads (through the status service, so the two never disagree) plus the latest
entries of the operation journal; it changes nothing, journals nothing and never starts Spark. The page itself is
drawn by `replctl.report.page` from its templates; this module gathers the document and writes the file atomically.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from replctl import __version__
from replctl.core.backups import Manifest
from replctl.core.journal import Operation
from replctl.core.outcomes import AllOrNothing
from replctl.errors import EnvironmentFailure, InvalidInput
from replctl.localfiles import check_replaceable, write_atomically
from replctl.services.ports import Catalog, LogStore

RECENT_OPERATIONS = 20


@dataclass(frozen=True)
class ReportWritten(AllOrNothing):
    """`report --html FILE`: where the page was written, what it shows (counts) and its size."""

    path: Path
    locations: int
    retired: int
    connections: int  # the live ones; removed connections are history edges
    history_edges: int
    pending_deletions: int
    operations: int
    bytes: int

    def to_json(self) -> dict[str, Any]:
        """`report --json`."""
        return {
            "ok": True,
            "path": str(self.path),
            "locations": self.locations,
            "retired": self.retired,
            "connections": self.connections,
            "history_edges": self.history_edges,
            "pending_deletions": self.pending_deletions,
            "operations": self.operations,
            "bytes": self.bytes,
        }


@dataclass(frozen=True)
class ReportPage:
    """`report --html -`: the page itself, for stdout. No outcome with a JSON view: `--json` is refused with it,
    since the page is the whole of stdout."""

    html: str


def operation_view(op: Operation) -> dict[str, Any]:
    """One journal entry as the report lists it (no plan or steps: `ops show ID` has those)."""
    error = op.error or {}
    return {
        "id": op.id,
        "command": op.command,
        "outcome": op.outcome.value,
        "started_at": str(op.started_at),
        "ended_at": str(op.ended_at) if op.ended_at else None,
        "actor": op.actor,
        "host": op.host,
        "reason": op.reason,
        "error": error.get("message") if error else None,
    }


def collect(
    catalog: Catalog,
    store: LogStore | None = None,
    *,
    recent: int = RECENT_OPERATIONS,
    manifests: Sequence[Manifest] | None = None,
    require_recoverable: bool = False,
) -> dict[str, Any]:
    """The report document: the `status --json` document (with the census when given the store) plus the
    `recent` latest operations and where from."""
    from replctl.services import status as status_service

    doc = status_service.status(
        catalog, store, manifests=manifests, require_recoverable=require_recoverable
    ).to_json()
    del doc["ok"]  # the report's document is no command's answer
    with catalog.transaction(readonly=True) as tx:
        operations = tx.operations(limit=recent)
    doc["operations"] = [operation_view(op) for op in operations]
    doc["generated_at"] = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    doc["catalog"] = catalog.url
    doc["version"] = __version__
    return doc


def page(
    catalog: Catalog,
    store: LogStore | None = None,
    *,
    recent: int = RECENT_OPERATIONS,
    manifests: Sequence[Manifest] | None = None,
    require_recoverable: bool = False,
) -> ReportPage:
    """The HTML report as a page for stdout (`report --html -`), nothing written."""
    from replctl.report.page import render_page

    doc = collect(catalog, store, recent=recent, manifests=manifests, require_recoverable=require_recoverable)
    return ReportPage(render_page(doc))


def check_target(path: Path) -> Path:
    """The absolute path to write the report to; refuses (exit 2) a missing folder or a folder as the file.

    The path itself is not resolved: a link there is refused when writing, never followed (the report would
    replace the file it points to, with the report's permissions).
    """
    given = path.expanduser().absolute()
    target = given.parent.resolve() / given.name
    if target.is_dir():
        raise InvalidInput(
            f"cannot write the report to {target}: it is a folder",
            code="bad-path",
            hint=f"name a file in it, e.g. --html {target / 'report.html'}",
        )
    if not target.parent.is_dir():
        raise InvalidInput(
            f"cannot write the report to {target}: folder {target.parent} does not exist",
            code="bad-path",
            hint=f"create it first: mkdir -p {target.parent}",
        )
    return target


def write_html(
    catalog: Catalog,
    path: Path,
    store: LogStore | None = None,
    *,
    recent: int = RECENT_OPERATIONS,
    mode: int = 0o600,
    manifests: Sequence[Manifest] | None = None,
    require_recoverable: bool = False,
) -> ReportWritten:
    """Write the HTML report to `path` with permissions `mode`.

    The path is checked before the catalog is read, so a typo in it costs nothing.
    """
    from replctl.report.page import render_page

    target = check_target(path)
    check_replaceable(target)
    doc = collect(catalog, store, recent=recent, manifests=manifests, require_recoverable=require_recoverable)
    try:
        size = write_atomically(target, render_page(doc), mode)
    except PermissionError as exc:
        raise InvalidInput(f"cannot write the report to {target}: {exc.strerror}", code="bad-path") from exc
    except OSError as exc:
        raise EnvironmentFailure(f"cannot write the report to {target}: {exc}", code="write-failed") from exc
    connections = doc["connections"]
    return ReportWritten(
        path=target,
        locations=len(doc["locations"]),
        retired=sum(1 for loc in doc["locations"] if loc["state"] == "retired"),
        connections=sum(1 for c in connections if c["state"] != "removed"),
        history_edges=sum(1 for c in connections if c["state"] == "removed"),
        pending_deletions=len(doc["pending_deletions"]),
        operations=len(doc["operations"]),
        bytes=size,
    )
