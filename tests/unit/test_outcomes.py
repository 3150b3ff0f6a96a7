"""Typed outcomes (issue 15): one exit code per completion, and a report key never dropped silently."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from dataclasses import dataclass
from typing import Any

import pytest

from replctl.cli.outcomes import exit_code, present
from replctl.core.recovery import RecoveryOutcome
from replctl.services.backup_outcomes import BackupCheck, BackupChecks, BackupsMade, PruneOutcome
from replctl.services.deletion import Blocker, DeletionOutcome
from replctl.services.replication import PassReport, ReplicationOutcome

RECOVERY_REPORT: dict[str, Any] = {
    "location": "A",
    "lost_from": 2,
    "dry_run": False,
    "clock": {"before": 3, "after": 3, "floor": 3},
    "progress_resets": [{"source": "B", "target": "A", "from": 1, "to": 0}],
    "rounds": [{"round": 1, "sources": ["B"], "written": 1}],
    "refused": [],
    "accepted": [],
    "given_up": {},
    "cvv": {"A": 3, "B": 1},
    "discarded": {},
    "lost": {"A": [2, 3]},
    "lost_runs": {"A": [[2, 3]]},
    "survivors_upto": 1,
}


def _deletion(*, pending: bool, dry_run: bool) -> DeletionOutcome:
    return DeletionOutcome(
        location="A",
        requested_upto=5,
        logical=False,
        dry_run=dry_run,
        logical_deleted_upto=5,
        deleted_upto=3,
        dvv={"A": 3},
        pending=pending,
        pending_upto=5 if pending else None,
        blocked_by=(Blocker("B", 4),) if pending else (),
        would_delete=None,
    )


def test_each_completion_exits_with_its_error_class_code() -> None:
    blocked = PassReport("A", "B", "active", "failed", reason="filter failed")
    assert exit_code(ReplicationOutcome(False, ((1, blocked),), ())) == 5
    assert exit_code(ReplicationOutcome(True, ((1, blocked),), ())) == 0  # a dry run leaves nothing undone
    assert exit_code(_deletion(pending=True, dry_run=False)) == 5
    assert exit_code(_deletion(pending=True, dry_run=True)) == 0
    assert exit_code(_deletion(pending=False, dry_run=False)) == 0
    refused = RecoveryOutcome.of(
        {**RECOVERY_REPORT, "refused": [{"source": "B", "rule": "DR5", "reason": "x"}]}
    )
    assert (exit_code(RecoveryOutcome.of(RECOVERY_REPORT)), exit_code(refused)) == (0, 5)


def test_a_recovery_report_keeps_its_keys_in_order() -> None:
    assert RecoveryOutcome.of(RECOVERY_REPORT).to_json() == {"ok": True, **RECOVERY_REPORT}
    assert list(RecoveryOutcome.of(RECOVERY_REPORT).to_json()) == ["ok", *RECOVERY_REPORT]
    restored = {"location": "A", "backup": "b-1", **RECOVERY_REPORT}
    assert list(RecoveryOutcome.of(restored).to_json()) == ["ok", *restored]


def test_a_report_key_without_a_field_is_a_bug_not_a_silent_change() -> None:
    with pytest.raises(ValueError, match=r"\['extra'\]"):
        RecoveryOutcome.of({**RECOVERY_REPORT, "extra": 1})
    with pytest.raises(ValueError, match=r"\['damaged'\]"):
        report = _deletion(pending=True, dry_run=False).to_json()
        del report["ok"]
        DeletionOutcome.of({**report, "damaged": True})


@dataclass
class _App:
    json: bool


def test_json_output_is_the_outcomes_own_document_whatever_the_renderer_prints() -> None:
    def render(app: Any, out: Any) -> None:
        print("text view")

    outcome = _deletion(pending=True, dry_run=False)
    for as_json, printed in ((True, json.dumps(outcome.to_json()) + "\n"), (False, "text view\n")):
        buffer = io.StringIO()
        with redirect_stdout(buffer):
            code = present(_App(as_json), render, outcome)  # type: ignore[arg-type]
        assert (buffer.getvalue(), code) == (printed, 5)


def test_backup_outcomes_exit_with_their_completion_and_keep_their_documents() -> None:
    refused = ({"location": "B", "error": {"code": "DR0", "message": "damaged", "hint": None}},)
    assert exit_code(BackupsMade(False, (), refused)) == 5  # finding 6: made some, refused others
    assert exit_code(BackupsMade(True, (), refused)) == 0  # a dry run leaves nothing undone
    assert BackupsMade(False, (), refused).to_json() == {
        "ok": True,
        "dry_run": False,
        "backups": [],
        "refused": list(refused),
    }
    whole = BackupCheck("A-1", "A", (), ())
    missing = BackupCheck("A-2", "A", ("A/seg-1: missing",), ())
    assert exit_code(BackupChecks((whole,))) == 0
    assert exit_code(BackupChecks((whole, missing))) == 6
    assert BackupChecks((whole, missing)).to_json() == {
        "ok": False,
        "error": {
            "code": "backup-damaged",
            "message": "backup A-2 is damaged: A/seg-1: missing",
            "hint": "replctl backup create A",
        },
        "backups": [
            {"id": "A-1", "location": "A", "ok": True, "problems": [], "violations": []},
            {"id": "A-2", "location": "A", "ok": False, "problems": ["A/seg-1: missing"], "violations": []},
        ],
    }
    pruned = PruneOutcome(True, ("A-1",), ("A-2",), ("A/seg-1",), ())
    assert (exit_code(pruned), list(pruned.to_json())) == (
        0,
        ["ok", "dry_run", "removed", "kept", "files_removed", "makes_unrecoverable"],
    )
