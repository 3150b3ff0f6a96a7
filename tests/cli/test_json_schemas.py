"""Issue 18: every `--json` document of cli.md has a JSON Schema in docs/schemas/, and the real documents of one
small story validate against them, so a shape cannot drift without the schema (and the CHANGELOG) saying so.

The story runs once per module (it starts Spark jobs); each test validates the documents of one command.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clitool import Replctl

pytestmark = pytest.mark.spark

SCHEMAS = Path(__file__).resolve().parents[2] / "docs" / "schemas"


def _story(rc: Replctl, root: Path) -> dict[str, list[dict[str, Any]]]:
    """A, B, C; A↔B and a filtered A→C; a replication, a deletion left pending, a backup, a lost suffix
    recovered, the reading commands, dry runs, a plan, and refusals: each --json document by schema name."""
    docs: dict[str, list[dict[str, Any]]] = {}

    def keep(name: str, *args: str, expect: int = 0) -> dict[str, Any]:
        doc = rc.json(*args, expect=expect)
        docs.setdefault(name, []).append(doc)
        return doc

    keep("init", "init")
    for name in ("A", "B", "C"):
        keep("topology-change", "location", "add", name)
    keep("topology-change", "topology", "add", "A", "B", "--both", "--dry-run")
    keep("topology-change", "topology", "add", "A", "B", "--both")
    keep("topology-change", "topology", "add", "A", "C", "--filter", "key = 'a1'")
    keep("log-append", "log", "append", "A", "--event", '{"key": "a1"}', "--event", '{"key": "a2"}')
    keep("log-append", "log", "append", "B", "--event", '{"key": "b1", "tags": ["x"], "payload": {"n": 1}}')
    keep("replicate", "replicate", "--dry-run")
    keep("replicate", "replicate")
    keep("replicate", "replicate", "A", "B")
    keep("log-append", "log", "append", "A", "--event", '{"key": "a3"}')
    keep("delete", "delete", "A", "--upto", "1", "--dry-run")
    # a3 (seq 4 of A) has not reached B nor C: the deletion up to 4 stays pending, blocked by both (DEL2, exit 5).
    keep("delete", "delete", "A", "--upto", "4", "--yes", expect=5)
    keep("delete", "delete", "B", "--upto", "1", "--logical", "--yes")
    keep("backup-list", "backup", "create", "A", "B")
    backups = keep("backup-list", "backup", "list")["backups"]
    keep("backup-show", "backup", "show", backups[0]["id"])
    keep("backup-verify", "backup", "verify")
    keep("log-show", "log", "show", "A")
    keep("log-show", "log", "show", "B", "--from", "2", "--limit", "1")
    keep("status", "status")
    keep("location-list", "location", "list")
    keep("location-show", "location", "show", "A")
    keep("location-show", "location", "show", "C")
    keep("topology-show", "topology", "show")
    keep("topology-history", "topology", "history")
    keep("topology-validate", "topology", "validate")
    # DEL4: the run brings a3 to B and C, then retries A's pending deletion (the dry run says it would).
    keep("replicate", "replicate", "--dry-run")
    keep("replicate", "replicate")
    rc("drill", "disaster", "C", "--from", "1", "--yes")
    keep("status", "status")  # C damaged (DR0)
    keep("location-list", "location", "list")
    keep("recover", "recover", "location", "C", "--dry-run")
    # DR4: A and B deleted events C lost; the recovery stays incomplete (exit 5) until the loss is accepted.
    keep("recover", "recover", "location", "C", "--yes", expect=5)
    keep("recover", "recover", "location", "C", "--accept-loss", "--yes")
    keep("ops-list", "ops", "list")
    operations = docs["ops-list"][0]["operations"]
    for op in (operations[0], operations[-1]):
        keep("ops-show", "ops", "show", op["id"])
    keep("config-show", "config", "show")
    keep("version", "version")
    # F1: a filtered A→C would lie on the cycle A–C–B (a refusal, exit 3, with its violations).
    keep("error", "topology", "add", "C", "B", expect=3)
    plan = str(root / "plan.json")
    keep("plan-out", "log", "append", "B", "--event", '{"key": "b2"}', "--plan-out", plan)
    docs["plan-file"] = [json.loads((root / "plan.json").read_text())]
    keep("error", "location", "show", "Zz", expect=2)
    keep("error", "topology", "add", "A", "Zz", expect=2)
    keep("topology-change", "location", "add", "A")  # exists already: says so
    keep("error", "replicate", "--no-such-option", expect=2)
    return docs


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, list[dict[str, Any]]]]:
    """The story's documents, by schema name; `REPLCTL_DUMP_DOCUMENTS=FILE` also writes them to FILE."""
    root = tmp_path_factory.mktemp("schemas")
    docs = _story(Replctl(root), root)
    dump = os.environ.get("REPLCTL_DUMP_DOCUMENTS")
    if dump:
        Path(dump).write_text(json.dumps(docs, indent=1))
    yield docs


def schema(name: str) -> dict[str, Any]:
    """docs/schemas/NAME.schema.json, checked to be a valid Draft 2020-12 schema itself."""
    from jsonschema import Draft202012Validator

    found: dict[str, Any] = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    Draft202012Validator.check_schema(found)
    return found


def problems(name: str, doc: dict[str, Any]) -> list[str]:
    """Every way `doc` departs from schema `name` (empty when it conforms), with the path of each."""
    from jsonschema import Draft202012Validator, FormatChecker

    validator = Draft202012Validator(schema(name), format_checker=FormatChecker())
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc)]


NAMES = sorted(
    [
        "init",
        "topology-change",
        "log-append",
        "replicate",
        "delete",
        "backup-list",
        "backup-show",
        "backup-verify",
        "log-show",
        "status",
        "location-list",
        "location-show",
        "topology-show",
        "topology-history",
        "topology-validate",
        "recover",
        "ops-list",
        "ops-show",
        "config-show",
        "version",
        "plan-out",
        "plan-file",
        "error",
    ]
)


@pytest.mark.parametrize("name", NAMES)
def test_each_real_document_conforms_to_its_schema(
    documents: dict[str, list[dict[str, Any]]], name: str
) -> None:
    assert documents[name], name
    for doc in documents[name]:
        assert problems(name, doc) == [], json.dumps(doc, indent=1)


def test_every_schema_in_docs_is_checked_by_a_story_document() -> None:
    assert sorted(p.name.removesuffix(".schema.json") for p in SCHEMAS.glob("*.schema.json")) == NAMES


def test_the_schemas_refuse_a_drifted_shape(documents: dict[str, list[dict[str, Any]]]) -> None:
    status = json.loads(json.dumps(documents["status"][0]))
    assert problems("status", status) == []
    status["connections"][0]["lag_seconds"] = 3
    status["pending_deletions"][0]["blocked_by"] = ["B"]
    status["locations"][0]["state"] = "sleeping"
    del status["locations"][1]["cvv"]
    assert problems("status", status) == [
        "locations/0/state: 'sleeping' is not one of ['active', 'retired', 'recovering', 'damaged']",
        "locations/1: 'cvv' is a required property",
        "connections/0: Additional properties are not allowed ('lag_seconds' was unexpected)",
        "pending_deletions/0/blocked_by/0: 'B' is not of type 'object'",
    ]
    ops = json.loads(json.dumps(documents["ops-list"][0]))
    ops["operations"][0]["started_at"] = "2026-11-23 08:42:14.949806+00:00"
    assert problems("ops-list", ops) == [
        "operations/0/started_at: '2026-11-23 08:42:14.949806+00:00' does not match "
        "'^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\\\.[0-9]{6}Z$'"
    ]
