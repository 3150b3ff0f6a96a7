"""`replctl ops list|show`: the operation journal."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from replctl.cli.boundary import printable, run
from replctl.cli.context import AppContext
from replctl.cli.output import stdout, timestamp_text
from replctl.cli.render import cell, fields_text, value_text

if TYPE_CHECKING:
    from replctl.services.journal import FoundOperation, RecentOperations

app = typer.Typer(help="The operation journal.", no_args_is_help=True)

# The arguments `replctl apply` adds to the operation it runs; `ops show` names them in a sentence of their own.
_APPLIED_ARGS = frozenset({"plan_file", "plan_sha256", "plan_catalog_version"})


@app.command("list")
def list_(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option("--limit", min=1, help="How many, newest first.")] = 50,
) -> None:
    """The most recent operations, newest first."""

    def action(app: AppContext) -> RecentOperations:
        from replctl.services.journal import recent_operations

        return recent_operations(app.catalog(), limit)

    def render(app: AppContext, out: RecentOperations) -> None:
        table = Table("id", "started", "command", "outcome", "reason")
        for op in out.operations:
            table.add_row(
                op.id[:8], timestamp_text(op.started_at), cell(op.command), op.outcome, cell(op.reason)
            )
        stdout().print(table)

    run(ctx, action, render)


@app.command("show")
def show(ctx: typer.Context, op_id: Annotated[str, typer.Argument(metavar="ID")]) -> None:
    """One operation with its plan and steps (an id prefix is enough)."""

    def action(app: AppContext) -> FoundOperation:
        from replctl.services.journal import find_operation

        return find_operation(app.catalog(), op_id)

    def render(app: AppContext, out: FoundOperation) -> None:
        op = out.operation
        console = stdout()
        console.print(f"{op.id} {op.command} → {op.outcome}", markup=False)
        console.print(
            printable(
                f"by {op.actor}@{op.host} at {timestamp_text(op.started_at)}; reason: {op.reason or '-'}"
            ),
            markup=False,
        )
        args = {k: v for k, v in op.args.items() if k not in _APPLIED_ARGS}
        if args:
            console.print(printable(f"args: {fields_text(args)}"), markup=False)
        if op.args.get("plan_file"):  # run by `replctl apply` (services.plans.AppliedPlan.journal_args)
            console.print(
                f"applied from the plan {op.args['plan_file']} (sha256 {op.args.get('plan_sha256')}, "
                f"made at catalog version {op.args.get('plan_catalog_version')})",
                markup=False,
            )
        for step in op.steps:
            console.print(f"  {step.index}. {step.name} {fields_text(step.detail)}", markup=False)
        if op.error:
            console.print(_error_text(op.error), markup=False)

    run(ctx, action, render)


def _error_text(error: Any) -> str:
    """A journalled error as a refusal prints it (`error [code]: message`, then `hint:`), not as a record."""
    if not isinstance(error, dict):
        return f"error: {value_text(error)}"
    text = f"error [{value_text(error.get('code'))}]: {value_text(error.get('message'))}"
    return text + (f"\nhint: {value_text(error['hint'])}" if error.get("hint") else "")


def register(root: typer.Typer) -> None:
    """Attach `ops` to the root app."""
    root.add_typer(app, name="ops")
