"""The one error boundary: replctl errors become exit codes (cli.md); anything else is a bug (exit 1).

Messages often quote what the operator typed (a location name, a file name, a filter). Such text may hold line
breaks, terminal escapes, or bytes that were not UTF-8 (which Python hands over as lone surrogates); printed as
is, the reason would no longer be one line, could rewrite the terminal, or would fail to encode and turn a
clean refusal into a crash. So every message and hint is made printable here, once, for every command.

Numbers on the command line (seqs, counts, limits, seeds) end up in the catalog's and Spark's signed 64-bit
integers; a larger one is refused here as a bad number (exit 2) before any command acts on it.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any, NoReturn

import typer

from replctl.cli.context import AppContext
from replctl.cli.output import emit_error, emit_json, stderr
from replctl.errors import InvalidInput, ReplctlError

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


def run(
    ctx: typer.Context,
    action: Callable[[AppContext], Any],
    render: Callable[[AppContext, Any], int | None] | None = None,
) -> NoReturn:
    """Run one command: call the service, render its outcome, exit with the contract's code."""
    app_ctx: AppContext = ctx.obj
    code = 0
    try:
        check_numbers(ctx)
        outcome = action(app_ctx)
        if render is not None:
            code = render(app_ctx, outcome) or 0
    except ReplctlError as exc:
        emit_error(_printable_error(exc), as_json=app_ctx.json)
        code = exc.exit_code
    except (KeyboardInterrupt, typer.Exit, typer.Abort):
        raise
    except Exception as exc:  # a bug: say so plainly, keep the traceback for the report
        if app_ctx.json:
            emit_json(
                {
                    "ok": False,
                    "error": {
                        "code": "internal",
                        "message": f"{type(exc).__name__}: {exc}",
                        "hint": "this is a bug in replctl; please report it",
                    },
                }
            )
        else:
            stderr().print(traceback.format_exc(), markup=False)
            stderr().print(f"internal error: {type(exc).__name__}: {exc}", markup=False)
        code = 1
    finally:
        app_ctx.close()
    raise typer.Exit(code)
