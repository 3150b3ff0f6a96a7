"""The recorded topology as the read-only commands see it: its folded state and its violations.

Apart from the topology use cases (services.topology) so that `status` and `topology validate`, which only read,
do not import the journal, the plans and the core's planning modules that changes need (issue 17: light commands).
"""

from __future__ import annotations

from typing import Any

from replctl.core.model import Violation
from replctl.core.topology import TopologyState, fold
from replctl.core.topology_rules import validate as validate_state
from replctl.services.ports import Catalog, CatalogTransaction


def is_rule_id(code: str) -> bool:
    """Rule ids of rules.md are upper case (F1, RFC2, M1); other codes are short lower-case names."""
    return code[:1].isupper()


def violation_json(v: Violation) -> dict[str, Any]:
    """The JSON form of a violation or warning."""
    doc: dict[str, Any] = {"code": v.code, "message": v.message, "hint": v.hint, "warning": v.warning}
    if v.cycle:
        doc["cycle"] = v.render_cycle()
    return doc


def load_state(tx: CatalogTransaction) -> TopologyState:
    """The topology state folded from every recorded change (H1–H5)."""
    return fold(tx.changes())


def validate(catalog: Catalog) -> tuple[Violation, ...]:
    """`topology validate`: every rule on the whole history (errors and ROLE2 warnings)."""
    with catalog.transaction(readonly=True) as tx:
        return tuple(validate_state(load_state(tx)))
