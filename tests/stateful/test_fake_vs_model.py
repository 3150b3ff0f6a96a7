"""The differential state machine of `test_cli_vs_model` over the in-memory data plane: many steps, no JVM.

The commands, their services and the core are the product's own; only what the composition root builds for the
data plane and the log store is the fake of tests/fakes (which the service tier's contract suite checks against
the Spark adapter). So the planners (REP, DEL, DR, ADD, RET, the start rule, the rounds) are driven through far
more steps than Spark allows in CI time. A disagreement here is a bug of the planners or of the fake: the same
runbook on the Spark machine (`test_cli_vs_model`) tells which.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from fakes.backupstore import FakeBackupStore
from fakes.dataplane import FakeDataPlane, FakeStore
from hypothesis import Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from replctl.adapters.logstore import LogStore
from replctl.cli.context import AppContext
from stateful.test_cli_vs_model import COMMON, CliVsModel

# REPLCTL_DIFF_NO_SHRINK=1: report the first disagreement as drawn, without minutes of shrinking (triage).
PHASES = [Phase.explicit, Phase.generate] if os.environ.get("REPLCTL_DIFF_NO_SHRINK") else list(Phase)


class _Planes:
    """The fake data plane and backup store of the example being run (each example starts with fresh ones)."""

    plane: FakeDataPlane = FakeDataPlane()
    backups: FakeBackupStore = FakeBackupStore(plane.store)


class FakeVsModel(CliVsModel):
    """The CLI over a fresh fake data plane, log store and backup store per example."""

    def __init__(self) -> None:
        _Planes.plane = FakeDataPlane(FakeStore())
        _Planes.backups = FakeBackupStore(_Planes.plane.store)
        super().__init__()
        # `init` marks the configured store itself (not through the composition root): the fake takes its mark.
        marker = LogStore(str(self.rc.store)).read_marker()
        assert marker is not None
        _Planes.plane.store.write_marker(marker)


@pytest.fixture
def fake_planes(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The composition root hands out the example's fake log store, data plane and backup store."""

    def store(self: AppContext) -> Any:
        return _Planes.plane.store

    def engine(self: AppContext) -> Any:
        from replctl.services.store_identity import check_store

        check_store(self.catalog(), _Planes.plane.store)
        return _Planes.plane

    monkeypatch.setattr(AppContext, "store", store)
    monkeypatch.setattr(AppContext, "backups", lambda self, root=None: _Planes.backups)
    monkeypatch.setattr(AppContext, "manifests", lambda self: _Planes.backups.manifests())
    monkeypatch.setattr(AppContext, "checked_store", lambda self: engine(self).store)
    monkeypatch.setattr(AppContext, "engine", engine)
    yield


@pytest.mark.timeout(600)
def test_the_planners_decide_every_drawn_operation_as_the_rules_say(fake_planes: None) -> None:
    """Default pass: a fixed set of examples, more and longer than the Spark machine's (derandomised for CI)."""
    run_state_machine_as_test(
        FakeVsModel,
        settings=settings(COMMON, max_examples=12, stateful_step_count=25, derandomize=True, phases=PHASES),
    )


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_the_planners_decide_every_drawn_operation_as_the_rules_say_many_examples(fake_planes: None) -> None:
    """The slow pass: random examples (a longer hunt sets REPLCTL_FAKE_DIFF_EXAMPLES)."""
    run_state_machine_as_test(
        FakeVsModel,
        settings=settings(
            COMMON,
            max_examples=int(os.environ.get("REPLCTL_FAKE_DIFF_EXAMPLES", "40")),
            stateful_step_count=30,
            phases=PHASES,
        ),
    )
