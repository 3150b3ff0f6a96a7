"""The checked-in CLI reference is exactly what `--help` says today."""

from __future__ import annotations

from pathlib import Path

from replctl.cli.reference import render_reference

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "cli-reference.md"


def test_the_cli_reference_matches_the_help_of_every_command() -> None:
    assert REFERENCE.read_text() == render_reference(), (
        "docs/cli-reference.md is stale: python -m replctl.cli.reference > docs/cli-reference.md"
    )


def test_the_reference_covers_every_command_of_the_contract() -> None:
    text = REFERENCE.read_text()
    for command in (
        "replctl init",
        "replctl db upgrade",
        "replctl location retire",
        "replctl topology failover",
        "replctl topology validate",
        "replctl log append",
        "replctl log verify",
        "replctl replicate",
        "replctl delete",
        "replctl recover location",
        "replctl drill disaster",
        "replctl status",
        "replctl ops show",
        "replctl backup create",
        "replctl backup list",
        "replctl backup show",
        "replctl backup verify",
        "replctl backup prune",
    ):
        assert f"## {command}\n" in text, command
