"""What `backup create|list|show|verify|prune` return (rules.md BK1–BK4): typed outcomes with one `to_json()`.

Each document is the command's whole `--json` output, key for key as cli.md and docs/schemas give it; the exit
code follows from `completion` alone (`replctl.cli.outcomes`), and `backup prune --plan-out` records the dry
run's `to_json()` (issue 15).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from replctl.core.backups import Manifest
from replctl.core.outcomes import AllOrNothing, Completion
from replctl.errors import EnvironmentFailure


@dataclass(frozen=True)
class BackupsMade:
    """`backup create`: the backups made (or planned, in a dry run) and the locations refused.

    Backups made while another location was refused are partial work (finding 6): incomplete (exit 5),
    except in a dry run, which leaves nothing undone.
    """

    dry_run: bool
    backups: tuple[dict[str, Any], ...]
    refused: tuple[dict[str, Any], ...]

    @property
    def completion(self) -> Completion:
        """Incomplete when a location was refused in a run."""
        return Completion.INCOMPLETE if self.refused and not self.dry_run else Completion.COMPLETE

    def to_json(self) -> dict[str, Any]:
        """`backup create --json`."""
        return {
            "ok": True,
            "dry_run": self.dry_run,
            "backups": list(self.backups),
            "refused": list(self.refused),
        }


@dataclass(frozen=True)
class BackupList(AllOrNothing):
    """`backup list`: the summaries of the complete backups, oldest first."""

    backups: tuple[dict[str, Any], ...]

    def to_json(self) -> dict[str, Any]:
        """`backup list --json`."""
        return {"ok": True, "backups": list(self.backups)}


@dataclass(frozen=True)
class BackupShown(AllOrNothing):
    """`backup show ID`: one backup's whole manifest."""

    manifest: Manifest

    def to_json(self) -> dict[str, Any]:
        """`backup show --json`."""
        return {"ok": True, "backup": self.manifest.to_json()}


@dataclass(frozen=True)
class BackupCheck:
    """One backup's `backup verify`: its files against the manifest's digests, then §9 on its events."""

    id: str
    location: str
    problems: tuple[str, ...]
    violations: tuple[dict[str, Any], ...]

    @property
    def ok(self) -> bool:
        """Whether the backup is whole and its events keep the invariants."""
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        """One entry of `backups` in `backup verify --json`."""
        return {
            "id": self.id,
            "location": self.location,
            "ok": self.ok,
            "problems": list(self.problems),
            "violations": list(self.violations),
        }


@dataclass(frozen=True)
class BackupChecks:
    """`backup verify`: each backup's check; damaged (exit 6) when any backup is. `repair` is the hint for the
    first damaged backup when its files are (`services.backup_repair.way_out`); None: a new backup."""

    checks: tuple[BackupCheck, ...]
    repair: str | None = None

    @property
    def completion(self) -> Completion:
        """Damaged when a backup's files or events are not what its manifest says."""
        return Completion.DAMAGED if self.error is not None else Completion.COMPLETE

    @property
    def error(self) -> EnvironmentFailure | None:
        """The first damaged backup as the error the document carries, with the fix: files that differ from
        their digests need a new backup; events that break §9 although the files are the ones copied point
        at the live log they came from first."""
        bad = [c for c in self.checks if not c.ok]
        if not bad:
            return None
        first = bad[0]
        if first.violations:
            hint = f"replctl log verify {first.location}"
        else:
            hint = self.repair or f"replctl backup create {first.location}"
        return EnvironmentFailure(
            f"backup {first.id} is damaged: {'; '.join(first.problems)}", code="backup-damaged", hint=hint
        )

    def to_json(self) -> dict[str, Any]:
        """`backup verify --json`: `ok` false and the `error` when a backup is damaged."""
        checks = [c.to_json() for c in self.checks]
        error = self.error
        if error is None:
            return {"ok": True, "backups": checks}
        return {"ok": False, "error": error.to_json(), "backups": checks}


@dataclass(frozen=True)
class PruneOutcome(AllOrNothing):
    """`backup prune`: the backups removed (or that a dry run would remove) and kept, the segment copies only
    they named, and the locations the prune makes unrecoverable (BK3, BK4), each with the prune that keeps
    it recoverable."""

    dry_run: bool
    removed: tuple[str, ...]
    kept: tuple[str, ...]
    files_removed: tuple[str, ...]
    makes_unrecoverable: tuple[dict[str, Any], ...]

    def to_json(self) -> dict[str, Any]:
        """`backup prune --json`, also what `--plan-out` records."""
        return {
            "ok": True,
            "dry_run": self.dry_run,
            "removed": list(self.removed),
            "kept": list(self.kept),
            "files_removed": list(self.files_removed),
            "makes_unrecoverable": list(self.makes_unrecoverable),
        }
