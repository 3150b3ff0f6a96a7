"""Reviewed plans: the file `--plan-out FILE` writes, and the checks `replctl apply FILE` makes before it acts.

A plan file is one JSON document (format `replctl-plan/1`)::

    {"format": "replctl-plan/1", "replctl": "0.1.0",
     "command": ["delete", "EU1", "--upto", "100000", "--reason", "retention"],
     "catalog": {"url": "postgresql+psycopg://replctl:***@db/replctl", "version": 42},
     "plan": {...the document the command prints under --json --dry-run...},
     "inputs": [{"option": "--file", "path": "/home/ops/events.jsonl", "sha256": "9f86d0...", "bytes": 52}],
     "created_at": "2026-12-01T10:00:00+00:00"}

`command` is the sub-command as typed, without global options except `--reason`; `catalog.version` is the
catalog version (a counter of committed state changes, `adapters.catalog.version`) read before the plan was
computed, so any change that could have altered the plan moves it. `apply` executes the command only while
the version is unchanged, the input files have the recorded digests, and a dry run made now gives the same
`plan`; otherwise the plan is stale (exit 3, code `stale-plan`) and must be made again, as with Terraform's
saved plans. The file carries no secret (the URL's password is masked) and no signature: it is reviewed, not
trusted, and anything changed in it makes it either invalid (exit 2) or stale.

An input file is recorded by its absolute path, size and sha256 when the plan is made, and the recorded
command names it by that absolute path: `apply` run from another folder reads the very file the plan was
made from, or refuses. Plans made before sizes were recorded (an input without `bytes`, or named by a
relative path, which `apply` would resolve against whatever folder it runs from) are refused as stale
(exit 3), with the command to make them again: nothing says which file they meant. Plans without inputs
are unaffected.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from replctl import localfiles
from replctl.errors import InvalidInput, Refused

PLAN_FORMAT = "replctl-plan/1"
STALE_PLAN = "stale-plan"
BAD_PLAN = "bad-plan"

_CHUNK = 1 << 20


@dataclass(frozen=True)
class InputDigest:
    """A file a command reads (`log append --file`), by the option that named it and its absolute path;
    sha256 and bytes None: nothing was there (bytes None with a sha256: a plan from an older replctl)."""

    option: str
    path: str
    sha256: str | None
    bytes: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The entry of the plan's `inputs` list."""
        return {"option": self.option, "path": self.path, "sha256": self.sha256, "bytes": self.bytes}

    @property
    def made_before_sizes(self) -> bool:
        """True for an entry an older replctl wrote: no size, or a path relative to a folder not recorded."""
        return not Path(self.path).is_absolute() or (self.sha256 is not None and self.bytes is None)


@dataclass(frozen=True)
class Plan:
    """What a plan file holds (see the module docstring)."""

    command: tuple[str, ...]
    catalog_url: str
    catalog_version: int
    plan: dict[str, Any]
    inputs: tuple[InputDigest, ...] = ()
    replctl: str = ""
    created_at: str = ""

    def to_json(self) -> dict[str, Any]:
        """The plan file's document."""
        return {
            "format": PLAN_FORMAT,
            "replctl": self.replctl,
            "command": list(self.command),
            "catalog": {"url": self.catalog_url, "version": self.catalog_version},
            "plan": self.plan,
            "inputs": [i.to_json() for i in self.inputs],
            "created_at": self.created_at,
        }

    @property
    def command_line(self) -> str:
        """The command as an operator would type it."""
        return "replctl " + " ".join(shlex.quote(arg) for arg in self.command)


@dataclass(frozen=True)
class PlanFile:
    """A plan read from a file, with the file's sha256 (journalled by `apply`)."""

    path: Path
    sha256: str
    plan: Plan


@dataclass(frozen=True)
class AppliedPlan:
    """The reviewed plan an operation executes: the file it came from and the catalog version it assumes."""

    file: str
    sha256: str
    catalog_version: int
    # The input files the plan was made from: what the command reads must be what the plan was made from.
    inputs: tuple[InputDigest, ...] = ()
    remake: str | None = None  # `remake_hint` of the plan file

    def journal_args(self) -> dict[str, Any]:
        """What the operation's journal row records about the plan (`replctl ops show`)."""
        return {
            "plan_file": self.file,
            "plan_sha256": self.sha256,
            "plan_catalog_version": self.catalog_version,
        }


def new_plan(
    command: Sequence[str],
    *,
    catalog_url: str,
    catalog_version: int,
    plan: dict[str, Any],
    inputs: Iterable[InputDigest] = (),
) -> Plan:
    """A plan made now by this replctl."""
    from replctl import __version__

    return Plan(
        command=tuple(command),
        catalog_url=catalog_url,
        catalog_version=catalog_version,
        # Through JSON and back, so that it compares equal to the same plan read from a file.
        plan=json.loads(json.dumps(plan, default=str, ensure_ascii=False)),
        inputs=tuple(inputs),
        replctl=__version__,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def input_digest(option: str, path: Path) -> InputDigest:
    """What the file (or folder: a Parquet dataset, by names and contents) at `path` holds now, by its
    absolute path: sha256 and size, both None if nothing is there; unreadable: exit 2."""
    # absolute(), not resolve(): the path the command reads, links and all, made independent of the folder
    # the command runs from.
    where = path.absolute()
    try:
        return InputDigest(option, str(where), localfiles.digest(where), localfiles.size(where))
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror}", code="bad-file") from exc


def write_plan(path: Path, plan: Plan, mode: int = 0o600) -> None:
    """Write the plan file atomically with `mode`: a reader sees the old file or the whole new one, never a
    part; a link, FIFO or device at `path` is refused (exit 2)."""
    text = json.dumps(plan.to_json(), indent=2, ensure_ascii=False) + "\n"
    try:
        localfiles.write_atomically(path, text, mode)
    except OSError as exc:
        raise InvalidInput(
            f"cannot write the plan to {path}: {exc.strerror}",
            code="bad-plan-out",
            hint="give --plan-out a path in a writable folder",
        ) from exc


def read_plan(path: Path) -> PlanFile:
    """Read and validate a plan file; anything that is not a well-formed plan is refused (exit 2, one line)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InvalidInput(f"cannot read the plan {path}: {exc.strerror}", code=BAD_PLAN) from exc
    try:
        doc = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise _bad(path, "it is not UTF-8 text") from exc
    except json.JSONDecodeError as exc:
        raise _bad(path, f"it is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from exc
    return PlanFile(path, hashlib.sha256(raw).hexdigest(), _parse(path, doc))


def _parse(path: Path, doc: Any) -> Plan:
    if not isinstance(doc, dict):
        raise _bad(path, "it is not a JSON object")
    if doc.get("format") != PLAN_FORMAT:
        found = doc.get("format")
        # Name what was found in words, never as a Python repr (`its format is None`, issue 18).
        what = "it names no format" if found is None else f"its format is {json.dumps(found)}"
        raise _bad(path, f"{what}, expected {json.dumps(PLAN_FORMAT)}")
    command, catalog, plan, inputs = (
        doc.get("command"),
        doc.get("catalog"),
        doc.get("plan"),
        doc.get("inputs"),
    )
    if not isinstance(command, list) or not command or not all(isinstance(a, str) for a in command):
        raise _bad(path, '"command" must be a non-empty list of strings')
    if not isinstance(catalog, dict) or not isinstance(catalog.get("url"), str):
        raise _bad(path, '"catalog" must hold the catalog\'s "url"')
    version = catalog.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise _bad(path, '"catalog" must hold a "version" ≥ 0')
    if not isinstance(plan, dict):
        raise _bad(path, '"plan" must be a JSON object')
    if not isinstance(inputs, list) or not all(_is_input(i) for i in inputs):
        raise _bad(path, '"inputs" must be a list of {"option", "path", "sha256", "bytes"}')
    return Plan(
        command=tuple(command),
        catalog_url=catalog["url"],
        catalog_version=version,
        plan=plan,
        inputs=tuple(InputDigest(i["option"], i["path"], i["sha256"], i.get("bytes")) for i in inputs),
        replctl=str(doc.get("replctl", "")),
        created_at=str(doc.get("created_at", "")),
    )


def _is_input(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("option"), str)
        and isinstance(entry.get("path"), str)
        and (entry.get("sha256") is None or isinstance(entry.get("sha256"), str))
        and _is_size(entry.get("bytes"))
    )


def _is_size(value: Any) -> bool:
    # Absent or null in a plan of an older replctl (`InputDigest.made_before_sizes`).
    return value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 0)


def _bad(path: Path, why: str) -> InvalidInput:
    return InvalidInput(
        f"{path} is not a valid replctl plan: {why}",
        code=BAD_PLAN,
        hint="make one with: replctl COMMAND ... --plan-out FILE",
    )


def stale_plan(made: int, now: int, *, remake: str | None = None) -> Refused:
    """The refusal of a plan made at catalog version `made` when the catalog is at `now` (exit 3)."""
    return Refused(
        f"the catalog changed since the plan was made (version {made} → {now}); make the plan again",
        code=STALE_PLAN,
        hint=remake or "re-run the command with --plan-out, review it, then replctl apply the new file",
        details={"plan_version": made, "catalog_version": now},
    )


def check_catalog(recorded: PlanFile, url: str, version: int) -> None:
    """Refuse a plan made for another catalog (exit 2) or at another version of this one (exit 3)."""
    plan = recorded.plan
    if plan.catalog_url != url:
        raise InvalidInput(
            f"the plan {recorded.path} was made for the catalog {plan.catalog_url}, not {url}",
            code="plan-catalog-mismatch",
            hint="apply it with the --db it was made with",
        )
    if plan.catalog_version != version:
        raise stale_plan(plan.catalog_version, version, remake=remake_hint(recorded))


def check_recorded_inputs(recorded: PlanFile) -> None:
    """Refuse (exit 3, stale) a plan whose input files an older replctl recorded without their size or by a
    relative path: which file it meant depends on the folder it was made in, which it does not say."""
    for entry in recorded.plan.inputs:
        if entry.made_before_sizes:
            raise Refused(
                f"the plan {recorded.path} names its input {entry.path} ({entry.option}) without its absolute "
                "path and size (it was made by an older replctl); make the plan again",
                code=STALE_PLAN,
                hint=f"from the folder the plan was made in: {remake_hint(recorded)}",
            )


def check_inputs_unchanged(recorded: PlanFile) -> None:
    """Refuse (exit 3, stale) when a file the plan records is gone or differs now, before the command would
    read it (and refuse a missing one as bad input, exit 2)."""
    check_recorded_inputs(recorded)
    check_inputs(recorded, [input_digest(i.option, Path(i.path)) for i in recorded.plan.inputs])


def check_read(applied: AppliedPlan | None, option: str, path: Path, data: bytes) -> None:
    """Refuse (exit 3, stale) the bytes a command read from an input file of the plan it executes when they
    are not the bytes the plan was made from. `apply` checks the files right before the command runs
    (`check_inputs`); a file replaced after that check and before the command read it was appended unchecked.
    Outside `replctl apply` (`applied` None), or for a file the plan does not record, it checks nothing."""
    if applied is None:
        return
    where = str(path.absolute())
    for was in applied.inputs:
        if (was.option, was.path) != (option, where):
            continue
        if (was.sha256, was.bytes) != (hashlib.sha256(data).hexdigest(), len(data)):
            raise Refused(
                f"the input {where} ({option}) changed since the plan was made; nothing was appended; make the "
                "plan again",
                code=STALE_PLAN,
                hint=applied.remake or "make the plan again with --plan-out",
            )


def check_still_read(applied: AppliedPlan | None) -> None:
    """Refuse (exit 3, stale) once a command of an applied plan has read its input files, before it commits,
    when one of them is no longer what the plan was made from. A Parquet input is read by a job after the
    check `apply` makes before the command (`check_inputs`), seconds later on a cold Spark: a file replaced in
    between was appended as reviewed. Checked on both sides of the read, a change is seen unless the file
    changed and changed back. Outside `replctl apply` (`applied` None) it checks nothing."""
    if applied is None:
        return
    for was in applied.inputs:
        now = input_digest(was.option, Path(was.path))
        if (was.sha256, was.bytes) != (now.sha256, now.bytes):
            raise Refused(
                f"the input {was.path} ({was.option}) changed while the plan was applied; nothing was "
                "appended; make the plan again",
                code=STALE_PLAN,
                hint=applied.remake or "make the plan again with --plan-out",
            )


def check_inputs(recorded: PlanFile, current: Sequence[InputDigest]) -> None:
    """Refuse (exit 3, stale) when an input file differs from the one the plan was made from, or is gone."""
    check_recorded_inputs(recorded)
    now = {(i.option, i.path): i for i in current}
    before = {(i.option, i.path): i for i in recorded.plan.inputs}
    for option, path in sorted(before.keys() | now.keys()):
        was, found = before.get((option, path)), now.get((option, path))
        if was is not None and found is not None and (was.sha256, was.bytes) == (found.sha256, found.bytes):
            continue
        gone = was is not None and was.sha256 is not None and found is not None and found.sha256 is None
        what = "is gone" if gone else "changed"
        raise Refused(
            f"the input {path} ({option}) {what} since the plan was made; make the plan again",
            code=STALE_PLAN,
            hint=remake_hint(recorded),
        )


def check_same_plan(recorded: PlanFile, fresh: Plan) -> None:
    """Refuse (exit 3, stale) unless a plan made now equals the recorded one: version, inputs and plan.

    Equal catalog versions do not cover everything a plan depends on: the log store (a drill, a lost disk),
    the clock (`delete --older-than`), the input files. The dry run made again right before executing does.
    """
    if fresh.catalog_version != recorded.plan.catalog_version:
        raise stale_plan(recorded.plan.catalog_version, fresh.catalog_version, remake=remake_hint(recorded))
    check_inputs(recorded, fresh.inputs)
    where = first_difference(recorded.plan.plan, fresh.plan)
    if where is not None:
        raise Refused(
            f"the plan made now differs from the one in {recorded.path} (at {where}); make the plan again",
            code=STALE_PLAN,
            hint=remake_hint(recorded),
        )


def remake_hint(recorded: PlanFile) -> str:
    """How to make the plan again, to the same file."""
    return f"{recorded.plan.command_line} --plan-out {shlex.quote(str(recorded.path))}"


def first_difference(before: Any, after: Any, where: str = "plan") -> str | None:
    """The path of the first place two JSON values differ (`plan.passes[0].written`), or None when equal."""
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(before.keys() | after.keys()):
            if key not in before or key not in after:
                return f"{where}.{key}"
            found = first_difference(before[key], after[key], f"{where}.{key}")
            if found is not None:
                return found
        return None
    if isinstance(before, list) and isinstance(after, list):
        for index, (b, a) in enumerate(zip(before, after, strict=False)):
            found = first_difference(b, a, f"{where}[{index}]")
            if found is not None:
                return found
        return None if len(before) == len(after) else f"{where}[{min(len(before), len(after))}]"
    return None if before == after and type(before) is type(after) else where
