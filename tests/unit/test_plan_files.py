"""Plan files (services.plans): the round trip, digests, and where two plans differ."""

from __future__ import annotations

from pathlib import Path

import pytest

from replctl.errors import InvalidInput, Refused
from replctl.services import plans


def test_a_written_plan_reads_back_equal(tmp_path: Path) -> None:
    plan = plans.new_plan(
        ["delete", "A", "--upto", "3"],
        catalog_url="sqlite:////tmp/c.db",
        catalog_version=7,
        plan={"ok": True, "dry_run": True, "dvv": {"A": 3}},
        inputs=[plans.InputDigest("--file", "/tmp/e.jsonl", "9f86d0", 52)],
    )
    path = tmp_path / "p.json"
    plans.write_plan(path, plan)
    read = plans.read_plan(path)
    assert read.plan == plan
    assert read.plan.command_line == "replctl delete A --upto 3"
    assert [p.name for p in tmp_path.iterdir()] == ["p.json"]


def test_a_folder_digest_covers_names_and_contents(tmp_path: Path) -> None:
    folder = tmp_path / "events.parquet"
    folder.mkdir()
    (folder / "part-0.parquet").write_bytes(b"a")
    first = plans.input_digest("--file", folder).sha256
    (folder / "part-0.parquet").write_bytes(b"b")
    second = plans.input_digest("--file", folder).sha256
    (folder / "part-0.parquet").rename(folder / "part-1.parquet")
    assert len({first, second, plans.input_digest("--file", folder).sha256}) == 3
    missing = plans.input_digest("--file", tmp_path / "missing")
    assert (missing.sha256, missing.bytes) == (None, None)


def test_an_input_is_recorded_by_its_absolute_path_and_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("e.jsonl").write_text('{"key": "e1"}\n')
    found = plans.input_digest("--file", Path("e.jsonl"))
    assert (found.path, found.bytes) == (str(tmp_path / "e.jsonl"), 14)
    assert not found.made_before_sizes


@pytest.mark.parametrize(
    ("entry", "older"),
    [
        (plans.InputDigest("--file", "e.jsonl", "9f86d0", 14), True),  # relative: to which folder?
        (plans.InputDigest("--file", "/x/e.jsonl", "9f86d0", None), True),  # no size: before this release
        (plans.InputDigest("--file", "/x/e.jsonl", "9f86d0", 14), False),
        (plans.InputDigest("--file", "/x/e.jsonl", None, None), False),  # nothing was there
    ],
)
def test_inputs_an_older_replctl_recorded_are_told_apart(entry: plans.InputDigest, older: bool) -> None:
    assert entry.made_before_sizes is older


@pytest.mark.parametrize(
    ("before", "after", "where"),
    [
        ({"a": 1}, {"a": 1}, None),
        ({"a": 1}, {"a": 2}, "plan.a"),
        ({"a": 1}, {"a": 1, "b": 2}, "plan.b"),
        ({"a": [1, 2]}, {"a": [1]}, "plan.a[1]"),
        ({"a": [{"x": 1}]}, {"a": [{"x": 2}]}, "plan.a[0].x"),
        ({"a": 1}, {"a": True}, "plan.a"),
        ({"a": None}, {"a": {}}, "plan.a"),
    ],
)
def test_the_first_difference_is_named_by_its_path(before: object, after: object, where: str | None) -> None:
    assert plans.first_difference(before, after) == where


def test_a_plan_with_a_negative_version_is_no_plan(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text(
        '{"format": "replctl-plan/1", "command": ["status"], "catalog": {"url": "x", "version": -1},'
        ' "plan": {}, "inputs": []}'
    )
    with pytest.raises(InvalidInput, match='"version" ≥ 0'):
        plans.read_plan(path)


class _NoParquet:
    """`EventFiles` for a read of a `.jsonl` file, which asks it nothing."""

    def check_parquet_events(self, path: Path, max_payload_bytes: int) -> None:
        raise AssertionError(f"a .jsonl read asked about {path}")


def _applied_from(path: Path) -> plans.AppliedPlan:
    return plans.AppliedPlan(
        "/plans/p.json", "0" * 64, 7, inputs=(plans.input_digest("--file", path),), remake="make it again"
    )


def test_an_applied_plans_input_replaced_after_its_check_is_refused_on_the_bytes_the_command_read(
    tmp_path: Path,
) -> None:
    # `apply` checks the input files right before the command, which then reads the file again: one replaced
    # in between was appended unchecked. The bytes parsed are compared with the plan's.
    from replctl.services import logs
    from replctl.services.operations import applying

    events = tmp_path / "events.jsonl"
    events.write_text('{"key": "e1"}\n')
    applied = _applied_from(events)
    events.write_text('{"key": "other"}\n')
    with applying(applied), pytest.raises(Refused) as refused:
        logs.read_source([], events, None, 0, event_files=_NoParquet())
    assert refused.value.code == plans.STALE_PLAN
    assert refused.value.message == (
        f"the input {events} (--file) changed since the plan was made; nothing was appended; make the plan again"
    )
    assert refused.value.hint == "make it again"


def test_an_applied_plans_unchanged_input_and_a_command_outside_apply_read_as_before(tmp_path: Path) -> None:
    from replctl.services import logs
    from replctl.services.operations import applying

    events = tmp_path / "events.jsonl"
    events.write_text('{"key": "e1"}\n')
    with applying(_applied_from(events)):
        read = logs.read_source([], events, None, 0, event_files=_NoParquet())
    assert [e.key for e in read.events] == ["e1"]
    events.write_text('{"key": "e2"}\n')
    assert [e.key for e in logs.read_source([], events, None, 0, event_files=_NoParquet()).events] == ["e2"]
