"""The root's table of commands: each command's module is imported, and its Click command built, only when
that command is first asked for (to run it, complete it, or list it in help).

Typer builds every command of an app, and Python imports every module they live in, before any of them runs:
a light command such as `status` paid for building and importing all the others (issue 17). The table keeps
the names, in `replctl --help` order, and the module that registers each; the rest waits until it is needed.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any

from replctl.cli.helpwords import speak_in_words

# Every top-level command and the module of `replctl.cli` whose `register(root)` adds it, in the order
# `replctl --help` lists them (Typer's order: single commands first, then groups).
COMMANDS: Mapping[str, str] = {
    "init": "setup",
    "version": "setup",
    "status": "setup",
    "replicate": "replicate",
    "delete": "delete",
    "demo": "demo",
    "apply": "apply",
    "report": "report",
    "db": "setup",
    "config": "setup",
    "location": "location",
    "topology": "topology",
    "log": "log",
    "recover": "recover",
    "drill": "drill",
    "ops": "ops",
    "backup": "backup",
    "engine": "engine",
}


def build(module: str) -> dict[str, Any]:
    """The Click commands `replctl.cli.<module>` registers, built as Typer builds them under the root (no rich
    markup, help in words)."""
    import typer
    import typer.main

    holder = typer.Typer(rich_markup_mode=None)
    importlib.import_module(f"replctl.cli.{module}").register(holder)
    group = typer.main.get_group(holder)
    speak_in_words(group)
    return dict(group.commands)


class CommandTable(MutableMapping[str, Any]):
    """The root group's `commands`: the names are known at once, each command is built on first use."""

    def __init__(self, where: Mapping[str, str], built: Mapping[str, Any] | None = None) -> None:
        self._where = dict(where)
        self._built: dict[str, Any] = dict(built or {})

    def __getitem__(self, name: str) -> Any:
        if name in self._built:
            return self._built[name]
        module = self._where[name]  # KeyError for a name no module registers, as a dict would
        # Click asks through `Mapping.get`, which takes any KeyError for an unknown name: one raised while the
        # module loads, or a module that does not register `name`, is a bug and must show as one.
        try:
            self._built.update(build(module))
            return self._built[name]
        except KeyError as exc:
            raise RuntimeError(f"replctl.cli.{module} did not build the command {name!r}") from exc

    def __setitem__(self, name: str, command: Any) -> None:
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        if name not in self:
            raise KeyError(name)
        self._built.pop(name, None)
        self._where.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        yield from self._where
        yield from (name for name in self._built if name not in self._where)

    def __len__(self) -> int:
        return len(self._where.keys() | self._built.keys())

    def __contains__(self, name: object) -> bool:
        return name in self._where or name in self._built
