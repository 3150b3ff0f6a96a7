"""The topology rules as checks: each returns `Violation`s and never raises (rules.md §4, ROLE1/ROLE2, RFC).

- F1 with RFC1: on U(H) with every declared group contracted to one node, every ever-filtered edge is a
  bridge; an ever-filtered edge inside a group is refused by RFC1.
- RFC2: all current connections that cross one contracted bridge in the same direction carry one filter.
- ROLE1: no current connection leaves a read-only location. ROLE2 (warning): the writes of every read-write
  location reach every other read-write location along current directed connections.

`validate` runs all of them; the planners run the structural ones (F1, RFC1, RFC2) on the state a request
would produce (F2).
"""

from __future__ import annotations

from collections import defaultdict

from replctl.core.model import Role, Violation
from replctl.core.topology import Pair, TopologyState
from replctl.core.topology_graph import ContractedView, Node, UEdge, contract


def structural_violations(state: TopologyState, view: ContractedView | None = None) -> list[Violation]:
    """F1, RFC1 and RFC2 on the whole state, in a stable order."""
    view = view or contract(state)
    bridges = view.bridges()
    return filter_placement_violations(state, view, bridges) + identical_filter_violations(
        state, view, bridges
    )


def filter_placement_violations(
    state: TopologyState, view: ContractedView, bridges: set[UEdge] | None = None
) -> list[Violation]:
    """F1 (with RFC1's contraction): every ever-filtered edge of U(H) is a bridge, none inside a group."""
    if bridges is None:
        bridges = view.bridges()
    violations: list[Violation] = []
    cycles: dict[tuple[Node, Node], list[Node] | None] = {}
    for x, y in _filtered_undirected_edges(state):
        directions = _filtered_directions(state, x, y)
        a, b = view.node_of.get(x), view.node_of.get(y)
        if a is None or b is None:
            continue
        if a == b:
            # RFC1: members of a group are connected among themselves by unfiltered connections only.
            group = view.label(a)
            violations.append(
                Violation(
                    code="RFC1",
                    message=(
                        f"filtered connection {directions} lies inside group {group}; the members of a group "
                        "are connected among themselves by unfiltered connections only (RFC1, H3: a filter "
                        "once set counts for good)"
                    ),
                    hint=None,
                    details={"edge": [x, y], "group": group},
                )
            )
            continue
        if frozenset((a, b)) in bridges:
            continue
        if (a, b) not in cycles:
            cycles[(a, b)] = _cycle(view, a, b)
        nodes = cycles[(a, b)]
        cycle = tuple(view.label(node) for node in nodes) if nodes else (x, y)
        message = (
            f"filtered connection {directions} lies on the cycle {'–'.join(cycle)} of the topology history; "
            "a filter is allowed only on a connection that lies on no cycle (F1; removed connections stay in "
            "the history, H2)"
        )
        groups = _group_legend(view, nodes or [])
        if groups:
            message += f"; {groups}"
        violations.append(
            Violation(
                code="F1",
                message=message,
                hint=_group_hint(state, view, nodes),
                cycle=cycle,
                details={"edge": [x, y], "cycle": list(cycle)},
            )
        )
    return violations


def identical_filter_violations(
    state: TopologyState, view: ContractedView, bridges: set[UEdge] | None = None
) -> list[Violation]:
    """RFC2: connections crossing one contracted bridge in one direction carry the identical filter."""
    if bridges is None:
        bridges = view.bridges()
    crossing: dict[tuple[Node, Node], list[tuple[Pair, str | None]]] = defaultdict(list)
    for pair, expression in state.current.items():
        a, b = view.node_of.get(pair[0]), view.node_of.get(pair[1])
        if a is None or b is None or a == b or frozenset((a, b)) not in bridges:
            continue
        crossing[(a, b)].append((pair, expression))
    violations: list[Violation] = []
    for (a, b), connections in sorted(crossing.items()):
        if len({expression for _, expression in connections}) <= 1:
            continue
        connections.sort()
        listing = "; ".join(
            f"{s}→{d}: {expression if expression is not None else '(no filter)'}"
            for (s, d), expression in connections
        )
        side_a, side_b = _command_name(view, a), _command_name(view, b)
        violations.append(
            Violation(
                code="RFC2",
                message=(
                    f"the connections from {view.label(a)} to {view.label(b)} are redundant and must carry "
                    f"the identical filter (no filter is a filter too), but they differ: {listing} (RFC2)"
                ),
                hint=(
                    f"change them together: replctl topology filter {side_a} {side_b} --set EXPR (or --clear)"
                ),
                details={
                    "from": view.label(a),
                    "to": view.label(b),
                    "filters": {f"{s}→{d}": expression for (s, d), expression in connections},
                },
            )
        )
    return violations


def read_only_violations(state: TopologyState) -> list[Violation]:
    """ROLE1: a read-only location has no outgoing connection."""
    return [
        Violation(
            code="ROLE1",
            message=(
                f"{source} is read-only and must have no outgoing connection, but {source}→{target} exists "
                "(ROLE1)"
            ),
            hint=f"replctl topology remove {source} {target}",
            details={"source": source, "target": target},
        )
        for source, target in sorted(state.current)
        if state.roles.get(source) is Role.READ_ONLY
    ]


def reachability_warnings(state: TopologyState) -> list[Violation]:
    """ROLE2 (warnings): writes of a read-write location that cannot reach another read-write location.

    Uses the strongly connected components (Tarjan, in pure Python: `status` runs this on every call and
    importing networkx would cost more than the search, issue 17) and bit sets, so it stays linear-ish for a
    thousand locations rather than a search per pair.
    """
    writers = sorted(name for name in state.locations if state.roles.get(name) is Role.READ_WRITE)
    if len(writers) < 2:
        return []
    successors: dict[str, set[str]] = {name: set() for name in state.locations}
    for source, target in state.current:
        successors.setdefault(source, set()).add(target)
        successors.setdefault(target, set())
    bit = {writer: 1 << index for index, writer in enumerate(writers)}
    component_of: dict[str, int] = {}
    reach: dict[int, int] = {}
    # Tarjan emits a component only after every component it reaches, so each component's mask can be
    # completed from its successors' masks as it is emitted.
    for index, members in enumerate(_strong_components(successors)):
        mask = 0
        for member in members:
            component_of[member] = index
            mask |= bit.get(member, 0)
        for member in members:
            for successor in successors[member]:
                if successor not in members:
                    mask |= reach[component_of[successor]]
        reach[index] = mask
    everyone = (1 << len(writers)) - 1
    warnings: list[Violation] = []
    for writer in writers:
        mask = reach[component_of[writer]]
        if mask | bit[writer] == everyone:
            continue  # the common case: listing who is unreached would cost a pass over all writers
        unreached = [other for other in writers if other != writer and not mask & bit[other]]
        if not unreached:
            continue
        warnings.append(
            Violation(
                code="ROLE2",
                message=(
                    f"writes of read-write {writer} cannot reach read-write {', '.join(unreached)} along the "
                    "current connections (ROLE2)"
                ),
                hint=f"replctl topology add {writer} {unreached[0]}",
                warning=True,
                details={"location": writer, "unreached": unreached},
            )
        )
    return warnings


def _strong_components(successors: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of a directed graph, each after every component it reaches.

    Iterative Tarjan (no recursion limit on a long chain of locations); nodes are visited in sorted order so
    that the result depends on the graph only.
    """
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[set[str]] = []
    for root in sorted(successors):
        if root in order:
            continue
        order[root] = low[root] = len(order)
        stack.append(root)
        on_stack.add(root)
        frames = [(root, iter(sorted(successors[root])))]
        while frames:
            node, pending = frames[-1]
            child = next(pending, None)
            if child is not None:
                if child not in order:
                    order[child] = low[child] = len(order)
                    stack.append(child)
                    on_stack.add(child)
                    frames.append((child, iter(sorted(successors[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], order[child])
                continue
            frames.pop()
            if frames:
                parent = frames[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == order[node]:
                component: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                components.append(component)
    return components


def admission_projection(state: TopologyState, source: str, target: str) -> frozenset[str]:
    """RFC2: the admission projection P of the connection source→target.

    For a connection into a member of a declared group from outside that group, P is every non-retired
    location on the target's side of the contracted bridge; REP1(3) blocks an event e while vt(e)|P is not
    ≤ the target's CVV. Otherwise (no group, a connection inside the group, or an edge on a cycle, which has
    no side) P is empty and no admission check applies.
    """
    view = contract(state)
    into = view.node_of.get(target)
    if into is None or into[0] != "group" or source not in view.node_of:
        return frozenset()
    out_of = view.node_of[source]
    if out_of == into:
        return frozenset()
    side = view.side(into, away_from=out_of)
    if out_of in side:
        return frozenset()
    return frozenset().union(*(view.members[node] for node in side))


def validate(state: TopologyState) -> tuple[Violation, ...]:
    """`topology validate`: every rule on the whole state; errors first, then ROLE2 warnings."""
    return tuple(structural_violations(state) + read_only_violations(state) + reachability_warnings(state))


def _filtered_undirected_edges(state: TopologyState) -> list[tuple[str, str]]:
    """H4: the undirected edges {x, y} with either direction ever filtered, x→y being a filtered one."""
    seen: set[frozenset[str]] = set()
    edges: list[tuple[str, str]] = []
    for x, y in sorted(state.ever_filtered):
        key = frozenset((x, y))
        if key not in seen:
            seen.add(key)
            edges.append((x, y))
    return edges


def _filtered_directions(state: TopologyState, x: str, y: str) -> str:
    if (y, x) in state.ever_filtered:
        return f"{x}<->{y}"
    return f"{x}→{y}"


def _cycle(view: ContractedView, a: Node, b: Node) -> list[Node] | None:
    """The cycle through the edge a–b: a, b, then the path back to a that avoids the edge."""
    path = view.path_avoiding(a, b)
    if path is None:
        return None
    back = path[::-1]  # b … a
    return [a, *back[:-1]]


def _group_legend(view: ContractedView, nodes: list[Node]) -> str:
    parts = [
        f"{view.label(node)} = group of {', '.join(sorted(view.members[node]))}"
        for node in nodes
        if node[0] == "group"
    ]
    return "; ".join(parts)


def _group_hint(state: TopologyState, view: ContractedView, nodes: list[Node] | None) -> str | None:
    """RFC1's way out: declare the cycle's locations past the filtered edge as one group.

    Offered only when it can help: every node after the first is a plain location and no other ever-filtered
    edge joins two of them (they would sit inside the group, RFC1).
    """
    if not nodes or len(nodes) < 3:
        return None
    rest = nodes[1:]
    if any(node[0] != "location" for node in rest):
        return None
    names = [node[1] for node in rest]
    inside = set(names)
    if any(x in inside and y in inside for x, y in state.ever_filtered):
        return None
    hint = (
        "if " + ", ".join(names) + " are redundant replicas, declare them as a group first "
        f"(RFC1): replctl topology group NAME {' '.join(names)}"
    )
    # The group alone may lead into RFC2: connections between the first node and the group that cross the
    # contracted bridge in one direction with different filters. Filtering through the group's name
    # changes every such connection in one step, so the hint names that command too.
    first = _command_name(view, nodes[0])
    members = {name for name, node in view.node_of.items() if node == nodes[0]}

    def side(location: str) -> str | None:
        return first if location in members else "NAME" if location in inside else None

    filters: dict[tuple[str | None, str | None], set[str | None]] = defaultdict(set)
    for (src, dst), expression in state.current.items():
        if {side(src), side(dst)} == {first, "NAME"}:
            filters[(side(src), side(dst))].add(expression)
    sides = sorted((str(a), str(b)) for (a, b), seen in filters.items() if len(seen) > 1)
    for src, dst in sides:
        hint += f", then: replctl topology filter {src} {dst} --set EXPR (RFC2: every connection alike)"
    return hint


def _command_name(view: ContractedView, node: Node) -> str:
    """The name to give `topology filter` for a node: the location, or the (first) group's name."""
    if node[0] == "group":
        return view.group_names[node][0]
    return node[1]
