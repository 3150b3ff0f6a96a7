"""The one error boundary: replctl errors become exit codes (cli.md); anything else is a bug (exit 1)."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any, NoReturn

import typer

from replctl.cli.context import AppContext
from replctl.cli.output import emit_error, emit_json, stderr
from replctl.errors import ReplctlError


def run(
    ctx: typer.Context,
    action: Callable[[AppContext], Any],
    render: Callable[[AppContext, Any], int | None] | None = None,
) -> NoReturn:
    """Run one command: call the service, render its outcome, exit with the contract's code."""
    app_ctx: AppContext = ctx.obj
    code = 0
    try:
        outcome = action(app_ctx)
        if render is not None:
            code = render(app_ctx, outcome) or 0
    except ReplctlError as exc:
        emit_error(exc, as_json=app_ctx.json)
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
