"""The operation journal: who ran what, where, why, the plan, each completed step, and how it ended."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.engine import Connection, Row

from replctl.adapters.catalog.dialect import OPERATION_STEPS, OPERATIONS
from replctl.core.journal import Operation, OperationStep, Outcome
from replctl.errors import UnknownName
from replctl.masking import mask_json


class JournalQueries:
    """The `operations` and `operation_steps` tables, mapped to `Operation` and `OperationStep`."""

    _conn: Connection
    _clock: Callable[[], datetime]

    def begin_operation(
        self,
        command: str,
        args: Mapping[str, Any],
        actor: str | None,
        host: str | None,
        reason: str | None,
    ) -> str:
        """Journal the start of an operation (outcome `running`); returns its new id (a UUID)."""
        op_id = str(uuid.uuid4())
        self._conn.execute(
            OPERATIONS.insert().values(
                id=op_id,
                command=command,
                args=dict(args),
                actor=actor,
                host=host,
                reason=reason,
                plan={},
                outcome=Outcome.RUNNING.value,
                error=None,
                started_at=self._clock(),
                ended_at=None,
            )
        )
        return op_id

    def record_step(self, operation_id: str, name: str, detail: Mapping[str, Any]) -> OperationStep:
        """Journal a completed step; commit it in the transaction that made its effect."""
        self._require(operation_id)
        last = self._conn.execute(
            select(func.max(OPERATION_STEPS.c.index)).where(OPERATION_STEPS.c.operation_id == operation_id)
        ).scalar_one()
        step = OperationStep(operation_id, int(last or 0) + 1, name, dict(detail), self._clock())
        self._conn.execute(
            OPERATION_STEPS.insert().values(
                operation_id=operation_id, index=step.index, name=name, detail=dict(detail), at=step.at
            )
        )
        return step

    def set_plan(self, operation_id: str, plan: Mapping[str, Any]) -> None:
        """Record the plan the operation is about to execute."""
        self._update(operation_id, plan=dict(plan))

    def finish_operation(
        self, operation_id: str, outcome: Outcome | str, error: Mapping[str, Any] | None = None
    ) -> None:
        """Record how the operation ended and when; `error` is the JSON `error` object, if any.

        The error is masked (`masking`) once more here: an unexpected one is a foreign exception's text,
        which no replctl error has masked, and the journal is read by everyone with the catalog.
        """
        ended = Outcome(outcome)
        if ended is Outcome.RUNNING:
            raise ValueError("an operation cannot finish as `running`")
        self._update(
            operation_id,
            outcome=ended.value,
            error=mask_json(dict(error)) if error is not None else None,
            ended_at=self._clock(),
        )

    def find_operations(self, command: str, args: Mapping[str, str]) -> list[Operation]:
        """Every operation of `command` whose args hold each of `args` (string values), newest first.

        The args are matched in SQL (JSON extraction on SQLite and PostgreSQL alike), so only the matching
        rows and their steps are read; there is no index on them, which suits a journal of operator-run
        commands.
        """
        query = select(OPERATIONS).where(OPERATIONS.c.command == command)
        for key, value in args.items():
            query = query.where(OPERATIONS.c.args[key].as_string() == value)
        rows = list(self._conn.execute(query.order_by(OPERATIONS.c.started_at.desc(), OPERATIONS.c.id)))
        steps = self._steps([row.id for row in rows])
        return [operation_from_row(row, steps.get(row.id, ())) for row in rows]

    def complete_interrupted(self, operation_id: str, *, by: str) -> bool:
        """Mark an operation that was interrupted after its work committed as `succeeded`, on behalf of `by`.

        Operation `by` found the interrupted one's effect complete (an append re-run after a crash, REP3). The
        interrupted operation gets the step `completed-by` naming `by` and keeping the error it ended with
        (`holder-died` when its lease was taken over, absent while it was still journalled `running`).
        Returns False, and changes nothing, unless it is `running`, `failed` or `interrupted` (Ctrl-C).
        """
        op = self.operation(operation_id)
        if op is None:
            raise _unknown(operation_id)
        unfinished = (Outcome.RUNNING.value, Outcome.FAILED.value, Outcome.INTERRUPTED.value)
        # Conditional on the outcome read, so that a late finish of the interrupted operation itself wins.
        changed = self._conn.execute(
            OPERATIONS.update()
            .where(OPERATIONS.c.id == operation_id, OPERATIONS.c.outcome == op.outcome.value)
            .where(OPERATIONS.c.outcome.in_(unfinished))
            .values(outcome=Outcome.SUCCEEDED.value, error=None, ended_at=op.ended_at or self._clock())
        ).rowcount
        if changed == 0:
            return False
        interrupted = dict(op.error) if op.error is not None else {"outcome": op.outcome.value}
        self.record_step(operation_id, "completed-by", {"operation": by, "interrupted": interrupted})
        return True

    def operations(self, limit: int = 50) -> list[Operation]:
        """The latest `limit` operations, newest first, each with its steps."""
        rows = list(
            self._conn.execute(
                select(OPERATIONS).order_by(OPERATIONS.c.started_at.desc(), OPERATIONS.c.id).limit(limit)
            )
        )
        steps = self._steps([row.id for row in rows])
        return [operation_from_row(row, steps.get(row.id, ())) for row in rows]

    def operation(self, operation_id: str) -> Operation | None:
        """The operation with this id and its steps, or None."""
        row = self._conn.execute(select(OPERATIONS).where(OPERATIONS.c.id == operation_id)).one_or_none()
        if row is None:
            return None
        return operation_from_row(row, self._steps([operation_id]).get(operation_id, ()))

    def operation_ids_starting(self, prefix: str, limit: int) -> list[str]:
        """Up to `limit` ids that start with `prefix`, in id order, matched in SQL.

        `autoescape` makes `%`, `_` and the escape character in what the operator typed match themselves, so a
        prefix never turns into a pattern.
        """
        rows = self._conn.execute(
            select(OPERATIONS.c.id)
            .where(OPERATIONS.c.id.startswith(prefix, autoescape=True))
            .order_by(OPERATIONS.c.id)
            .limit(limit)
        )
        return [str(row.id) for row in rows]

    def journaled_backups(self) -> set[str]:
        """The ids the `backup` steps of `backup create` record (`services.backups._backup`)."""
        rows = self._conn.execute(select(OPERATION_STEPS.c.detail).where(OPERATION_STEPS.c.name == "backup"))
        return {
            str(row.detail["id"]) for row in rows if isinstance(row.detail, dict) and row.detail.get("id")
        }

    def _steps(self, ids: list[str]) -> dict[str, tuple[OperationStep, ...]]:
        if not ids:
            return {}
        found: dict[str, list[OperationStep]] = defaultdict(list)
        rows = self._conn.execute(
            select(OPERATION_STEPS)
            .where(OPERATION_STEPS.c.operation_id.in_(ids))
            .order_by(OPERATION_STEPS.c.operation_id, OPERATION_STEPS.c.index)
        )
        for row in rows:
            found[row.operation_id].append(
                OperationStep(
                    # `row.index` is the tuple method, hence the mapping.
                    row.operation_id,
                    int(row._mapping["index"]),
                    row.name,
                    row.detail or {},
                    row.at,
                )
            )
        return {op_id: tuple(steps) for op_id, steps in found.items()}

    def _require(self, operation_id: str) -> None:
        exists = self._conn.execute(
            select(OPERATIONS.c.id).where(OPERATIONS.c.id == operation_id)
        ).one_or_none()
        if exists is None:
            raise _unknown(operation_id)

    def _update(self, operation_id: str, **values: Any) -> None:
        result = self._conn.execute(
            OPERATIONS.update().where(OPERATIONS.c.id == operation_id).values(**values)
        )
        if result.rowcount == 0:
            raise _unknown(operation_id)


def _unknown(operation_id: str) -> UnknownName:
    return UnknownName(
        f"no operation {operation_id} in the journal", code="unknown-operation", hint="run: replctl ops list"
    )


def operation_from_row(row: Row[Any], steps: tuple[OperationStep, ...]) -> Operation:
    """An `operations` row and its steps as an `Operation`."""
    return Operation(
        id=row.id,
        command=row.command,
        args=row.args or {},
        actor=row.actor,
        host=row.host,
        reason=row.reason,
        plan=row.plan or {},
        outcome=Outcome(row.outcome),
        error=row.error,
        started_at=row.started_at,
        ended_at=row.ended_at,
        steps=steps,
    )
