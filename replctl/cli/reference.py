"""The CLI reference in docs/cli-reference.md, generated from `--help` so it cannot drift.

Regenerate: `python -m replctl.cli.reference > docs/cli-reference.md` (a test compares the two).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

WIDTH = "100"


def _commands(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield path
    for name in sorted(getattr(group, "commands", {}) or {}):
        command = group.commands[name]
        if getattr(command, "hidden", False):
            continue
        yield from _commands(command, (*path, name))


def render_reference() -> str:
    """Markdown with the help text of every command, in a stable order and at a fixed width."""
    import typer.main
    from typer.testing import CliRunner

    from replctl.cli import app

    root = typer.main.get_command(app)
    runner = CliRunner()
    env = {**os.environ, "COLUMNS": WIDTH, "TERMINAL_WIDTH": WIDTH, "NO_COLOR": "1"}
    parts = [
        "# replctl command reference",
        "",
        "Generated from `replctl ... --help` by `python -m replctl.cli.reference`; do not edit by hand.",
        "",
        "The document each command prints under `--json` has a JSON Schema in [schemas/](schemas/).",
        "",
    ]
    for path in _commands(root):
        result = runner.invoke(app, [*path, "--help"], env=env, prog_name="replctl")
        title = " ".join(("replctl", *path))
        parts += [f"## {title}", "", "```text", result.stdout.rstrip(), "```", ""]
    return "\n".join(parts)


if __name__ == "__main__":
    print(render_reference(), end="")
