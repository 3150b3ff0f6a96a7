"""Disagreements the differential state machine found between the CLI and rules.md, kept as named scenarios.

Each is marked xfail(strict=True) with the rule id in the reason: it fails while the product disagrees with the
rules and turns into an unexpected pass (a failure) once the product is fixed, so the mark is then removed. The
state machine keeps away from each one by default (`KNOWN` in test_cli_vs_model.py) so it can look for others.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from clitool import Replctl


@pytest.mark.xfail(
    strict=True,
    reason="BK2: a backup of another location 'is refused' (rules.md BK2), and cli.md gives a refusal by a rule "
    "exit 3; the CLI exits 2 (invalid input) with the rule id BK2",
)
def test_restoring_from_another_locations_backup_is_a_refusal_by_bk2_exit_3(tmp_path: Path) -> None:
    """The shrunk runbook of the state machine: B's backup named for A's restore."""
    rc = Replctl(tmp_path)
    rc("init")
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "a1")
    rc("replicate")
    made = rc.json("backup", "create", "B")["backups"]
    assert [(b["location"], b["events"]) for b in made] == [("B", 1)]
    before = rc.snapshot()
    out = rc("recover", "location", "A", "--from-backup", made[0]["id"], "--json", expect=None)
    error = out.doc["error"]
    assert (out.code, error["code"]) == (3, "BK2")
    assert error["message"] == f"refused [BK2]: backup {made[0]['id']} is a backup of B, not of A (BK2)"
    # Nothing changed (cli.md exit 3): A's log and every location's metadata are as before.
    assert rc.snapshot() == before
    assert rc.stored("A") == [("A", 1, "a1")]
