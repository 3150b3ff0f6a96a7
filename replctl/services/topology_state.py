"""The recorded topology as the read-only commands see it: its folded state and its violations.

Apart from the topology use cases (services.topology) so that `status` and `topology validate`, which only read,
do not import the journal, the plans and the core's planning modules that changes need (issue 17: light commands).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from replctl.core.model import Violation
from replctl.core.outcomes import Completion
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


@dataclass(frozen=True)
class TopologyValidation:
    """`topology validate`: what every rule says of the whole history, violations and (ROLE2) warnings in the
    rules' order; violated (exit 3) when a rule is broken, complete when there are only warnings."""

    found: tuple[Violation, ...]

    @property
    def errors(self) -> tuple[Violation, ...]:
        """The broken rules."""
        return tuple(v for v in self.found if not v.warning)

    @property
    def completion(self) -> Completion:
        """Violated when any rule is broken."""
        return Completion.VIOLATED if self.errors else Completion.COMPLETE

    def to_json(self) -> dict[str, Any]:
        """`topology validate --json`: warnings apart from violations, under the key `status --json` uses
        (issue 18); on a violation `ok` is false and `error` names the first one, as a refusal would."""
        errors = self.errors
        doc: dict[str, Any] = {
            "ok": not errors,
            "violations": [violation_json(v) for v in errors],
            "warnings": [violation_json(v) for v in self.found if v.warning],
        }
        if errors:
            doc["error"] = {
                "code": errors[0].code,
                "message": f"refused [{errors[0].code}]: {errors[0].message}",
                "hint": errors[0].hint,
            }
        return doc


def validate(catalog: Catalog) -> TopologyValidation:
    """`topology validate`: every rule on the whole history (errors and ROLE2 warnings)."""
    with catalog.transaction(readonly=True) as tx:
        return TopologyValidation(tuple(validate_state(load_state(tx))))
