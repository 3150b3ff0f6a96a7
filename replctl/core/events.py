"""Validation of events given by operators (`--event JSON`, `.jsonl` lines): pure, no I/O.

An event object may carry only `type`, `key` (strings or null), `tags` (a list of strings) and `payload` (any
JSON value, stored as JSON text). The tool assigns seq, origin, origin_time and vt itself (rules.md EM1).

Whatever Python's JSON reader accepts beyond JSON is refused here, as input the store cannot keep faithfully:
`NaN` and `Infinity` (not JSON; other readers of the payload would choke), and strings holding lone surrogates
(escaped `\ud800`, or bytes that were not UTF-8 on the command line), which Parquet cannot store as UTF-8. So
is input the reader gives up on in other ways than a syntax error: nesting deeper than its recursion limit, and
integers longer than Python converts by default. So is an object that names a field twice (`{"key": "x",
"key": "y"}`, in a payload too): JSON leaves its meaning open, and Python's reader would keep the last value.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from replctl.errors import InvalidInput

ALLOWED = ("type", "key", "tags", "payload")
# The default limit on one payload's JSON text, in UTF-8 bytes (`log append --max-payload-bytes`): a payload is
# held whole in one row of Spark's driver and executors, so a huge one exhausts their memory instead of failing.
MAX_PAYLOAD_BYTES = 1024 * 1024


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


def parse_event(value: Any, where: str, max_payload_bytes: int = MAX_PAYLOAD_BYTES) -> NewEvent:
    """One decoded JSON value → `NewEvent`, or InvalidInput (exit 2) saying where and what.

    `tags`, when given, is a list of strings: null, false, 0, {} or "" are refused, not read as no tags.
    """
    if not isinstance(value, dict):
        raise not_an_object(value, where)
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
    tags = value.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise InvalidInput(
            f"{where}: tags must be a list of strings, got {json.dumps(tags)[:40]}", code="bad-event"
        )
    payload = value.get("payload")
    try:
        text = None if payload is None else json.dumps(payload, sort_keys=True, allow_nan=False)
    except ValueError as exc:
        raise InvalidInput(
            f"{where}: payload holds NaN or Infinity, which JSON has not", code="bad-event"
        ) from exc
    _require_utf8(where, [value.get("type"), value.get("key"), *tags, payload])
    check_payload_size(text, where, max_payload_bytes)
    return NewEvent(type=value.get("type"), key=value.get("key"), tags=tuple(tags), payload=text)


# An event as cli.md has it, shown to an operator who gave something else.
EVENT_EXAMPLE = '{"key": "e1", "tags": ["t"], "payload": {"n": 1}}'


def not_an_object(value: Any, where: str) -> InvalidInput:
    """The refusal (exit 2) of a decoded JSON value that is no object (`null`, `3`, `[1]`, `"x"`), named by
    its JSON kind, not by the Python type it was decoded to ("NoneType" means nothing to an operator)."""
    return InvalidInput(
        f"{where}: expected a JSON object with optional fields {', '.join(ALLOWED)}, got {json_kind(value)}",
        code="bad-event",
        hint=f"e.g. {EVENT_EXAMPLE}",
    )


def json_kind(value: Any) -> str:
    """What a decoded JSON value is, in JSON's words: `null`, `true`, `a number`, `a string`, `an array`..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    return "an object" if isinstance(value, dict) else type(value).__name__


def check_payload_size(text: str | None, where: str, max_payload_bytes: int) -> None:
    """Refuse a payload whose JSON text is longer than `max_payload_bytes` in UTF-8 (exit 2)."""
    if text is None or len(text) * 4 <= max_payload_bytes:
        return  # a cheap bound first: at most four bytes a character
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > max_payload_bytes:
        raise InvalidInput(
            f"{where}: the payload is {size} bytes of JSON, more than the limit of {max_payload_bytes}",
            code="bad-event",
            hint="store large documents elsewhere and put a reference in the payload, or raise "
            "--max-payload-bytes",
        )


def check_payload_text(text: str, where: str) -> None:
    """Refuse a payload given as text (a Parquet input's column) that is not one JSON value (exit 2)."""
    try:
        json.loads(text, parse_constant=_no_constant, object_pairs_hook=_unique_fields)
    except RepeatedField as exc:
        raise exc.refusal(where) from exc
    except (ValueError, RecursionError) as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc).split(":", 1)[0]
        raise InvalidInput(f"{where}: payload is not JSON text ({reason})", code="bad-event") from exc


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


class RepeatedField(ValueError):
    """A JSON object names one field twice (raised from inside `json.loads`)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name

    def refusal(self, where: str) -> InvalidInput:
        """The exit-2 refusal of the event at `where`."""
        return InvalidInput(
            f"{where}: field {json.dumps(self.name)} appears more than once in one object",
            code="bad-event",
        )


def _unique_fields(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # json.loads would keep the last of repeated names silently: which value the operator meant is unknown.
    fields: dict[str, Any] = {}
    for name, value in pairs:
        if name in fields:
            raise RepeatedField(name)
        fields[name] = value
    return fields


def parse_event_text(text: str, where: str, max_payload_bytes: int = MAX_PAYLOAD_BYTES) -> NewEvent:
    """A JSON text → `NewEvent`."""
    try:
        value = json.loads(text, parse_constant=_no_constant, object_pairs_hook=_unique_fields)
    except RepeatedField as exc:
        raise exc.refusal(where) from exc
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
    return parse_event(value, where, max_payload_bytes)


def parse_jsonl(data: bytes, name: str, max_payload_bytes: int = MAX_PAYLOAD_BYTES) -> list[NewEvent]:
    """A whole `.jsonl` file; the first bad line refuses the whole file (nothing is written).

    Lines end at a line feed (an optional carriage return before it is dropped) and nowhere else: JSON
    strings may hold U+2028, U+2029, form feeds and other characters Python also counts as line breaks.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{name}: not UTF-8 (byte {exc.start})", code="bad-event") from exc
    events = []
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            events.append(parse_event_text(line.removesuffix("\r"), f"{name}:{number}", max_payload_bytes))
    if not events:
        raise InvalidInput(f"{name}: no events in the file", code="bad-event")
    return events
