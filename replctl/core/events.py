"""Validation of events given by operators (`--event JSON`, `.jsonl` lines): pure, no I/O.

An event object may carry only `type`, `key` (strings or null), `tags` (a list of strings) and `payload` (any
JSON value, stored as JSON text). The tool assigns seq, origin, origin_time and vt itself (rules.md EM1).

Whatever Python's JSON reader accepts beyond JSON is refused here, as input the store cannot keep faithfully:
`NaN` and `Infinity` (not JSON; other readers of the payload would choke), and strings holding lone surrogates
(escaped `\ud800`, or bytes that were not UTF-8 on the command line), which Parquet cannot store as UTF-8. So
is input the reader gives up on in other ways than a syntax error: nesting deeper than its recursion limit, and
integers longer than Python converts by default.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from replctl.errors import InvalidInput

ALLOWED = ("type", "key", "tags", "payload")


@dataclass(frozen=True)
class NewEvent:
    """An event to append, before EM1 gives it its place and clock."""

    type: str | None = None
    key: str | None = None
    tags: tuple[str, ...] = ()
    payload: str | None = None  # JSON text

    def as_row(self) -> dict[str, Any]:
        """The columns the append job takes."""
        return {"type": self.type, "key": self.key, "tags": list(self.tags), "payload": self.payload}


def parse_event(value: Any, where: str) -> NewEvent:
    """One decoded JSON value → `NewEvent`, or InvalidInput (exit 2) saying where and what."""
    if not isinstance(value, dict):
        raise InvalidInput(
            f"{where}: an event is a JSON object, got {type(value).__name__}", code="bad-event"
        )
    unknown = sorted(set(value) - set(ALLOWED))
    if unknown:
        raise InvalidInput(
            f"{where}: unknown field(s) {', '.join(unknown)}; an event has {', '.join(ALLOWED)}",
            code="bad-event",
            hint="seq, origin, origin_time and vt are assigned by replctl",
        )
    for name in ("type", "key"):
        if value.get(name) is not None and not isinstance(value[name], str):
            raise InvalidInput(f"{where}: {name} must be a string", code="bad-event")
    tags = value.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise InvalidInput(f"{where}: tags must be a list of strings", code="bad-event")
    payload = value.get("payload")
    try:
        text = None if payload is None else json.dumps(payload, sort_keys=True, allow_nan=False)
    except ValueError as exc:
        raise InvalidInput(
            f"{where}: payload holds NaN or Infinity, which JSON has not", code="bad-event"
        ) from exc
    _require_utf8(where, [value.get("type"), value.get("key"), *tags, payload])
    return NewEvent(type=value.get("type"), key=value.get("key"), tags=tuple(tags), payload=text)


def _require_utf8(where: str, values: list[Any]) -> None:
    """Refuse strings (also inside payload lists and objects) that are not encodable as UTF-8."""
    pending = list(values)
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise InvalidInput(
                    f"{where}: not valid Unicode text (a lone surrogate at character {exc.start + 1} of a "
                    "string; bytes that are not UTF-8?)",
                    code="bad-event",
                ) from exc


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_event_text(text: str, where: str) -> NewEvent:
    """A JSON text → `NewEvent`."""
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"{where}: not valid JSON ({exc.msg} at column {exc.colno})", code="bad-event"
        ) from exc
    except ValueError as exc:  # NaN/Infinity, or an integer longer than Python converts
        # Python's text for the long integer goes on to suggest a setting of Python itself: cut there.
        reason = str(exc).split(":", 1)[0]
        raise InvalidInput(f"{where}: not valid JSON ({reason})", code="bad-event") from exc
    except RecursionError as exc:
        raise InvalidInput(f"{where}: not valid JSON (nested too deeply)", code="bad-event") from exc
    return parse_event(value, where)


def parse_jsonl(data: bytes, name: str) -> list[NewEvent]:
    """A whole `.jsonl` file; the first bad line refuses the whole file (nothing is written)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{name}: not UTF-8 (byte {exc.start})", code="bad-event") from exc
    events = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            events.append(parse_event_text(line, f"{name}:{number}"))
    if not events:
        raise InvalidInput(f"{name}: no events in the file", code="bad-event")
    return events
