"""Every step boundary is a listed failpoint, and every listed failpoint is crashed at by a kill-point suite
(rules.md REP3: "a crash at any point must leave the logs and the catalog consistent").

Cheap (no Spark, no child process): it reads the source for `hit("...")` calls and the suites' case lists, so
a new boundary without a crash case fails the default run, not only the slow pass.
"""

from __future__ import annotations

import ast
from pathlib import Path

import replctl
from faults import (
    test_append_resume,
    test_kill_points,
    test_kill_points_backups,
    test_kill_points_maintenance,
)
from replctl.failpoints import POINTS


def hit_names() -> dict[str, list[str]]:
    """Every failpoint name passed to `hit` in replctl's source, with where."""
    found: dict[str, list[str]] = {}
    root = Path(replctl.__file__).parent
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "hit"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                found.setdefault(str(node.args[0].value), []).append(
                    f"{path.relative_to(root)}:{node.lineno}"
                )
    return found


def crashed_at() -> set[str]:
    """The failpoints (without `@n`) some case of the kill-point suites crashes at."""
    cases = [point for _, point in test_kill_points.CRASH_POINTS]
    cases.append(test_kill_points.DAMAGE_POINT)
    cases += [point for _, point, _ in test_kill_points_maintenance.CASES]
    cases += [point for point, _ in test_append_resume.KILLS]
    cases += [point for _, point, _ in test_kill_points_backups.CASES]
    return {point.partition("@")[0] for point in cases}


def test_every_failpoint_in_the_code_is_listed_with_the_state_it_leaves_behind() -> None:
    used = hit_names()
    assert {name: where for name, where in used.items() if name not in POINTS} == {}
    assert sorted(set(POINTS) - set(used)) == []  # no listed point that nothing hits any more


def test_every_listed_failpoint_is_crashed_at_by_a_kill_point_suite_rep3() -> None:
    assert sorted(set(POINTS) - crashed_at()) == []
