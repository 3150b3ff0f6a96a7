"""Appending through the services as `log append --event` does, for the service-tier stories."""

from __future__ import annotations

from replctl.adapters import eventfile
from replctl.services import logs
from replctl.services.logs import AppendSource
from replctl.services.ports import Catalog, DataPlane


def append_keys(catalog: Catalog, plane: DataPlane, name: str, *keys: str) -> None:
    """Append one event per key to `name`'s log, in one append (one segment)."""
    source = logs.read_source(
        [f'{{"key": "{k}"}}' for k in keys], None, None, 0, event_files=eventfile, location=name
    )
    assert isinstance(source, AppendSource)
    logs.append(catalog, plane, name, source)
