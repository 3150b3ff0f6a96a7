"""Writing to the terminal: one JSON document on stdout under --json, Rich text otherwise (cli.md, Output)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Mapping
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

from rich.console import Console

from replctl.cli.closedpipe import PipeConsole
from replctl.errors import ReplctlError


def _width(stream: Any) -> int | None:
    # Piped into a file or a runbook, Rich would squeeze tables to 80 columns; give them room instead.
    if os.environ.get("COLUMNS") or (hasattr(stream, "isatty") and stream.isatty()):
        return None
    return 200


# -q (set per invocation by the root callback): text output is off; errors and refusals, written by
# `emit_error`, and every --json document are not.
_QUIET: ContextVar[bool] = ContextVar("replctl_quiet", default=False)


def set_quiet(quiet: bool) -> None:
    """Under -q the text consoles print nothing."""
    _QUIET.set(quiet)


def stdout() -> Console:
    """A console on the current stdout (CliRunner swaps sys.stdout per invocation); silent under -q."""
    return PipeConsole(
        file=sys.stdout, highlight=False, soft_wrap=False, width=_width(sys.stdout), quiet=_QUIET.get()
    )


def stderr() -> Console:
    """A console on stderr, for progress and warnings in text mode; silent under -q."""
    return PipeConsole(file=sys.stderr, highlight=False, soft_wrap=False, quiet=_QUIET.get())


def _utc(moment: datetime) -> datetime:
    # The catalog stores UTC; SQLite hands it back without a zone.
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def timestamp_json(moment: datetime) -> str:
    """The one timestamp format of every --json document (issue 18): RFC 3339 in UTC with `Z` and
    microseconds, e.g. `2026-11-23T08:42:14.949806Z` (fixed width, so the strings also sort in time order)."""
    return _utc(moment).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def timestamp_text(moment: datetime | str | None) -> str:
    """A timestamp in text output: RFC 3339 UTC to the second (`2026-11-23T08:42:14Z`); `-` for none."""
    found = _as_datetime(moment) if isinstance(moment, str) else moment
    if found is None:
        return "-" if moment is None else str(moment)
    return _utc(found).strftime("%Y-%m-%dT%H:%M:%SZ")


def _as_datetime(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def _is_time_key(key: str) -> bool:
    return key in {"at", "since"} or key.endswith("_at")


def _rfc3339(value: Any, key: str = "") -> Any:
    """`value` with every timestamp in it written by `timestamp_json`: datetimes anywhere, and the ISO strings
    the catalog and the backup manifests keep under timestamp keys (`at`, `since`, `*_at`)."""
    if isinstance(value, datetime):
        return timestamp_json(value)
    if isinstance(value, str) and _is_time_key(key):
        found = _as_datetime(value)
        return value if found is None else timestamp_json(found)
    if isinstance(value, Mapping):
        return {k: _rfc3339(v, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_rfc3339(v, key) for v in value]
    return value


# The notation of the one document a command prints: `json`, or `yaml` under `--output yaml` (the same document,
# for readers who prefer it, as kubectl's `-o yaml`). Set per invocation by the root callback (cli.__init__).
_NOTATION: ContextVar[str] = ContextVar("replctl_document_notation", default="json")


def set_notation(output: str | None) -> None:
    """Print this invocation's documents as YAML when `output` is `yaml`, else as JSON."""
    _NOTATION.set("yaml" if output == "yaml" else "json")


def _plain(doc: Any) -> Any:
    # What JSON would carry: strings for everything json.dumps turns into a string (default=str).
    return json.loads(json.dumps(_rfc3339(doc), default=str, ensure_ascii=False))


def _yaml(doc: Any) -> str:
    import yaml  # lazily: only --output yaml needs it (issue 17, start-up time)

    return str(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False, default_flow_style=False))


def emit_json(doc: dict[str, Any]) -> None:
    """Print exactly one document on stdout, its timestamps in the one format (`timestamp_json`): JSON, or
    the same document as YAML under `--output yaml`."""
    if _NOTATION.get() == "yaml":
        sys.stdout.write(_yaml(_plain(doc)))
    else:
        sys.stdout.write(json.dumps(_rfc3339(doc), default=str, ensure_ascii=False) + "\n")
    sys.stdout.flush()


# The error a streamed document already carries (`emit_json_stream`): `emit_error` writes no second document.
_CARRIED: ContextVar[ReplctlError | None] = ContextVar("replctl_carried_error", default=None)


def emit_json_stream(head: dict[str, Any], key: str, items: Iterable[dict[str, Any]]) -> None:
    """Print one JSON document on stdout, `head` plus `key`: the list of `items`, written item by item as they
    come, so that a long list (a log's events) is never held whole in memory (issue 18).

    `ok` comes last, after the list: a read that fails once items were written (a damaged file further in
    the log) still ends the one document (cli.md, Output), as `"ok": false` with the items written so far and
    the `error`; the error is raised on for the exit code, and `emit_error` writes no second document.
    """
    body = {name: value for name, value in head.items() if name != "ok"}
    yaml_out = _NOTATION.get() == "yaml"
    if yaml_out:
        # A YAML block sequence is written item by item just as well: the head, `key:`, then `- item` each.
        sys.stdout.write((_yaml(_plain(body)) if body else "") + f"{key}:")
    else:
        opening = json.dumps(_rfc3339({**body, key: []}), default=str, ensure_ascii=False)
        if not opening.endswith("[]}"):
            raise ValueError(f"the streamed list {key!r} must be the document's last key")
        sys.stdout.write(opening[: -len("]}")])
    empty = True
    failure: ReplctlError | None = None
    try:
        for item in items:
            if yaml_out:
                sys.stdout.write("\n" + _yaml([_plain(item)]).rstrip("\n"))
            else:
                sys.stdout.write(
                    ("" if empty else ", ") + json.dumps(_rfc3339(item), default=str, ensure_ascii=False)
                )
            empty = False
    except ReplctlError as exc:
        failure = exc
    tail: dict[str, Any] = {"ok": failure is None}
    if failure is not None:
        tail["error"] = failure.to_json()
    if yaml_out:
        sys.stdout.write((" []\n" if empty else "\n") + _yaml(_plain(tail)))
    else:
        sys.stdout.write("], " + json.dumps(tail, default=str, ensure_ascii=False)[1:] + "\n")
    sys.stdout.flush()
    if failure is not None:
        _CARRIED.set(failure)
        raise failure


# git's default pager and flags: -F quits at once when the text fits one screen, -R keeps colours, -X leaves
# the text on the screen after quitting.
DEFAULT_PAGER = "less -FRX"


def page_through(text: str) -> None:
    """Write `text` on stdout through $PAGER (default `less -FRX`), as git pages a long log (issue 18).

    The caller decides that paging is wanted (a terminal, no --no-pager); under -q nothing is written.
    `PAGER=cat` or an empty PAGER writes the text directly, and so does a pager that cannot be started: the
    text is never lost.
    """
    import shlex
    import subprocess

    if _QUIET.get():
        return
    command = shlex.split(os.environ.get("PAGER", DEFAULT_PAGER))
    if command and command != ["cat"]:
        try:
            subprocess.run(command, input=text, text=True, check=False)
        except OSError:
            pass  # no such pager: write the text directly below
        else:
            return
    sys.stdout.write(text)
    sys.stdout.flush()


def emit_error(error: ReplctlError, *, as_json: bool) -> None:
    """A refusal or error: JSON document, or the reason plus a `hint:` line on stderr."""
    if as_json:
        if _CARRIED.get() is not error:
            emit_json({"ok": False, "error": error.to_json()})
        return
    # Plain writes: a refusal must never be re-wrapped or styled into something a runbook cannot grep.
    # A refusal (3) and an interruption (130) are not errors of the tool: their message stands alone.
    lines = [error.message if error.exit_code in (3, 130) else f"error: {error.message}"]
    violations = error.details.get("violations") or []
    lines += [f"  also [{extra['code']}]: {extra['message']}" for extra in violations[1:]]
    if error.hint:
        lines.append(f"hint: {error.hint}")
    sys.stderr.write("\n".join(lines) + "\n")
    sys.stderr.flush()
