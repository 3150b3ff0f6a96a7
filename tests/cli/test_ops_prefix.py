"""Issue 15 item 4: `ops show ID-PREFIX` matches the prefix in SQL; a prefix that fits several operations is
refused (exit 2) naming them, instead of being reported as unknown or silently picking one."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from clitool import Replctl


@pytest.fixture
def rc(tmp_path: Path) -> Replctl:
    """`replctl` bound to a new SQLite catalog and store, after `replctl init`."""
    tool = Replctl(tmp_path)
    tool("init")
    return tool


def journalled_ids(rc: Replctl, count: int) -> list[str]:
    """`count` operations in the journal (one `location add` each), their ids oldest first."""
    for i in range(count):
        rc("location", "add", f"L{i}")
    return [op["id"] for op in reversed(rc.json("ops", "list", "--limit", str(count))["operations"])]


def test_an_ambiguous_prefix_exits_2_naming_the_candidates_and_a_unique_one_shows_its_operation(
    rc: Replctl,
) -> None:
    # 17 ids over 16 hex digits: two of them start with the same one (pigeonhole), so the ambiguity is built,
    # not hoped for.
    ids = journalled_ids(rc, 17)
    by_first: dict[str, list[str]] = defaultdict(list)
    for op_id in ids:
        by_first[op_id[0]].append(op_id)
    shared = next(sorted(group) for group in by_first.values() if len(group) >= 2)
    prefix = shared[0][0]

    refused = rc("ops", "show", prefix, expect=2)
    listed = ", ".join(sorted(shared)[:5]) + (", ..." if len(shared) > 5 else "")
    assert refused.stderr.splitlines()[:2] == [
        f"error: operation id prefix '{prefix}' is ambiguous: {listed}",
        "hint: give more of the id (replctl ops list shows them)",
    ]
    error = rc.json("ops", "show", prefix, expect=2)["error"]
    assert (error["code"], error["message"]) == (
        "ambiguous-operation",
        f"operation id prefix '{prefix}' is ambiguous: {listed}",
    )

    # A prefix only one id has: that operation, with its steps, as `ops show` of the full id shows it.
    first = ids[0]
    unique = next(first[:n] for n in range(1, len(first)) if sum(i.startswith(first[:n]) for i in ids) == 1)
    assert rc.json("ops", "show", unique)["operation"] == rc.json("ops", "show", first)["operation"]
    assert rc.json("ops", "show", unique)["operation"]["args"]["name"] == "L0"


def test_a_prefix_is_matched_literally_not_as_a_like_pattern(rc: Replctl) -> None:
    (only,) = journalled_ids(rc, 1)
    # `_` and `%` are LIKE wildcards: unescaped, `_` would match the first character of every id.
    for typed in ("_", "%", only[0] + "%", "_" + only[1:8]):
        refused = rc("ops", "show", typed, expect=2)
        assert refused.stderr.splitlines()[0] == f"error: unknown operation '{typed}'"
        assert rc.json("ops", "show", typed, expect=2)["error"]["code"] == "unknown-operation"
    assert rc.json("ops", "show", only[:6])["operation"]["id"] == only
