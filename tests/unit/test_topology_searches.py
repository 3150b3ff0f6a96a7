"""The pure-Python graph searches of the core agree with networkx on random graphs (issue 17).

`status` and `topology validate` must not import networkx (it costs more than the searches), so the bridges of
U(H) (F1, RFC2) and the strongly connected components behind ROLE2 are plain Python; networkx stays as the
oracle here.
"""

from __future__ import annotations

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from replctl.core.model import Change, ChangeKind, Role
from replctl.core.topology import fold
from replctl.core.topology_graph import ContractedView, Node
from replctl.core.topology_rules import reachability_warnings

NAMES = [f"L{index}" for index in range(9)]
pairs = st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from(NAMES)), max_size=25)


@settings(max_examples=300, deadline=None)
@given(pairs)
def test_bridges_are_the_bridges_networkx_finds(edges: list[tuple[str, str]]) -> None:
    adjacency: dict[Node, set[Node]] = {("location", name): set() for name in NAMES}
    for a, b in edges:
        if a != b:
            adjacency[("location", a)].add(("location", b))
            adjacency[("location", b)].add(("location", a))
    view = ContractedView(node_of={}, members={}, adjacency=adjacency, group_names={})
    graph = nx.Graph()
    graph.add_nodes_from(adjacency)
    graph.add_edges_from((a, b) for a, neighbours in adjacency.items() for b in neighbours)
    assert view.bridges() == {frozenset(edge) for edge in nx.bridges(graph)}


@settings(max_examples=300, deadline=None)
@given(pairs, st.sets(st.sampled_from(NAMES)))
def test_role2_warns_exactly_the_writers_networkx_finds_unreaching(
    edges: list[tuple[str, str]], readers: set[str]
) -> None:
    changes = [
        Change(
            kind=ChangeKind.LOCATION_ADDED,
            location=name,
            role=Role.READ_ONLY if name in readers else Role.READ_WRITE,
        )
        for name in NAMES
    ]
    changes += [
        Change(kind=ChangeKind.CONNECTION_ADDED, source=a, target=b)
        for a, b in dict.fromkeys(edges)
        if a != b
    ]
    state = fold(changes)
    graph = nx.DiGraph()
    graph.add_nodes_from(NAMES)
    graph.add_edges_from(state.current)
    writers = sorted(set(NAMES) - readers)
    expected = {
        writer: [other for other in writers if other != writer and not nx.has_path(graph, writer, other)]
        for writer in writers
    }
    warned = {
        warning.details["location"]: warning.details["unreached"] for warning in reachability_warnings(state)
    }
    assert warned == {writer: unreached for writer, unreached in expected.items() if unreached}
    assert all(warning.code == "ROLE2" and warning.warning for warning in reachability_warnings(state))
