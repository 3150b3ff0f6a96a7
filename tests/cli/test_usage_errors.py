"""Usage errors under --json are one JSON document on stdout too (cli.md "Output"; exit 2).

Click reports usage errors itself, as text on stderr, before any command of ours runs; the root group turns
them into the contract's error document when JSON was asked for, wherever --json stands on the line.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from clitool import Replctl


@pytest.fixture
def rc(tmp_path: Path) -> Replctl:
    """A CLI bound to an empty folder: usage errors are found before the catalog is opened."""
    return Replctl(tmp_path)


@pytest.mark.parametrize(
    ("args", "message", "hint"),
    [
        (
            ["--json", "delete", "A", "--upot", "5"],
            "No such option: --upot (Possible options: --upto)",
            "run: replctl delete --help",
        ),
        (
            ["delete", "A", "--upot", "5", "--json"],
            "No such option: --upot (Possible options: --upto)",
            "run: replctl delete --help",
        ),
        (["--output", "json", "nosuch"], "No such command 'nosuch'.", "run: replctl --help"),
        (["--json", "log", "show"], "Missing argument 'LOCATION'.", "run: replctl log show --help"),
        (["--json", "topology"], "Missing command.", "run: replctl topology --help"),
        (
            ["--json", "delete", "A", "--upto"],
            "--upto needs a value: --upto SEQ",
            "run: replctl delete --help",
        ),
    ],
)
def test_a_usage_error_under_json_is_the_contract_error_document(
    rc: Replctl, args: list[str], message: str, hint: str
) -> None:
    out = rc(*args, expect=2)
    assert out.doc == {"ok": False, "error": {"code": "usage", "message": message, "hint": hint}}


def test_a_usage_error_in_text_mode_stays_clicks_text_on_stderr(rc: Replctl) -> None:
    out = rc("delete", "A", "--upot", "5", expect=2)
    assert out.stdout == ""
    assert "No such option: --upot" in out.stderr
    assert "Usage: replctl delete" in out.stderr


def test_an_option_without_its_value_in_text_mode_names_the_value_with_a_hint(rc: Replctl) -> None:
    out = rc("log", "show", "A", "--limit", expect=2)
    assert (out.stdout, out.stderr) == (
        "",
        "error: --limit needs a value: --limit N\nhint: run: replctl log show --help\n",
    )


def test_a_value_given_to_a_flag_stays_clicks_error(rc: Replctl) -> None:
    out = rc("status", "--wide=3", expect=2)
    assert out.stderr.splitlines()[-1] == "Error: Option '--wide' does not take a value."
