"""Reading the operation journal for `replctl ops list|show`: the queries live here, not in the CLI."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from replctl.core.outcomes import AllOrNothing
from replctl.errors import InvalidInput, UnknownName
from replctl.services.views import operation_json

if TYPE_CHECKING:
    from replctl.core.journal import Operation
    from replctl.services.ports import Catalog

# How many candidates an ambiguous prefix names; more would only scroll the refusal away.
_CANDIDATES_SHOWN = 5


@dataclass(frozen=True)
class RecentOperations(AllOrNothing):
    """`ops list`: the latest operations, newest first."""

    operations: list[Operation]

    def to_json(self) -> dict[str, Any]:
        """`ops list --json` (cli.md)."""
        return {"ok": True, "operations": [operation_json(op) for op in self.operations]}


@dataclass(frozen=True)
class FoundOperation(AllOrNothing):
    """`ops show`: one operation with its plan and steps."""

    operation: Operation

    def to_json(self) -> dict[str, Any]:
        """`ops show --json` (cli.md)."""
        return {"ok": True, "operation": operation_json(self.operation, steps=True)}


def recent_operations(catalog: Catalog, limit: int) -> RecentOperations:
    """The latest `limit` operations, newest first, each with its steps (a read: no write lock)."""
    with catalog.transaction(readonly=True) as tx:
        return RecentOperations(tx.operations(limit=limit))


def find_operation(catalog: Catalog, id_or_prefix: str) -> FoundOperation:
    """The operation with this id, or the only one whose id starts with it (matched in SQL, not in memory).

    Exit 2 when nothing matches (`unknown-operation`) or when the prefix fits several operations
    (`ambiguous-operation`, naming the candidates), so a short prefix never shows the wrong operation.
    """
    with catalog.transaction(readonly=True) as tx:
        op = tx.operation(id_or_prefix)
        if op is not None:
            return FoundOperation(op)
        matches = tx.operation_ids_starting(id_or_prefix, limit=_CANDIDATES_SHOWN + 1) if id_or_prefix else []
        if len(matches) == 1:
            found = tx.operation(matches[0])
            if found is not None:
                return FoundOperation(found)
    if len(matches) > 1:
        shown = ", ".join(matches[:_CANDIDATES_SHOWN]) + (", ..." if len(matches) > _CANDIDATES_SHOWN else "")
        raise InvalidInput(
            f"operation id prefix {id_or_prefix!r} is ambiguous: {shown}",
            code="ambiguous-operation",
            hint="give more of the id (replctl ops list shows them)",
        )
    raise UnknownName(
        f"unknown operation {id_or_prefix!r}",
        code="unknown-operation",
        hint="list them with: replctl ops list",
    )
