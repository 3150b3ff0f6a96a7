"""The reads return typed outcomes (issue 15): `status`, `location list|show`, `ops list|show` and `log show`
each answer with a dataclass whose one `to_json()` is the command's `--json` document, and a read is always
complete (exit 0). The data plane is the fake: only `log show` reads a log, and the stories of
test_service_stories.py hold the fake to the Spark adapter.
"""

from __future__ import annotations

from typing import Any

import pytest
from fakes.dataplane import FakeDataPlane
from service_appends import append_keys

from replctl.core.journal import Outcome as Ended
from replctl.core.model import Role
from replctl.core.outcomes import Completion, Outcome
from replctl.errors import UnknownName
from replctl.services import journal, locations, logs, replication, status, topology
from replctl.services.ports import Catalog

UNKNOWN_BACKUPS: dict[str, Any] = {"state": "unknown", "backup": None, "shortfall": {}}


def _location(name: str, seq: int, cvv: dict[str, int]) -> dict[str, Any]:
    return {
        "name": name,
        "role": "read-write",
        "state": "active",
        "seq": seq,
        "cvv": cvv,
        "dvv": {},
        "deleted_upto": 0,
        "logical_deleted_upto": 0,
        "clock_pruned": False,
    }


def _event(seq: int, key: str) -> dict[str, Any]:
    """An event A appended, as `log show` stores it: A's own, its origin time its seq."""
    return {
        "seq": seq,
        "origin": "A",
        "origin_time": seq,
        "vt": {"A": seq},
        "type": None,
        "key": key,
        "tags": [],
        "payload": None,
    }


@pytest.fixture
def plane(catalog: Catalog) -> FakeDataPlane:
    """A→B with a1, a2 replicated and a3 not yet: B lags one event behind A."""
    plane = FakeDataPlane()
    for name in "AB":
        topology.add_location(catalog, name, Role.READ_WRITE)
    topology.add_connection(catalog, "A", "B")
    append_keys(catalog, plane, "A", "a1", "a2")
    replication.replicate_one(catalog, plane, "A", "B")
    append_keys(catalog, plane, "A", "a3")
    return plane


def _complete(out: object) -> None:
    assert isinstance(out, Outcome)
    assert out.completion is Completion.COMPLETE


def test_status_answers_with_the_status_document_lag_and_role2_warning_included(
    catalog: Catalog, plane: FakeDataPlane
) -> None:
    out = status.status(catalog)
    _complete(out)
    # No backup store was read: every active location's BK3 answer is `unknown`, never a guess.
    assert out.to_json() == {
        "ok": True,
        "locations": [
            {**_location("A", 3, {"A": 3}), "recoverable": UNKNOWN_BACKUPS},
            {**_location("B", 2, {"A": 2}), "recoverable": UNKNOWN_BACKUPS},
        ],
        "connections": [
            {
                "source": "A",
                "target": "B",
                "state": "active",
                "filter": None,
                "ever_filtered": False,
                "history": "complete",
                "progress": 2,
                "lag": 1,
                "reason": None,
            }
        ],
        "pending_deletions": [],
        "warnings": [
            {
                "code": "ROLE2",
                "message": "writes of read-write B cannot reach read-write A along the current connections "
                "(ROLE2)",
                "hint": "replctl topology add B A",
                "warning": True,
            }
        ],
        "matrix": {
            "origins": ["A"],
            "rows": {"A": {"A": {"max": 3, "deleted": 0}}, "B": {"A": {"max": 2, "deleted": 0}}},
        },
    }


def test_location_list_and_show_answer_with_their_documents(catalog: Catalog, plane: FakeDataPlane) -> None:
    listed = locations.all_locations(catalog)
    _complete(listed)
    assert listed.to_json() == {
        "ok": True,
        "locations": [_location("A", 3, {"A": 3}), _location("B", 2, {"A": 2})],
    }

    shown = locations.location_detail(catalog, "B", lambda: plane.store)
    _complete(shown)
    doc = shown.to_json()
    assert [s["count"] for s in doc.pop("segments")] == [2]  # the one segment the pass wrote
    assert doc == {
        "ok": True,
        **_location("B", 2, {"A": 2}),
        "connections": [{"source": "A", "target": "B", "state": "active", "filter": None, "progress": 2}],
    }


def test_ops_list_and_show_answer_with_the_journal_entries(catalog: Catalog, plane: FakeDataPlane) -> None:
    recent = journal.recent_operations(catalog, 2)
    _complete(recent)
    entries = recent.to_json()["operations"]
    assert [(e["command"], e["args"].get("location"), e["outcome"]) for e in entries] == [
        ("log append", "A", Ended.SUCCEEDED),
        ("replicate", None, Ended.SUCCEEDED),
    ]
    assert all("steps" not in e for e in entries)  # the list leaves the plan and steps to `ops show`

    found = journal.find_operation(catalog, entries[1]["id"][:8])
    _complete(found)
    doc = found.to_json()
    assert doc["ok"] is True
    assert {k: v for k, v in doc["operation"].items() if k not in ("plan", "steps")} == entries[1]
    assert doc["operation"]["steps"]

    with pytest.raises(UnknownName, match="unknown operation 'no-such-id'"):
        journal.find_operation(catalog, "no-such-id")


def test_log_show_answers_with_the_stored_events_after_its_head(
    catalog: Catalog, plane: FakeDataPlane
) -> None:
    page = logs.show_page(catalog, plane, "A", from_seq=2)
    assert page.head() == {
        "ok": True,
        "location": "A",
        "seq": 3,
        "deleted_upto": 0,
        "logical_deleted_upto": 0,
    }
    assert page.to_json() == {
        **page.head(),
        "events": [_event(2, "a2"), _event(3, "a3")],
    }
