"""The undirected, group-contracted view of the history projection (rules.md H4, RFC1) and searches on it.

U(H) joins X→Y and Y→X into one undirected edge, filtered iff either direction was ever filtered (H4). Every
declared group is contracted to one node (RFC1); groups that share a member contract together. Parallel edges
between the same two nodes collapse, and edges inside a group vanish. F1 then asks for every filtered edge to
be a bridge of this simple graph.

The searches are plain Python (BFS, Tarjan's bridges): `status` and `topology validate` run them on every call,
and networkx costs about 0.2 s to import, more than any search here (issue 17). The tests check them against
networkx.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from replctl.core.topology import Pair, TopologyState

# A node of the contracted graph: ("location", name) or ("group", label). Tagged so that a group label can
# never be mistaken for a location id.
Node = tuple[str, str]
UEdge = frozenset[Node]


@dataclass(frozen=True)
class ContractedView:
    """U(H) with every declared group contracted to one node (H4, RFC1)."""

    node_of: dict[str, Node]  # every location of H → its node
    members: dict[Node, frozenset[str]]  # node → the non-retired locations it stands for
    adjacency: dict[Node, set[Node]]  # the contracted simple graph
    group_names: dict[Node, tuple[str, ...]]  # group node → the declared groups merged into it

    def label(self, node: Node) -> str:
        """How an operator reads the node: a location id, or the group name(s) joined by '+'."""
        return node[1]

    def edge(self, pair: Pair) -> UEdge | None:
        """The contracted undirected edge of a directed connection; None when it lies inside one node."""
        a, b = self.node_of.get(pair[0]), self.node_of.get(pair[1])
        if a is None or b is None or a == b:
            return None
        return frozenset((a, b))

    def bridges(self) -> set[UEdge]:
        """The bridges of the contracted simple graph (linear time, iterative Tarjan lowlinks).

        Pure Python rather than networkx: `status` and `topology validate` run this on every call, and
        importing networkx alone costs more than the whole search on a thousand locations (issue 17).
        An edge parent–child of the DFS tree is a bridge iff no back edge from child's subtree reaches
        parent or above (low[child] > order[parent]); the graph is simple, so skipping the one tree edge
        back to the parent is exact.
        """
        order: dict[Node, int] = {}
        low: dict[Node, int] = {}
        found: set[UEdge] = set()
        for root in self.adjacency:
            if root in order:
                continue
            order[root] = low[root] = len(order)
            # Each frame: (node, its DFS parent, the neighbours still to visit).
            stack = [(root, root, iter(self.adjacency[root]))]
            while stack:
                node, parent, pending = stack[-1]
                child = next(pending, None)
                if child is None:
                    stack.pop()
                    if node != parent:
                        low[parent] = min(low[parent], low[node])
                        if low[node] > order[parent]:
                            found.add(frozenset((parent, node)))
                elif child not in order:
                    order[child] = low[child] = len(order)
                    stack.append((child, node, iter(self.adjacency[child])))
                elif child != parent:
                    low[node] = min(low[node], order[child])
        return found

    def path_avoiding(self, start: Node, goal: Node) -> list[Node] | None:
        """A shortest path start … goal that does not use the direct edge start–goal (BFS), or None.

        With the edge start–goal it closes the cycle an F1 refusal names. Neighbours are visited in sorted
        order so that the cycle named depends on the history's content only, not on set order (H5).
        """
        previous: dict[Node, Node | None] = {start: None}
        queue = deque([start])
        while queue:
            node = queue.popleft()
            for neighbour in sorted(self.adjacency.get(node, ())):
                if neighbour in previous or (node == start and neighbour == goal):
                    continue
                previous[neighbour] = node
                if neighbour == goal:
                    path = [goal]
                    while (back := previous[path[-1]]) is not None:
                        path.append(back)
                    return path[::-1]
                queue.append(neighbour)
        return None

    def side(self, node: Node, away_from: Node) -> set[Node]:
        """The nodes reachable from `node` without the edge node–away_from (its side of that edge)."""
        seen = {node}
        queue = deque([node])
        while queue:
            current = queue.popleft()
            for neighbour in self.adjacency.get(current, ()):
                if neighbour in seen or (current == node and neighbour == away_from):
                    continue
                seen.add(neighbour)
                queue.append(neighbour)
        return seen


def contract(state: TopologyState) -> ContractedView:
    """Build the contracted view of `state` (groups that share a member merge into one node)."""
    # The vertices of H (H2); endpoints of edges count too, so a history that never recorded a location's
    # addition still yields its edges.
    locations = set(state.locations).union(*state.edges)
    parent: dict[str, str] = {}

    def find(name: str) -> str:
        root = name
        while parent.get(root, root) != root:
            root = parent[root]
        while parent.get(name, name) != root:
            parent[name], name = root, parent[name]
        return root

    group_of_root: dict[str, set[str]] = {}
    declared = sorted(state.groups.items())
    grouped: set[str] = set()
    for name, declared_members in declared:
        alive = sorted(member for member in declared_members if member in locations)
        if not alive:
            continue
        for member in alive[1:]:
            root_a, root_b = find(alive[0]), find(member)
            if root_a != root_b:
                parent[root_b] = root_a
        grouped.update(alive)
        group_of_root.setdefault(alive[0], set()).add(name)

    # Names follow the merged components (a group's first member may no longer be the root).
    names_by_root: dict[str, set[str]] = {}
    for first, group_names_here in group_of_root.items():
        names_by_root.setdefault(find(first), set()).update(group_names_here)

    node_of: dict[str, Node] = {}
    members: dict[Node, set[str]] = {}
    group_names: dict[Node, tuple[str, ...]] = {}
    for location in locations:
        if location in grouped:
            root = find(location)
            names = tuple(sorted(names_by_root.get(root, set()))) or (root,)
            node: Node = ("group", "+".join(names))
            group_names[node] = names
        else:
            node = ("location", location)
        node_of[location] = node
        members.setdefault(node, set()).add(location)

    adjacency: dict[Node, set[Node]] = {node: set() for node in members}
    for source, target in state.edges:
        a, b = node_of.get(source), node_of.get(target)
        if a is None or b is None or a == b:
            continue
        adjacency[a].add(b)
        adjacency[b].add(a)
    return ContractedView(
        node_of=node_of,
        members={node: frozenset(names) for node, names in members.items()},
        adjacency=adjacency,
        group_names=group_names,
    )
