"""A dry run (and `--plan-out`) while another operation holds a lease it needs exits as the run would: 4,
`lock-held`, the same message and hint (README, cli.md: "A `--dry-run` exits as the run would when the run
would be refused"). It used to report "would ..." and exit 0 while the run was refused.

The other operation is a lease taken through the catalog as another operator's process holds it: a holder on
another host, which the catalog never judges dead, until its lease expires.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from clitool import Replctl

from replctl.adapters.catalog.repository import Catalog

OTHER = "bob@elsewhere pid 4242"


@pytest.fixture
def rc(tmp_path: Path) -> Replctl:
    tool = Replctl.initialised(tmp_path, "A", "B")
    tool("topology", "add", "A", "B")
    tool("topology", "add", "B", "A")
    return tool


def _hold(rc: Replctl, resource: str) -> str:
    """Take the lease on `resource` as another operator's live operation would; returns its operation id."""
    with Catalog(rc.db_url) as catalog, catalog.transaction() as tx:
        op_id = tx.begin_operation("replicate", {}, "bob", "elsewhere", None)
        tx.acquire_lease(resource, OTHER, op_id, 300)
    return op_id


def _journal(rc: Replctl) -> list[dict[str, Any]]:
    operations: list[dict[str, Any]] = rc.json("ops", "list", "--limit", "100")["operations"]
    return operations


def test_a_dry_run_is_refused_with_exit_4_as_the_run_while_another_operation_holds_its_lease(
    rc: Replctl, tmp_path: Path
) -> None:
    holder = _hold(rc, "location:A")
    before, journal = rc.snapshot(), _journal(rc)

    dry = rc.json("replicate", "B", "A", "--dry-run", expect=4)
    plan = tmp_path / "plan.json"
    planned = rc.json("log", "append", "A", "--event", '{"key": "x"}', "--plan-out", str(plan), expect=4)
    # A dry run reads only: no lease taken, no refusal journalled, no plan written.
    assert rc.snapshot() == before
    assert _journal(rc) == journal
    assert not plan.exists()

    run = rc.json("replicate", "B", "A", expect=4)
    assert dry == run
    assert planned["error"]["message"] == run["error"]["message"]
    assert run["ok"] is False
    error = run["error"]
    assert error["code"] == "lock-held"
    assert error["message"].startswith(f"location:A is held by {OTHER} (operation {holder}) since ")
    assert error["hint"] == f"wait for it to finish, or see: replctl ops show {holder}"


def test_a_dry_run_plans_again_once_the_other_operation_released_its_lease(rc: Replctl) -> None:
    with Catalog(rc.db_url) as catalog, catalog.transaction() as tx:
        op_id = tx.begin_operation("replicate", {}, "bob", "elsewhere", None)
        token = tx.acquire_lease("location:A", OTHER, op_id, 300)
        assert tx.release_lease("location:A", token)
    assert rc.json("replicate", "B", "A", "--dry-run")["ok"] is True


def test_retire_with_prune_clock_is_refused_before_it_retires_while_another_operation_holds_a_location(
    rc: Replctl,
) -> None:
    # The pruning holds every location's lease (RET2). Its dry run checked only the retirement's leases and
    # said what it would do (exit 0); the run retired Z, then had its pruning refused (exit 4).
    rc("location", "add", "Z")
    holder = _hold(rc, "location:A")
    before = rc.snapshot()
    dry = rc.json("location", "retire", "Z", "--prune-clock", "--dry-run", expect=4)
    run = rc.json("location", "retire", "Z", "--prune-clock", expect=4)
    assert dry == run
    assert run["error"]["message"].startswith(f"location:A is held by {OTHER} (operation {holder}) since ")
    assert rc.snapshot() == before
    assert rc.location("Z")["state"] == "active"
