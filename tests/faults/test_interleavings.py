"""Every interleaving of two mutating commands equals some serial order (issue 19).

For each ordered pair (first, second) of the mutating commands below, `first` runs and is paused inside its
critical window (`failpoints.calling`: after its leases, after its segment is written, after a deletion's
rewrite), and `second` runs right there, in the same process, as a second operator would. The state both
leave behind (every log's events, every location's clocks, every connection, every pending deletion) must
equal what one of the serial orders leaves: first then second, or second then first; or one of them alone
when the other one said it did not finish (exit 4, refused by a lease; exit 5, discarded or deferred). No
clock is involved: each interleaving is exactly the one named.
"""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path
from typing import Any

import pytest
from clitool import Replctl

from replctl import failpoints

pytestmark = [pytest.mark.spark, pytest.mark.slow]

# name -> (command line, the failpoint inside its critical window)
COMMANDS: dict[str, tuple[tuple[str, ...], str]] = {
    "replicate": (("replicate", "A", "B"), "replicate.after-write"),
    "filter": (("topology", "filter", "A", "B", "--set", "key <> 'x'"), "operation.after-lease"),
    "remove": (("topology", "remove", "A", "B"), "operation.after-lease"),
    "delete": (("delete", "A", "--upto", "2"), "delete.after-rewrite"),
    "connect": (("topology", "add", "A", "D"), "operation.after-lease"),
    "append": (("log", "append", "A", "--event", '{"key": "p"}'), "append.after-write"),
}
PAIRS = list(itertools.permutations(COMMANDS, 2))
UNFINISHED = (4, 5)


def build(rc: Replctl) -> None:
    """A→B with a1, a2 delivered and x, a4 not yet; D exists, unconnected."""
    rc("init")
    for name in "ABD":
        rc("location", "add", name)
    rc("topology", "add", "A", "B")
    rc.append("A", "a1", "a2")
    rc("replicate")
    rc.append("A", "x", "a4")


def state(rc: Replctl) -> dict[str, Any]:
    """What the two commands leave, without times, texts or ids."""
    status = rc.json("status")
    return {
        "locations": {
            loc["name"]: (
                loc["seq"],
                loc["cvv"],
                loc["dvv"],
                loc["deleted_upto"],
                loc["logical_deleted_upto"],
            )
            for loc in status["locations"]
        },
        "connections": sorted(
            (c["source"], c["target"], c["state"], c["filter"], c["progress"]) for c in status["connections"]
        ),
        "pending": sorted(
            (p["location"], p["requested_upto"], tuple(b["target"] for b in p["blocked_by"]))
            for p in status["pending_deletions"]
        ),
        "logs": {loc: rc.stored(loc) for loc in "ABD"},
    }


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("interleavings-template")
    build(Replctl(root))
    return root


def _world(template: Path, root: Path) -> Replctl:
    shutil.copytree(template, root)
    failpoints.reset()
    return Replctl(root)


# Serial outcomes by the order of the commands run: each is computed once for every pair that needs it.
SERIAL: dict[tuple[str, ...], dict[str, Any]] = {}


def _serial(template: Path, root: Path, names: tuple[str, ...]) -> dict[str, Any]:
    if names not in SERIAL:
        rc = _world(template, root)
        for name in names:
            rc(*COMMANDS[name][0], expect=None)
        SERIAL[names] = state(rc)
    return SERIAL[names]


@pytest.mark.parametrize(("first", "second"), PAIRS, ids=[f"{a}-paused-{b}-inside" for a, b in PAIRS])
def test_an_interleaving_of_two_commands_equals_a_serial_order(
    first: str, second: str, template: Path, tmp_path: Path
) -> None:
    rc = _world(template, tmp_path / "interleaved")
    command, window = COMMANDS[first]
    codes: dict[str, int] = {}

    def run_second() -> None:
        codes[second] = rc(*COMMANDS[second][0], expect=None).code

    with failpoints.calling(window, run_second) as ran:
        codes[first] = rc(*command, expect=None).code
    assert ran == [window], f"{first} never reached {window}"
    assert set(codes.values()) <= {0, *UNFINISHED}, codes
    got = state(rc)

    allowed: dict[str, tuple[str, ...]] = {
        f"{first} then {second}": (first, second),
        f"{second} then {first}": (second, first),
    }
    if codes[second] in UNFINISHED:
        allowed[f"{first} alone"] = (first,)
    if codes[first] in UNFINISHED:
        allowed[f"{second} alone"] = (second,)
    match = next(
        (
            label
            for i, (label, names) in enumerate(allowed.items())
            if _serial(template, tmp_path / f"s{i}", names) == got
        ),
        None,
    )
    if match is None:
        serial = {
            label: _serial(template, tmp_path / f"s{i}", n) for i, (label, n) in enumerate(allowed.items())
        }
        pytest.fail(f"exit codes {codes}; the interleaving left {got}; serial orders: {serial}")
    assert rc.json("log", "verify")["ok"]
