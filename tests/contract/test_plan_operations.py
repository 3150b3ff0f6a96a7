"""The operation machinery under reviewed plans (services.operations `planning` / `applying`), on both backends.

`planning()` must stop any operation that would act; `applying(plan)` must check the plan's catalog version
once the first acting operation holds its leases, refuse a stale plan there (journalled as refused) and record
the plan file in every operation's journal args.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from replctl.adapters.catalog import migrate
from replctl.adapters.catalog.repository import Catalog
from replctl.core.model import Location, Role
from replctl.errors import Refused, ReplctlError
from replctl.services import topology
from replctl.services.operations import applying, planning
from replctl.services.plans import AppliedPlan


@pytest.fixture
def catalog(catalog_url: str) -> Iterator[Catalog]:
    migrate.upgrade(catalog_url)
    with Catalog(catalog_url) as opened:
        yield opened


def version(catalog: Catalog) -> int:
    with catalog.transaction(readonly=True) as tx:
        return tx.catalog_version()


def test_while_planning_a_dry_run_runs_and_an_acting_operation_is_stopped_before_it_journals(
    catalog: Catalog,
) -> None:
    with planning():
        dry = topology.add_location(catalog, "A", Role.READ_WRITE, dry_run=True)
        assert dry.dry_run
        with pytest.raises(ReplctlError, match="would act while only planning") as caught:
            topology.add_location(catalog, "A", Role.READ_WRITE)
    assert caught.value.exit_code == 1
    with catalog.transaction() as tx:
        assert tx.locations() == []
        assert tx.operations() == []
    assert version(catalog) == 0


def test_applying_a_current_plan_acts_and_journals_the_plan_file(catalog: Catalog) -> None:
    plan = AppliedPlan("/plans/add-a.json", "ab" * 32, version(catalog))
    with applying(plan):
        out = topology.add_location(catalog, "A", Role.READ_WRITE)
        # The second operation of the same command runs on the version the first one moved.
        topology.add_location(catalog, "B", Role.HUB)
    assert not out.dry_run
    with catalog.transaction() as tx:
        assert [loc.name for loc in tx.locations()] == ["A", "B"]
        ops = tx.operations()
    assert all(op.args["plan_file"] == "/plans/add-a.json" for op in ops)
    assert all(op.args["plan_sha256"] == "ab" * 32 and op.args["plan_catalog_version"] == 0 for op in ops)
    assert version(catalog) == 2


def test_applying_a_plan_made_at_another_version_is_refused_under_the_lease_and_journalled(
    catalog: Catalog,
) -> None:
    with catalog.transaction() as tx:
        tx.put_location(Location("A"))
    plan = AppliedPlan("/plans/p.json", "00" * 32, 0)
    with applying(plan), pytest.raises(Refused) as caught:
        topology.add_location(catalog, "B", Role.READ_WRITE)
    assert caught.value.code == "stale-plan"
    assert caught.value.message == (
        "the catalog changed since the plan was made (version 0 → 1); make the plan again"
    )
    with catalog.transaction() as tx:
        assert [loc.name for loc in tx.locations()] == ["A"]
        (op,) = tx.operations()
    assert (op.outcome.value, op.error and op.error["code"]) == ("refused", "stale-plan")
    assert op.args["plan_file"] == "/plans/p.json"
    assert version(catalog) == 1


def test_a_dry_run_inside_applying_does_not_use_up_the_version_check(catalog: Catalog) -> None:
    plan = AppliedPlan("/plans/p.json", "00" * 32, 0)
    with catalog.transaction() as tx:
        tx.put_location(Location("A"))
    with applying(plan):
        topology.add_location(catalog, "B", Role.READ_WRITE, dry_run=True)
        with pytest.raises(Refused, match="version 0 → 1"):
            topology.add_location(catalog, "B", Role.READ_WRITE)
