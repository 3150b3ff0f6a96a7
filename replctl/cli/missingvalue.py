"""An option typed without its value (`replctl status --watch`): said as replctl's own errors are, naming the
value it takes, with a hint, instead of Click's bare "Option '--watch' requires an argument." (which under
--json had no hint at all). Exit 2 as every usage error (cli.md)."""

from __future__ import annotations

from typing import IO, Any

from typer._click.exceptions import BadOptionUsage, UsageError

from replctl.cli.output import emit_error
from replctl.errors import InvalidInput


class MissingOptionValue(UsageError):
    """A usage error (exit 2) with the project's `error:` and `hint:` lines; the root group reads `hint` for the
    --json error document too (`RootGroup.main`)."""

    def __init__(self, message: str, hint: str, ctx: Any) -> None:
        super().__init__(message, ctx)
        self.hint = hint

    def show(self, file: IO[Any] | None = None) -> None:
        """The message and the hint on stderr, as every refusal in text mode (cli.output.emit_error)."""
        emit_error(InvalidInput(self.message, code="usage", hint=self.hint), as_json=False)


def missing_value(command: Any, ctx: Any, error: BadOptionUsage) -> UsageError:
    """`error` as a `MissingOptionValue` when it is Click's report of a value option of `command` typed last,
    without its value; any other misuse of an option stays Click's own error."""
    option = next((p for p in command.params if error.option_name in getattr(p, "opts", ())), None)
    if option is None or option.is_flag or option.param_type_name != "option":
        return error  # Click raises BadOptionUsage for a value given to a flag too: that message is right
    word = option.display_type_rich(ctx) or option.metavar or "VALUE"
    return MissingOptionValue(
        f"{error.option_name} needs a value: {error.option_name} {word}",
        f"run: {ctx.command_path} --help",  # the hint of every usage error under --json
        ctx,
    )
