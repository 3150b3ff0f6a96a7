"""Time the pure topology core on 1,000 locations and 100,000 recorded changes (rules.md F1, RFC2, ROLE2).

Run: .venv/bin/python tests/benchmarks/bench_validate_core.py [LOCATIONS] [CHANGES]

The history is a binary tree of bi-directional connections, a third of them filtered, with unfiltered chords
that close cycles away from the filters, then churn (reconnects, filter changes) up to the wanted number of
changes. Prints the time to fold the history, validate it, and plan one refused filter.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

# Runnable from a checkout without installing the package.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from replctl.core.model import Change, ChangeKind, Role
from replctl.core.topology import fold
from replctl.core.topology_plans import plan_filter, validate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from figures import Figure, write_figures

FILTERS = ("key = 'e3'", "array_contains(tags, 'ext')")


def parent(index: int) -> int:
    return (index - 1) // 2


def filtered(index: int) -> bool:
    """Whether the tree edge index–parent(index) carries a filter."""
    return index % 3 == 0


def synthetic_history(locations: int, total: int, seed: int = 7) -> list[Change]:
    """A valid history: a filtered tree with unfiltered chords, then churn up to `total` changes."""
    rng = random.Random(seed)
    names = [f"L{index}" for index in range(locations)]
    changes = [Change(kind=ChangeKind.LOCATION_ADDED, location=name, role=Role.READ_WRITE) for name in names]

    def connect(a: int, b: int, expression: str | None) -> None:
        for s, d in ((a, b), (b, a)):
            changes.append(
                Change(kind=ChangeKind.CONNECTION_ADDED, source=names[s], target=names[d], filter=expression)
            )

    for index in range(1, locations):
        connect(index, parent(index), FILTERS[0] if filtered(index) else None)
    # Chords index–grandparent close triangles whose tree edges are both unfiltered (no filter on a cycle).
    chords = [
        index
        for index in range(3, locations)
        if not filtered(index) and not filtered(parent(index)) and parent(index) > 0
    ]
    for index in chords:
        connect(index, parent(parent(index)), None)
    tree = list(range(1, locations))
    while len(changes) < total:
        index = rng.choice(tree)
        a, b = names[index], names[parent(index)]
        if filtered(index):
            changes.append(
                Change(kind=ChangeKind.FILTER_SET, source=a, target=b, filter=FILTERS[len(changes) % 2])
            )
            changes.append(Change(kind=ChangeKind.FILTER_SET, source=a, target=b, filter=FILTERS[0]))
        else:
            changes.append(Change(kind=ChangeKind.CONNECTION_REMOVED, source=a, target=b))
            changes.append(Change(kind=ChangeKind.CONNECTION_ADDED, source=a, target=b))
    return [Change(**{**change.__dict__, "id": number}) for number, change in enumerate(changes, start=1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("locations", type=int, nargs="?", default=1000)
    parser.add_argument("changes", type=int, nargs="?", default=100_000)
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args()
    locations, total = args.locations, args.changes
    history = synthetic_history(locations, total)
    before_import = time.perf_counter()
    import networkx  # noqa: F401  (the core imports it lazily; its import is timed on its own)

    start = time.perf_counter()
    state = fold(history)
    folded = time.perf_counter()
    violations = validate(state)
    validated = time.perf_counter()
    # A filter on a chord's triangle is refused by F1: the planner's whole path (apply, bridges, BFS).
    decision = plan_filter(state, "L4", "L1", FILTERS[1])
    planned = time.perf_counter()
    errors = [violation for violation in violations if not violation.warning]
    print(f"{locations} locations, {len(history)} changes, {len(state.edges)} directed edges in H")
    print(f"import nx {start - before_import:8.3f} s  (once per process, not counted below)")
    print(f"fold      {folded - start:8.3f} s")
    warnings = len(violations) - len(errors)
    print(f"validate  {validated - folded:8.3f} s  ({len(errors)} errors, {warnings} warnings)")
    print(f"plan      {planned - validated:8.3f} s  (refused: {[v.code for v in decision.violations]})")
    print(f"total     {planned - start:8.3f} s")
    scale = f"{locations:,} locations, {len(history):,} changes"
    core = validated - start
    figures = [
        Figure(f"fold, {scale}", folded - start, "s"),
        Figure(f"validate, {scale}", validated - folded, "s"),
        Figure(f"fold + validate, {scale}", core, "s", "< 1", core < 1),
        Figure(f"plan one refused filter, {scale}", planned - validated, "s"),
    ]
    write_figures(args.json, "validate-core", vars(args), figures)


if __name__ == "__main__":
    main()
