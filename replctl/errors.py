"""The error tree of replctl; each class carries its exit code (cli.md) and a hint.

::

    ReplctlError (1, a bug)
    ├── InvalidInput (2)          unknown name, bad filter, malformed event file, bad number
    │   ├── UnknownName           code "unknown-location", "unknown-connection", ...
    │   └── BadFilter             code "bad-filter", with the position of the error
    ├── Refused (3)               a rule refused; nothing was changed; code is the rule id ("F1", "DEL3")
    ├── LockHeld (4)              another operation holds the lease (or the location is recovering)
    │   └── DamagedLog            code "damaged": a log's store differs from its catalog rows (DR0)
    ├── Incomplete (5)            part was done, the rest is pending
    ├── Interrupted (130, 143)    Ctrl-C, SIGTERM: the steps journalled so far are committed, nothing after
    └── EnvironmentFailure (6)    catalog, store or Spark unreachable or inconsistent
        └── CatalogOutdated       the catalog is at an older Alembic revision

Adapters translate every foreign exception into one of these at the boundary, chained with ``from``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from replctl.masking import mask, mask_json


class ReplctlError(Exception):
    """Base of every error replctl reports; unexpected ones exit 1."""

    exit_code: ClassVar[int] = 1
    default_code: ClassVar[str] = "internal"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        hint: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        # Masked when made: an error travels to the terminal, the JSON document and the journal alike, and
        # its text often quotes a URL or a driver's message that may hold a password or a token.
        message, hint = mask(message), (mask(hint) if hint is not None else None)
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code
        self.hint = hint
        self.details: dict[str, Any] = mask_json(details) if details else {}

    def to_json(self) -> dict[str, Any]:
        """The `error` object of a JSON document (cli.md, Output)."""
        doc: dict[str, Any] = {"code": self.code, "message": self.message, "hint": self.hint}
        if self.details:
            doc["details"] = self.details
        return doc


class InvalidInput(ReplctlError):
    """Invalid input or usage (exit 2)."""

    exit_code = 2
    default_code = "invalid-input"


class UnknownName(InvalidInput):
    """A name that the catalog does not know."""

    default_code = "unknown-name"


class BadFilter(InvalidInput):
    """A filter expression that does not parse, names unknown columns or is not boolean."""

    default_code = "bad-filter"


class Refused(ReplctlError):
    """A rule of rules.md refused the request; nothing was changed (exit 3). `code` is the rule id."""

    exit_code = 3
    default_code = "refused"


class LockHeld(ReplctlError):
    """Another operation holds what this one needs (exit 4)."""

    exit_code = 4
    default_code = "lock-held"


class DamagedLog(LockHeld):
    """A log whose stored segments differ from their catalog rows (DR0): nothing is decided from it or
    written to it until `replctl recover location` has run (exit 4), whether the census or a read found it."""

    default_code = "damaged"

    def __init__(self, location: str, message: str) -> None:
        super().__init__(message, hint=f"replctl recover location {location}")
        self.location = location


class Incomplete(ReplctlError):
    """Part was done, the rest is pending (exit 5)."""

    exit_code = 5
    default_code = "incomplete"


class Interrupted(ReplctlError):
    """Ctrl-C (SIGINT) or SIGTERM stopped the command; every step before it is committed, nothing after (exit
    130, or 143 for SIGTERM (`cli.interrupt`), as a shell reports a process ended by that signal)."""

    exit_code = 130
    default_code = "interrupted"


class EnvironmentFailure(ReplctlError):
    """The catalog, the store or Spark is unreachable or inconsistent (exit 6)."""

    exit_code = 6
    default_code = "environment"


class CatalogOutdated(EnvironmentFailure):
    """The catalog schema is older than this replctl; `replctl db upgrade` fixes it."""

    default_code = "catalog-outdated"
