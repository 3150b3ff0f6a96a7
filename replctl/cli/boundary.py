"""The one error boundary: replctl errors become exit codes (cli.md); anything else is a bug (exit 1).

Messages often quote what the operator typed (a location name, a file name, a filter). Such text may hold line
breaks, terminal escapes, or bytes that were not UTF-8 (which Python hands over as lone surrogates); printed as
is, the reason would no longer be one line, could rewrite the terminal, or would fail to encode and turn a
clean refusal into a crash. So every message and hint is made printable here, once, for every command.

Numbers on the command line (seqs, counts, limits, seeds) end up in the catalog's and Spark's signed 64-bit
integers; a larger one is refused here as a bad number (exit 2) before any command acts on it.

Reviewed plans live here too, for every command at once: under the global `--plan-out FILE` a mutating
command (one that runs as a journalled operation, `Effect.OPERATION`) makes its usual dry run and the plan
file gets the JSON document that dry run prints, with the catalog version read before it and the digests of
the files it reads (`services.plans`); any other command refuses the option (exit 2). Under `replctl apply`
(`cli.apply`) the recorded command runs here again, inside `services.operations.applying`.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from replctl.cli.closedpipe import CLOSED_PIPE_EXIT, is_closed_pipe
from replctl.cli.confirm import Question, ask, on_terminal
from replctl.cli.context import AppContext
from replctl.cli.interrupt import (
    ctrl_c_stops_cleanly,
    end_within,
    interrupted_exit_code,
    interrupted_outside_an_operation,
)
from replctl.cli.outcomes import exit_code, present
from replctl.cli.output import emit_error, emit_json, stderr, stdout
from replctl.core.outcomes import Outcome
from replctl.errors import Interrupted, InvalidInput, ReplctlError
from replctl.masking import mask

if TYPE_CHECKING:
    from replctl.services.interruption import CommandProgress
    from replctl.services.plans import InputDigest

# Key in the Click context's `meta` (shared by the whole invocation): the sub-command's argv without the
# global options, as the root group parsed it; `--plan-out` records it as the plan's command.
COMMAND_ARGV = "replctl.command_argv"


class Effect(Enum):
    """What a command does to the catalog and the store, as far as `--plan-out` is concerned."""

    READS = "reads"  # changes nothing: --plan-out is refused (exit 2)
    OPERATION = "operation"  # a journalled operation with a dry run: --plan-out writes its plan
    UNPLANNED = "unplanned"  # changes something but has no dry run to record (init, db upgrade, apply)


# The range of the catalog's BIGINT columns and of Spark's LongType.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def printable(text: str) -> str:
    """`text` with every character that is not printable written as its Python escape (`\\r`, `\\udcff`)."""
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


def check_numbers(ctx: typer.Context) -> None:
    """Refuse (exit 2) any integer parameter of the command outside the signed 64-bit range."""
    for param in ctx.command.params:
        value = ctx.params.get(param.name or "")
        values = value if isinstance(value, list | tuple) else [value]
        for number in values:
            if (
                isinstance(number, int)
                and not isinstance(number, bool)
                and not INT64_MIN <= number <= INT64_MAX
            ):
                label = param.opts[0] if param.opts else (param.name or "a number").upper()
                raise InvalidInput(
                    f"{label} takes a signed 64-bit number, got one with {len(str(abs(number)))} digits",
                    code="bad-number",
                )


def _printable_error(exc: ReplctlError) -> ReplctlError:
    exc.message = printable(exc.message)
    exc.hint = printable(exc.hint) if exc.hint is not None else None
    return exc


def _path_params(ctx: typer.Context) -> list[tuple[Any, list[Path]]]:
    """The command's parameters that name local files or folders (`log append --file`), with their paths."""
    found = []
    for param in ctx.command.params:
        value = ctx.params.get(param.name or "")
        paths = [p for p in (value if isinstance(value, list | tuple) else [value]) if isinstance(p, Path)]
        if paths:
            found.append((param, paths))
    return found


def input_digests(ctx: typer.Context) -> list[InputDigest]:
    """What every file or folder the command's path parameters name holds now (`log append --file`), by
    absolute path, size and digest."""
    from replctl.services.plans import input_digest

    return [
        input_digest(param.opts[0] if param.opts else (param.name or ""), path)
        for param, paths in _path_params(ctx)
        for path in paths
    ]


def recorded_command(ctx: typer.Context, app: AppContext) -> list[str]:
    """The command line a plan records: the sub-command as typed, without --dry-run, its relative paths made
    absolute, plus --reason."""
    argv = ctx.meta.get(COMMAND_ARGV)
    if argv is None:
        raise ReplctlError(f"{ctx.command_path}: the command line was not recorded", code="internal")
    end = argv.index("--") if "--" in argv else len(argv)
    # --plan-out implies --dry-run; applying must run the command for real, so the flag is not recorded.
    command = [arg for arg in argv[:end] if arg != "--dry-run"] + list(argv[end:])
    command = _absolute_paths(ctx, command)
    return command + (["--reason", app.reason] if app.reason is not None else [])


def _absolute_paths(ctx: typer.Context, argv: list[str]) -> list[str]:
    """`argv` with each relative path a path option names made absolute against the working directory.

    `apply` parses the recorded command again wherever it runs: `--file events.jsonl` would then name a file
    in that folder, another one or none (the plan's input digests record the same absolute paths).
    """
    options: set[str] = set()
    for param, paths in _path_params(ctx):
        if param.param_type_name != "option" or getattr(param, "is_flag", False):
            # A positional path: no mutating command takes one; refuse to record one that would move.
            if any(not p.is_absolute() for p in paths):
                raise InvalidInput(
                    f"{ctx.command_path}: give {(param.name or 'the path').upper()} as an absolute path "
                    "for a plan",
                    code="bad-option",
                )
            continue
        options.update(param.opts, param.secondary_opts)
    out, i = [], 0
    end = argv.index("--") if "--" in argv else len(argv)
    while i < len(argv):
        arg = argv[i]
        name, sep, value = arg.partition("=")
        if i < end and name in options and sep:
            arg = f"{name}={_absolute(value)}"
        elif i < end and arg in options and i + 1 < len(argv):
            out.append(arg)
            i += 1
            arg = _absolute(argv[i])
        out.append(arg)
        i += 1
    return out


def _absolute(text: str) -> str:
    path = Path(text)
    return text if path.is_absolute() else str(path.absolute())


def _refuse_plan_out(ctx: typer.Context, app: AppContext, effect: Effect) -> None:
    if effect is not Effect.OPERATION and app.plan_out is None:
        # `replctl apply` planning a recorded command that is not a journalled operation (`demo`, `status`):
        # the file was not written by --plan-out, or was edited since.
        raise InvalidInput(
            f"not a valid replctl plan: {ctx.command_path} makes no plan",
            code="bad-plan",
            hint="make the plan again with a mutating command and --plan-out FILE",
        )
    if effect is Effect.READS:
        raise InvalidInput(
            f"{ctx.command_path} changes nothing; --plan-out is for mutating commands",
            code="bad-option",
            hint="drop --plan-out",
        )
    if effect is Effect.UNPLANNED:
        raise InvalidInput(
            f"{ctx.command_path} has no dry run to record; --plan-out is for the commands that run as "
            "journalled operations",
            code="bad-option",
            hint="drop --plan-out",
        )


def _plan(
    ctx: typer.Context,
    app: AppContext,
    action: Callable[[AppContext], Any],
    render: Callable[[AppContext, Any], int | None] | None,
    effect: Effect,
) -> int:
    """--plan-out: run the command's dry run and write (or, for `apply`, keep) the plan it makes."""
    from replctl.services.operations import planning
    from replctl.services.plans import new_plan, write_plan

    _refuse_plan_out(ctx, app, effect)
    if app.plan_out is not None:
        from replctl.localfiles import check_replaceable

        # Before the dry run: a path on the catalog, a store or the config file, or a link or FIFO there, costs
        # nothing.
        app.check_output(app.plan_out, "--plan-out", "the plan")
        check_replaceable(app.plan_out)
    if render is None:
        raise ReplctlError(f"{ctx.command_path} renders no outcome to plan", code="internal")
    catalog = app.catalog()
    # Read before planning: a change committed during the dry run then makes the plan stale, never hides.
    with catalog.transaction(readonly=True) as tx:
        version = tx.catalog_version()
    inputs = input_digests(ctx)
    with planning():
        outcome = action(app)
    if not isinstance(outcome, Outcome):
        raise ReplctlError(f"{ctx.command_path} returned no typed outcome to plan", code="internal")
    # The plan is what the service planned, never what a renderer made of it (issue 15).
    document, code = outcome.to_json(), exit_code(outcome)
    plan = new_plan(
        recorded_command(ctx, app),
        catalog_url=catalog.url,
        catalog_version=version,
        plan=document,
        inputs=inputs,
    )
    if app.plan_out is None:  # `replctl apply` planning again, to compare
        app.planned = plan
        return code
    write_plan(app.plan_out, plan, app.settings.file_mode)
    if app.json:
        emit_json({"ok": True, "plan_out": str(app.plan_out), "catalog_version": version, "plan": plan.plan})
        return code
    render(app, outcome)  # the dry run as the operator knows it, to review before applying
    # soft_wrap: the path must stay copy-pasteable on a narrow terminal.
    stdout().print(
        f"plan written to {app.plan_out} (catalog version {version}); review it, then run: "
        f"replctl apply {app.plan_out}",
        markup=False,
        soft_wrap=True,
    )
    return code


def run(
    ctx: typer.Context,
    action: Callable[[AppContext], Any],
    render: Callable[[AppContext, Any], int | None] | None = None,
    *,
    effect: Effect = Effect.READS,
    question: Question | None = None,
) -> NoReturn:
    """Run one command: call the service, render its outcome, exit with the contract's code.

    `effect` says whether the command may be planned with --plan-out (`Effect.OPERATION`: its action must
    pass `dry_run=dry_run or app.planning` to its service); under `replctl apply` the action runs inside
    `services.operations.applying`, so the operation checks the plan's catalog version under its leases.
    A destructive command passes `question` (`cli.confirm`): on a terminal its dry run is shown and the
    operator asked before the run.
    """
    app_ctx: AppContext = ctx.obj
    code = 0
    interrupted = False
    started = time.monotonic()
    done: CommandProgress | None = None
    progress = _Progress()
    try:
        with ctrl_c_stops_cleanly(), ExitStack() as scope:
            from replctl.services.interruption import command_progress

            # What a Ctrl-C between or after the command's operations says they did (issue 18).
            done = scope.enter_context(command_progress())
            if app_ctx.verbose:
                from replctl.services.operations import observing_operations

                # -v: the journal's id of each operation, to look up with `replctl ops show ID`.
                scope.enter_context(observing_operations(_say_operation))
            code = _run(ctx, app_ctx, action, render, effect, question, progress)
    except KeyboardInterrupt:
        # Ctrl-C or SIGTERM outside an operation's body (a read, a prompt, before the leases, between two
        # operations or after the last): what completed is said, and nothing else was committed.
        stopped = interrupted_outside_an_operation(done, reporting=progress.reporting)
        code, interrupted = _interrupted(app_ctx, stopped), True
    except Interrupted as exc:
        code, interrupted = _interrupted(app_ctx, exc), True
    except OSError as exc:
        if is_closed_pipe(exc):  # the -v line says so; the root group ends the command (cli.closedpipe)
            code = CLOSED_PIPE_EXIT
        raise
    finally:
        app_ctx.close()
        if app_ctx.verbose:
            sys.stderr.write(f"{ctx.command_path}: exit {code} after {time.monotonic() - started:.2f} s\n")
        if interrupted:
            # Everything the command owns is closed and said: what the interrupted call left behind (a Spark
            # Connect request in flight, a client thread pool joined at exit) may not hold the process.
            end_within(code)
    raise typer.Exit(code)


# How long an interrupted command waits for its Spark jobs to be cancelled before it ends anyway.
CANCEL_SECONDS = 3.0


def _say_operation(operation_id: str, command: str) -> None:
    sys.stderr.write(f"operation {operation_id} ({command}); see: replctl ops show {operation_id}\n")
    sys.stderr.flush()


def _interrupted(app: AppContext, exc: Interrupted) -> int:
    """Ctrl-C or SIGTERM: say it in one line (or one JSON document), then stop what Spark still runs for this
    command, for a few seconds at most (a managed engine that no longer answers is retried for minutes by
    the Spark Connect client); the exit code says which signal it was (130, 143)."""
    emit_error(exc, as_json=app.json)
    cancelling = threading.Thread(target=app.cancel_spark_jobs, name="replctl-cancel", daemon=True)
    cancelling.start()
    cancelling.join(CANCEL_SECONDS)
    return interrupted_exit_code()


@dataclass
class _Progress:
    """How far `_run` got, for what a Ctrl-C says (issue 18)."""

    reporting: bool = False  # the action returned: the command's operations have all ended


def _run(
    ctx: typer.Context,
    app_ctx: AppContext,
    action: Callable[[AppContext], Any],
    render: Callable[[AppContext, Any], int | None] | None,
    effect: Effect,
    question: Question | None,
    progress: _Progress,
) -> int:
    """The body of `run`: the command's exit code; errors are printed here, Ctrl-C goes up to `run`."""
    code = 0
    try:
        check_numbers(ctx)
        if app_ctx.planning:
            code = _plan(ctx, app_ctx, action, render, effect)
        else:
            if question is not None and on_terminal(app_ctx):
                ask(app_ctx, action, render, question)
            with ExitStack() as scope:
                if app_ctx.applied is not None:
                    from replctl.services.operations import applying

                    scope.enter_context(applying(app_ctx.applied))
                outcome = action(app_ctx)
            progress.reporting = True
            code = present(app_ctx, render, outcome)
    except Interrupted:
        raise
    except ReplctlError as exc:
        emit_error(_printable_error(exc), as_json=app_ctx.json)
        code = exc.exit_code
    except (KeyboardInterrupt, typer.Exit, typer.Abort):
        raise
    except Exception as exc:  # a bug: say so plainly, keep the traceback for the report
        if is_closed_pipe(exc):  # not a bug: the reader of the output went away (cli.closedpipe)
            raise
        # A bug's text is a foreign one: it may quote a URL or a setting, so it is masked like any error.
        if app_ctx.json:
            emit_json(
                {
                    "ok": False,
                    "error": {
                        "code": "internal",
                        "message": mask(f"{type(exc).__name__}: {exc}"),
                        "hint": "this is a bug in replctl; please report it",
                    },
                }
            )
        else:
            stderr().print(mask(traceback.format_exc()), markup=False)
            stderr().print(mask(f"internal error: {type(exc).__name__}: {exc}"), markup=False)
        code = 1
    return code
