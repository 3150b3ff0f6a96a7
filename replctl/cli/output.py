"""Writing to the terminal: one JSON document on stdout under --json, Rich text otherwise (cli.md, Output)."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from rich.console import Console

from replctl.errors import ReplctlError


def _width(stream: Any) -> int | None:
    # Piped into a file or a runbook, Rich would squeeze tables to 80 columns; give them room instead.
    if os.environ.get("COLUMNS") or (hasattr(stream, "isatty") and stream.isatty()):
        return None
    return 200


def stdout() -> Console:
    """A console on the current stdout (CliRunner swaps sys.stdout per invocation)."""
    return Console(file=sys.stdout, highlight=False, soft_wrap=False, width=_width(sys.stdout))


def stderr() -> Console:
    """A console on stderr, for progress, warnings and refusals in text mode."""
    return Console(file=sys.stderr, highlight=False, soft_wrap=False)


def emit_json(doc: dict[str, Any]) -> None:
    """Print exactly one JSON document on stdout."""
    sys.stdout.write(json.dumps(doc, default=str, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def emit_error(error: ReplctlError, *, as_json: bool) -> None:
    """A refusal or error: JSON document, or the reason plus a `hint:` line on stderr."""
    if as_json:
        emit_json({"ok": False, "error": error.to_json()})
        return
    # Plain writes: a refusal must never be re-wrapped or styled into something a runbook cannot grep.
    lines = [error.message if error.exit_code == 3 else f"error: {error.message}"]
    violations = error.details.get("violations") or []
    lines += [f"  also [{extra['code']}]: {extra['message']}" for extra in violations[1:]]
    if error.hint:
        lines.append(f"hint: {error.hint}")
    sys.stderr.write("\n".join(lines) + "\n")
    sys.stderr.flush()
