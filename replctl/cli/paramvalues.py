"""Parameter values that need no coercion: a missing value, a default of exactly its declared type, or text
where text is declared (issue 17).

Typer 0.29 coerces every parameter that is not a bare flag through a pydantic `TypeAdapter`, built on first use,
even when the value is missing (it then maps it to `None` or `()` whatever the type), is the command's own
default, already of the declared type, or is the text typed for a `str` (or `list[str]`) parameter, which its
adapter returns as it is. Building that adapter imports pydantic, about a fifth of a light command's start-up
and of a small `log append`. Any other value from the command line, the environment or a prompt (a number, a
path, a choice) still goes through Typer's coercion and its messages unchanged.
"""

from __future__ import annotations

from typing import Any

from typer._click.core import ParameterSource
from typer._click.exceptions import MissingParameter
from typer.core import TyperArgument, TyperOption

# Types whose defaults pass through Typer's coercion unchanged (lax mode keeps an int an int, a str a str).
_PLAIN = (str, int, float)


def needs_no_coercion(param: TyperArgument | TyperOption, ctx: Any, value: Any) -> bool:
    """Whether Typer's coercion would return `value` unchanged, without building its adapter."""
    if value is None:
        return True
    declared = param.type_descriptor.annotation
    if param.type_descriptor.parameter_info.parser is None and (
        (declared is str and type(value) is str)
        or (declared == list[str] and type(value) in (list, tuple) and all(type(v) is str for v in value))
    ):
        return True  # Typer's adapter for text returns text as it is
    return (
        param.name is not None
        and ctx.get_parameter_source(param.name) is ParameterSource.DEFAULT
        and type(value) in _PLAIN
        and type(value) is declared
    )


def process_uncoerced(param: TyperArgument | TyperOption, ctx: Any, value: Any) -> Any:
    """What `_TyperParameter.process_value` returns for such a value: the missing check and the callback, as
    Typer's own, around the value as it is (a missing repeatable value is the empty tuple, as Typer's)."""
    if value is None and (param.multiple or param.nargs == -1):
        value = ()
    elif type(value) is tuple and param.type_descriptor.is_list:
        value = list(value)  # as Typer's list adapter returns it
    if param.required and param.value_is_missing(value):
        raise MissingParameter(ctx=ctx, param=param)
    if param.callback is not None:
        value = param.callback(ctx, param, value)
    return value


class UncoercedArgument(TyperArgument):
    """A Typer argument whose values that need no coercion skip Typer's adapter."""

    def process_value(self, ctx: Any, value: Any) -> Any:
        """Typer's processing, without its pydantic coercion where it would change nothing."""
        if needs_no_coercion(self, ctx, value):
            return process_uncoerced(self, ctx, value)
        return super().process_value(ctx, value)


class UncoercedOption(TyperOption):
    """A Typer option whose values that need no coercion skip Typer's adapter (`--help` too: it is a flag,
    but Click hands its processing `None` when it is not given)."""

    def process_value(self, ctx: Any, value: Any) -> Any:
        """Typer's processing, without its pydantic coercion where it would change nothing."""
        if needs_no_coercion(self, ctx, value):
            return process_uncoerced(self, ctx, value)
        return super().process_value(ctx, value)


def uncoerced_help(option: Any) -> Any:
    """The help option Click built for a command (or None), as an `UncoercedOption`; Typer makes it a plain
    `TyperOption`, so a command class's `get_help_option` passes its result through here."""
    if type(option) is TyperOption:
        option.__class__ = UncoercedOption
    return option
