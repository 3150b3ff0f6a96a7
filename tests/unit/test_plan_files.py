"""Plan files (services.plans): the round trip, digests, and where two plans differ."""

from __future__ import annotations

from pathlib import Path

import pytest

from replctl.errors import InvalidInput
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
