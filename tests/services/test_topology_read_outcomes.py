"""`topology show|history|validate` answer with typed outcomes (issue 15): each `to_json()` is the command's whole
`--json` document, and `validate`'s completion gives its exit code: violated (3) when a rule is broken, complete
(0) with only ROLE2 warnings. The catalog is the real SQLite one; a broken history is recorded by hand, since
every command refuses to record one.
"""

from __future__ import annotations

from replctl.core.model import Change, ChangeKind, Role
from replctl.core.outcomes import Completion
from replctl.services import topology, topology_state
from replctl.services.ports import Catalog


def _a_to_b(catalog: Catalog) -> None:
    topology.add_location(catalog, "A", Role.READ_WRITE)
    topology.add_location(catalog, "R", Role.READ_ONLY)
    topology.add_connection(catalog, "A", "R", reason="first link")


def test_validate_with_only_warnings_is_complete_and_ok(catalog: Catalog) -> None:
    topology.add_location(catalog, "A", Role.READ_WRITE)
    topology.add_location(catalog, "B", Role.READ_WRITE)
    topology.add_connection(catalog, "A", "B")
    found = topology_state.validate(catalog)
    assert found.completion is Completion.COMPLETE
    assert found.to_json() == {
        "ok": True,
        "violations": [],
        "warnings": [
            {
                "code": "ROLE2",
                "message": "writes of read-write B cannot reach read-write A along the current connections (ROLE2)",
                "hint": "replctl topology add B A",
                "warning": True,
            }
        ],
    }


def test_validate_of_a_broken_history_is_violated_and_names_the_first_rule_as_its_error(
    catalog: Catalog,
) -> None:
    _a_to_b(catalog)
    with catalog.transaction() as tx:
        # R is read-only (ROLE1): no command records this, an edit of the catalog can.
        tx.record_change(
            Change(ChangeKind.CONNECTION_ADDED, source="R", target="A"),
            actor="x",
            reason=None,
            operation_id=None,
        )
    found = topology_state.validate(catalog)
    assert found.completion is Completion.VIOLATED
    role1 = {
        "code": "ROLE1",
        "message": "R is read-only and must have no outgoing connection, but R→A exists (ROLE1)",
        "hint": "replctl topology remove R A",
        "warning": False,
    }
    assert found.to_json() == {
        "ok": False,
        "violations": [role1],
        "warnings": [],
        "error": {"code": "ROLE1", "message": f"refused [ROLE1]: {role1['message']}", "hint": role1["hint"]},
    }


def test_show_and_history_are_complete_documents_of_the_recorded_topology(catalog: Catalog) -> None:
    _a_to_b(catalog)
    view = topology.show(catalog)
    assert view.completion is Completion.COMPLETE
    doc = view.to_json()
    assert list(doc) == ["ok", "locations", "connections", "history_edges", "groups"]
    assert (doc["ok"], [loc["name"] for loc in doc["locations"]], doc["groups"]) == (True, ["A", "R"], {})
    assert [(c["source"], c["target"], c["state"]) for c in doc["connections"]] == [("A", "R", "active")]
    assert doc["history_edges"] == [{"source": "A", "target": "R", "ever_filtered": False}]
    changes = topology.history(catalog, "R").to_json()["changes"]
    assert [(c["id"], c["kind"], c.get("reason")) for c in changes] == [
        (2, "location-added", None),
        (3, "connection-added", "first link"),
    ]
