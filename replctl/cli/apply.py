"""`replctl apply FILE`: execute a reviewed plan written by `--plan-out`, exactly, or refuse it as stale.

The plan file records a sub-command (`services.plans`). Applying it runs that sub-command in this process,
through the same command function and error boundary as when an operator types it, in three steps:

1. read and validate the file (exit 2 when it is not a plan, or was made for another catalog), and refuse it
   as stale (exit 3, `stale-plan`) when the catalog version moved since;
2. make the same dry run again and compare: the catalog version, the input files' digests and sizes (by the
   absolute paths recorded) and the dry run's document must equal the recorded ones (the store, the clock and
   the files are not in the catalog version); a plan whose inputs an older replctl recorded without size or
   by a relative path is stale;
3. run the command for real inside `services.operations.applying`, whose first operation checks the version
   once more while it holds its leases, so nothing that committed after step 1 slips through; its journal
   entry names the plan file and its sha256 (`replctl ops show`).

What is printed is what the command prints (one JSON document under --json); a refusal before the command
runs is apply's own.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from replctl.cli.boundary import COMMAND_ARGV, Effect, input_digests, run
from replctl.cli.context import AppContext
from replctl.cli.output import stdout
from replctl.errors import InvalidInput, Refused

if TYPE_CHECKING:
    from replctl.services.plans import AppliedPlan, PlanFile


def apply(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(metavar="FILE", help="A plan written by --plan-out.")],
) -> None:
    """Execute the plan in FILE exactly as reviewed; refused (exit 3) when the catalog changed since it was made.

    Make the plan with any mutating command and the global option --plan-out FILE (the command then changes
    nothing). The recorded command runs with this invocation's settings (--db must name the same catalog);
    --reason, when given, replaces the plan's.
    """

    def action(app: AppContext) -> int:
        from replctl.services import operations, plans

        recorded = plans.read_plan(file)
        argv, reason = _split_reason(recorded, app.reason)
        # The absolute path: the journal is read from other hosts and folders (`replctl ops show`).
        applied = plans.AppliedPlan(
            str(file.resolve()),
            recorded.sha256,
            recorded.plan.catalog_version,
            inputs=tuple(recorded.plan.inputs),
            remake=plans.remake_hint(recorded),
        )
        try:
            return _apply(app, recorded, argv, reason, applied)
        except Refused as refusal:
            if refusal.code != plans.STALE_PLAN:
                raise
            # Issue 18: a stale plan refused before its command began is journalled like the refusal under
            # the leases (`operations.applying`), so `ops list` shows every refused apply; nothing else is
            # written and the catalog version does not move.
            operations.record_refusal(
                app.catalog(),
                command="apply",
                args={"command": list(recorded.plan.command), **applied.journal_args()},
                reason=reason,
                refusal=refusal,
            )
            raise

    def _apply(
        app: AppContext, recorded: PlanFile, argv: list[str], reason: str | None, applied: AppliedPlan
    ) -> int:
        from replctl.services import plans

        catalog = app.catalog()
        with catalog.transaction(readonly=True) as tx:
            version = tx.catalog_version()
        plans.check_catalog(recorded, catalog.url, version)
        # Before the dry run below reads them: a file gone or changed makes the plan stale (exit 3), not the
        # command's bad input (exit 2); a path an older plan left relative to another folder is not read.
        plans.check_inputs_unchanged(recorded)

        check = _nested(app, reason, capture_plan=True)
        code = _invoke(ctx, recorded.path, argv, check)
        if code != 0:
            return code  # the dry run itself was refused now; the command has said why
        if check.planned is None:
            # A command that exited without planning (it is not one that `--plan-out` records).
            raise InvalidInput(
                f"{recorded.path} is not a valid replctl plan: replctl {' '.join(argv)} makes no plan",
                code="bad-plan",
                hint="make the plan again with the mutating command and --plan-out FILE",
            )
        plans.check_same_plan(recorded, check.planned)

        code = _invoke(
            ctx,
            recorded.path,
            argv,
            _nested(app, reason, applied=applied),
            # Right before acting, so a file changed after the dry run above is still caught.
            before=lambda sub: plans.check_inputs(recorded, input_digests(sub)),
        )
        if code == 0 and not app.json:
            stdout().print(f"applied the plan in {file}", markup=False, soft_wrap=True)
        return code

    def render(_app: AppContext, code: int) -> int:
        return code

    run(ctx, action, render, effect=Effect.UNPLANNED)


def _split_reason(recorded: PlanFile, given: str | None) -> tuple[list[str], str | None]:
    """The recorded sub-command without its --reason, and the reason to journal (this invocation's first)."""
    from replctl.cli import split_global_options

    lifted, argv = split_global_options(list(recorded.plan.command))
    reason: str | None = None
    i = 0
    while i < len(lifted):
        name, sep, value = lifted[i].partition("=")
        if name != "--reason":
            raise InvalidInput(
                f"{recorded.path} is not a valid replctl plan: its command holds the global option {name}",
                code="bad-plan",
                hint="a plan records the sub-command and --reason only; make it again",
            )
        if not sep:
            i += 1
            value = lifted[i]
        reason = value
        i += 1
    return argv, given if given is not None else reason


def _nested(app: AppContext, reason: str | None, **mode: Any) -> AppContext:
    """A fresh context for one run of the recorded command: this invocation's settings and instant, its own
    adapters. The instant is apply's: the dry run that checks the plan and the run that executes it count
    `--older-than` back from the same moment, so a run that waits for its leases cuts no later than the
    checked plan (the catalog version, checked under the leases, cannot see the clock move)."""
    return AppContext(
        settings=app.settings, yes=app.yes, reason=reason, progress=app.progress, now=app.now, **mode
    )


def _invoke(
    ctx: typer.Context,
    plan_path: Path,
    argv: list[str],
    app: AppContext,
    *,
    before: Callable[[typer.Context], None] | None = None,
) -> int:
    """Run the recorded sub-command `argv` with `app` as its context; returns its exit code."""
    command: Any = ctx.find_root().command
    path = ["replctl"]
    args = list(argv)
    options = args[: args.index("--")] if "--" in args else args
    asked = sorted(set(options) & set(ctx.find_root().help_option_names))
    if asked:
        # Click would print the help and end the command as done: applying would "succeed" doing nothing.
        raise InvalidInput(
            f"{plan_path} is not a valid replctl plan: its command asks for {asked[0]}", code="bad-plan"
        )
    while isinstance(command, TyperGroup):
        found = command.get_command(ctx, args[0]) if args else None
        if found is None:
            raise InvalidInput(
                f"{plan_path} is not a valid replctl plan: no command replctl {' '.join(argv)}",
                code="bad-plan",
            )
        path.append(args.pop(0))
        command = found
    try:
        sub: typer.Context = command.make_context(" ".join(path), args, obj=app)
    except typer.TyperException as exc:  # Click's usage errors: the recorded arguments do not parse
        raise InvalidInput(
            f"{plan_path} is not a valid replctl plan: {exc.format_message()}", code="bad-plan"
        ) from exc
    sub.meta[COMMAND_ARGV] = list(argv)
    if "dry_run" in sub.params:
        sub.params["dry_run"] = False  # a plan records no --dry-run; this makes sure of it
    if before is not None:
        before(sub)
    try:
        with sub:
            command.invoke(sub)
    except typer.Exit as done:
        return done.exit_code
    return 0


def register(root: typer.Typer) -> None:
    """Attach `apply` to the root app."""
    root.command("apply")(apply)
