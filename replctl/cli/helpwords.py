"""Help that speaks in words (issue 18): `--limit N`, `LOCATION`, `LOCATION...`, never `<int range>` or `<list[str]>`.

Typer writes every parameter's Python type next to it in `--help` (`location <str>`, `--upto <int>`), and for an
argument even when it has a metavar (`FILE <path>`). Operators read `NAME`, `N`, `PATH`, as in git's or kubectl's
help. Typer offers no switch for this, so once per process the root group walks the command tree it built and
gives each parameter the help display of the two small classes below; parsing is untouched, and values that
need no coercion skip Typer's pydantic adapter (cli.paramvalues).
"""

from __future__ import annotations

from typing import Any

from typer._click.exceptions import BadOptionUsage
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

from replctl.cli.missingvalue import missing_value
from replctl.cli.paramvalues import UncoercedArgument, UncoercedOption, uncoerced_help

# Typer's type labels (`<int range>` without the brackets and " range") → the word an operator reads.
_WORDS = {"int": "N", "float": "N", "str": "TEXT", "path": "PATH", "file": "FILE", "directory": "DIR"}


def type_word(label: str) -> str:
    """The word for one of Typer's type labels: `<int range>` → `N`, `<list[str]>` → `TEXT`, `<a|b>` → `a|b`."""
    inner = label.strip("<>")
    if inner.startswith("list[") and inner.endswith("]"):
        inner = inner[len("list[") : -1]
    base = inner.removesuffix(" range")
    return _WORDS.get(base, inner)


class WordArgument(UncoercedArgument):
    """An argument shown by its name in capitals (`LOCATION`, `LOCATION...`), without its Python type."""

    def display_type_rich(self, ctx: Any) -> str | None:
        """No type after the name: the name says what to give."""
        return None

    def _usage_display_name(self) -> str:
        # The metavar already carries "..." for a list; Typer would add a second one.
        name = self.display_name_raw
        return name if self.required else f"[{name}]"


class WordOption(UncoercedOption):
    """An option whose value is shown as a word (`--limit N`, `--role read-write|hub|read-only`)."""

    def display_type_rich(self, ctx: Any) -> str | None:
        """The metavar when one was given, else the word for the value's type."""
        if self.metavar is not None:
            return self.metavar
        word = type_word(self.display_type(ctx))
        return word + "..." if self.nargs != 1 else word


class WordCommand(TyperCommand):
    """A command whose `--help` option skips Typer's coercion when not given (cli.paramvalues), and whose
    options typed without their value say which value (cli.missingvalue)."""

    def get_help_option(self, ctx: Any) -> Any:
        """Click's help option, as an `UncoercedOption`."""
        return uncoerced_help(super().get_help_option(ctx))

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """Click's parsing; an option left without its value is reported with the value it takes."""
        try:
            parsed: list[str] = super().parse_args(ctx, args)
        except BadOptionUsage as exc:
            raise missing_value(self, ctx, exc) from None
        return parsed


class WordGroup(TyperGroup):
    """A group whose `--help` option skips Typer's coercion when not given (cli.paramvalues)."""

    def get_help_option(self, ctx: Any) -> Any:
        """Click's help option, as an `UncoercedOption`."""
        return uncoerced_help(super().get_help_option(ctx))


def speak_in_words(command: Any, *, deep: bool = True) -> None:
    """Give every parameter of `command` and (`deep`) of its sub-commands the help display above (idempotent)."""
    for param in getattr(command, "params", ()):
        if type(param) is TyperArgument:
            if param.metavar is None:
                name = (param.name or "value").upper()
                param.metavar = name + "..." if param.nargs != 1 else name
            # Same instance, same parsing: only the two help methods above differ.
            param.__class__ = WordArgument
        elif type(param) is TyperOption:
            param.__class__ = WordOption
    if type(command) is TyperCommand:
        command.__class__ = WordCommand
    elif type(command) is TyperGroup:
        command.__class__ = WordGroup
    for sub in (getattr(command, "commands", None) or {}).values() if deep else ():
        speak_in_words(sub)
