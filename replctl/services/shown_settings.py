"""`replctl config show`: every resolved setting, where it came from, and which Spark a command would use.

Passwords, tokens and credential settings are shown as *** (a shared screen, a pasted ticket): every value that
may hold one is masked here, before any view of it exists.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from replctl.config import Settings
from replctl.core.outcomes import AllOrNothing
from replctl.errors import EnvironmentFailure
from replctl.masking import mask_conf, mask_url
from replctl.services.ports import SparkChoice


@dataclass(frozen=True)
class ShownSetting:
    """One setting's shown (masked) value and where it came from (flag, env, config, default)."""

    name: str
    value: Any
    source: str


@dataclass(frozen=True)
class SettingsShown(AllOrNothing):
    """`config show`: the settings in the order shown, `spark` last."""

    settings: tuple[ShownSetting, ...]

    def to_json(self) -> dict[str, Any]:
        """`config show --json`."""
        return {
            "ok": True,
            "settings": {s.name: {"value": s.value, "source": s.source} for s in self.settings},
        }


def show(settings: Settings, which_spark: Callable[[], SparkChoice]) -> SettingsShown:
    """The resolved `settings`, masked, then the Spark that `which_spark` picks (a flag, the managed engine or
    local Spark, issue 17); a managed engine that cannot be used is shown with its reason instead of a value."""
    s = settings
    values = {
        "config": str(s.config_path) if s.config_path else None,
        "db": mask_url(s.db),
        "store": mask_url(s.store),
        "backup_store": mask_url(s.backup_store),
        "spark_master": s.spark_master,
        "spark_remote": mask_url(s.spark_remote) if s.spark_remote else None,
        "spark_conf": mask_conf(dict(s.spark_conf)),
        "output": s.output,
        "file_mode": f"{s.file_mode:04o}",
        "require_recoverable": s.require_recoverable,
        "local_limit": s.local_limit,
    }
    shown = [
        ShownSetting(name, value, s.origins[name].source if name in s.origins else "default")
        for name, value in values.items()
    ]
    try:
        choice = which_spark()
        shown.append(
            ShownSetting("spark", mask_url(choice.remote) if choice.remote else choice.master, choice.why)
        )
    except EnvironmentFailure as exc:
        shown.append(ShownSetting("spark", None, f"{exc} ({exc.hint})"))
    return SettingsShown(tuple(shown))
