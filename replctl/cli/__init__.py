"""The command-line surface (cli.md). `replctl.cli:app` is the Typer app; `main` is the console script.

Global options may stand anywhere on the line (`replctl status --json` and `replctl --json status` are the same):
the root group lifts them in front of the sub-command before Click parses.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from replctl import __version__
from replctl.cli.boundary import COMMAND_ARGV
from replctl.cli.closedpipe import closed_pipe_exits
from replctl.cli.commandtable import COMMANDS, CommandTable
from replctl.cli.context import AppContext
from replctl.cli.helpwords import speak_in_words
from replctl.cli.output import emit_error, set_notation, set_quiet
from replctl.cli.paramvalues import uncoerced_help
from replctl.config import resolve
from replctl.errors import InvalidInput, ReplctlError
from replctl.masking import remember

_VALUE_OPTIONS = {
    "--config",
    "--db",
    "--store",
    "--spark-master",
    "--spark-remote",
    "--spark-conf",
    "--output",
    "--reason",
    "--plan-out",
}
_FLAG_OPTIONS = {"--json", "--yes", "--progress", "--no-progress", "-q", "--quiet", "-v", "--verbose"}


def hoist_global_options(args: list[str]) -> list[str]:
    """Move global options (and their values) in front of the sub-command, keeping their order."""
    lifted, rest = split_global_options(args)
    return lifted + rest


def split_global_options(args: list[str]) -> tuple[list[str], list[str]]:
    """The global options with their values, and the rest (the sub-command and its arguments), in order."""
    lifted: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest.extend(args[i:])
            break
        name = arg.split("=", 1)[0]
        if arg in _FLAG_OPTIONS or (name in _VALUE_OPTIONS and "=" in arg):
            lifted.append(arg)
        elif arg in _VALUE_OPTIONS and i + 1 < len(args):
            lifted.extend(args[i : i + 2])
            i += 1
        else:
            rest.append(arg)
        i += 1
    return lifted, rest


def wanted_output(args: list[str]) -> str:
    """The output the command line (or REPLCTL_OUTPUT) asks for, read before Click parses it: `json`,
    `yaml` or `text` (the last --output or --json given wins, as Click's would)."""
    lifted, _ = split_global_options(args)
    found = os.environ.get("REPLCTL_OUTPUT", "")
    for i, arg in enumerate(lifted):
        if arg == "--json":
            found = "json"
        elif arg.startswith("--output="):
            found = arg.split("=", 1)[1]
        elif arg == "--output" and i + 1 < len(lifted):
            found = lifted[i + 1]
    return found if found in ("json", "yaml") else "text"


def wants_json(args: list[str]) -> bool:
    """Whether the command line (or REPLCTL_OUTPUT) asks for one machine-readable document (JSON or YAML)."""
    return wanted_output(args) != "text"


class RootGroup(TyperGroup):
    """The root group: accepts global options after the sub-command too, and builds a sub-command only when it
    is asked for (`cli.commandtable`)."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = CommandTable(COMMANDS, self.commands)

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        """Under --json a usage error is one JSON document on stdout too (cli.md "Output"), exit 2.

        Click prints usage errors as text on stderr before any command runs; a runbook that parses stdout
        would find nothing. So with --json the group runs non-standalone and turns them into the contract's
        error document itself.

        A closed stdout or stderr (`replctl ... | head`) ends any invocation quietly with exit 141
        (`cli.closedpipe`): here, and in `parse_args` (the root's --help and --version) and `invoke` (every
        sub-command), where Click's own handling would otherwise make it exit 1.
        """
        with closed_pipe_exits():
            return self._main(args, prog_name, complete_var, standalone_mode, windows_expand_args, **extra)

    def _main(
        self,
        args: Sequence[str] | None,
        prog_name: str | None,
        complete_var: str | None,
        standalone_mode: bool,
        windows_expand_args: bool,
        **extra: Any,
    ) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        # Help in words, not Python types (issue 18); each sub-command gets it as it is built (`commandtable`).
        speak_in_words(self, deep=False)
        set_notation(wanted_output(argv))  # a usage error under --output yaml is a YAML document too
        if not standalone_mode or not wants_json(argv):
            return super().main(argv, prog_name, complete_var, standalone_mode, windows_expand_args, **extra)
        # Typer vendors Click and exports no usage-error class; this is the base of Click's usage errors.
        from typer._click.exceptions import ClickException

        try:
            code = super().main(argv, prog_name, complete_var, False, windows_expand_args, **extra)
        except ClickException as exc:
            # A group called without its sub-command "fails" with its whole help text as the message.
            no_command = type(exc).__name__ == "NoArgsIsHelpError"
            message = "Missing command." if no_command else exc.format_message()
            where = getattr(getattr(exc, "ctx", None), "command_path", None)
            hint = getattr(exc, "hint", None) or (f"run: {where} --help" if where else None)
            emit_error(InvalidInput(message, code="usage", hint=hint), as_json=True)
            sys.exit(2)
        except typer.Abort:
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)

    def get_help_option(self, ctx: Any) -> Any:
        """Click's help option, skipping Typer's coercion when not given (cli.paramvalues)."""
        return uncoerced_help(super().get_help_option(ctx))

    # The context type is Typer's vendored Click context, which Typer does not export; Any keeps the override
    # compatible without importing a private module.
    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        lifted, rest = split_global_options(list(args))
        # The sub-command as typed: what --plan-out records as the plan's command (cli.boundary).
        ctx.meta[COMMAND_ARGV] = rest
        with closed_pipe_exits():
            return super().parse_args(ctx, lifted + rest)

    def invoke(self, ctx: Any) -> Any:
        """Run the sub-command; a closed pipe exits 141 (`cli.closedpipe`), where Click would exit 1."""
        with closed_pipe_exits():
            return super().invoke(ctx)


app = typer.Typer(
    cls=RootGroup,
    name="replctl",
    help="Administer causally consistent, geo-replicated event logs.",
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"replctl {__version__}")
        raise typer.Exit(0)


@app.callback()
def root(
    ctx: typer.Context,
    config: Annotated[
        Path | None, typer.Option("--config", metavar="PATH", help="Config file (env REPLCTL_CONFIG).")
    ] = None,
    db: Annotated[
        str | None, typer.Option("--db", metavar="URL", help="Catalog SQLAlchemy URL (env REPLCTL_DB).")
    ] = None,
    store: Annotated[
        str | None, typer.Option("--store", metavar="URI", help="Log store root (env REPLCTL_STORE).")
    ] = None,
    spark_master: Annotated[
        str | None, typer.Option("--spark-master", metavar="URL", help="Spark master URL.")
    ] = None,
    spark_remote: Annotated[
        str | None, typer.Option("--spark-remote", metavar="URL", help="Spark Connect sc://HOST:PORT.")
    ] = None,
    spark_conf: Annotated[
        list[str] | None, typer.Option("--spark-conf", metavar="KEY=VALUE", help="Spark setting, repeatable.")
    ] = None,
    output: Annotated[
        str | None,
        typer.Option("--output", metavar="text|json|yaml", help="text, json or yaml (env REPLCTL_OUTPUT)."),
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Same as --output json.")] = False,
    yes: Annotated[bool, typer.Option("--yes", help="Answer yes to prompts.")] = False,
    reason: Annotated[
        str | None, typer.Option("--reason", metavar="TEXT", help="Why; kept in the journal.")
    ] = None,
    plan_out: Annotated[
        Path | None,
        typer.Option(
            "--plan-out",
            metavar="FILE",
            help="Mutating commands: change nothing, write the plan to FILE for `replctl apply`.",
        ),
    ] = None,
    progress: Annotated[
        bool | None,
        typer.Option(
            "--progress/--no-progress", help="Spark progress on stderr (default: when it is a terminal)."
        ),
    ] = None,
    quiet: Annotated[
        bool, typer.Option("-q", "--quiet", help="Print only errors and refusals (and --json documents).")
    ] = False,
    verbose: Annotated[
        bool,
        typer.Option("-v", "--verbose", help="Also print each journalled operation's id and the time taken."),
    ] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Administer causally consistent, geo-replicated event logs."""
    flags: dict[str, Any] = {
        "config": config,
        "db": db,
        "store": store,
        "spark_master": spark_master,
        "spark_remote": spark_remote,
        "spark_conf": spark_conf or [],
        "output": "json" if json_output else output,
    }
    set_notation(flags["output"] or os.environ.get("REPLCTL_OUTPUT"))
    set_quiet(quiet)
    try:
        settings = resolve(flags)
    except ReplctlError as exc:
        emit_error(exc, as_json=json_output or output in ("json", "yaml"))
        raise typer.Exit(exc.exit_code) from None
    remember(settings.secrets())
    set_notation(settings.output)  # the config file may say yaml too
    ctx.obj = AppContext(
        settings=settings,
        yes=yes,
        reason=reason,
        progress=progress,
        plan_out=plan_out,
        quiet=quiet,
        verbose=verbose and not quiet,
    )


def main() -> None:
    """Console-script entry point: the process is the command's, so an interrupted command may end it
    (`interrupt.end_within`); a host that calls `app` itself keeps its process."""
    from replctl.cli import interrupt

    interrupt.OWNS_PROCESS = True
    app()
