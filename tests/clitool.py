"""Driving the real CLI in-process (typer's CliRunner) against a real SQLite file and a real store folder."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from managed_engine import ENGINE_HOME_VAR
from spark_session import HOME, MASTER
from typer.testing import CliRunner, Result

from replctl.cli import app


@dataclass
class Outcome:
    """One invocation: exit code, stdout, stderr, and the JSON document when --json was given."""

    code: int
    stdout: str
    stderr: str
    raw: Result

    @property
    def doc(self) -> dict[str, Any]:
        """The one JSON document on stdout."""
        try:
            value: dict[str, Any] = json.loads(self.stdout)
        except json.JSONDecodeError as exc:
            raise AssertionError(f"stdout is not one JSON document:\n{self.stdout}\n{self.stderr}") from exc
        return value


class Replctl:
    """`replctl` bound to one catalog and one store (both under a test's tmp_path)."""

    def __init__(self, root: Path, *, db_url: str | None = None, spark_master: str = MASTER) -> None:
        self.root = root
        self.db_url = db_url or f"sqlite:///{root / 'catalog.db'}"
        self.store = root / "logs"
        self.backups = root / "backups"
        self.env = {
            "REPLCTL_DB": self.db_url,
            "REPLCTL_STORE": str(self.store),
            "REPLCTL_BACKUP_STORE": str(self.backups),
            "REPLCTL_SPARK_MASTER": spark_master,
            "REPLCTL_HOME": str(HOME),
            "COLUMNS": "160",
            "NO_COLOR": "1",
            "REPLCTL_CONFIG": "",
            "REPLCTL_OUTPUT": "",
        }
        engine_home = os.environ.get(ENGINE_HOME_VAR)
        if engine_home and spark_master == MASTER:
            # `pytest --engine`: no Spark setting, so the command finds the managed engine under its home.
            del self.env["REPLCTL_SPARK_MASTER"]
            self.env["REPLCTL_HOME"] = engine_home
            # Every data job on the engine, the small ones the commands would do without Spark included.
            self.env["REPLCTL_LOCAL_LIMIT"] = "0"
        self.runner = CliRunner()

    @classmethod
    def initialised(cls, root: Path, *locations: str) -> Replctl:
        """`replctl init` under `root`, then `location add` for each of `locations`."""
        tool = cls(root)
        tool("init")
        for name in locations:
            tool("location", "add", name)
        return tool

    def __call__(self, *args: str, expect: int | None = 0) -> Outcome:
        """Run `replctl ARGS`; assert the exit code unless expect is None."""
        result = self.runner.invoke(app, list(args), env=self.env, catch_exceptions=False)
        out = Outcome(result.exit_code, result.stdout, result.stderr, result)
        if expect is not None and out.code != expect:
            raise AssertionError(
                f"replctl {' '.join(args)} exited {out.code}, expected {expect}\n"
                f"stdout:\n{out.stdout}\nstderr:\n{out.stderr}"
            )
        return out

    def json(self, *args: str, expect: int | None = 0) -> dict[str, Any]:
        """Run with --json and return the document."""
        return self(*args, "--json", expect=expect).doc

    def keys(self, location: str) -> list[str]:
        """The keys of a log's stored events in seq order."""
        return [e["key"] for e in self.json("log", "show", location)["events"]]

    def stored(self, location: str) -> list[tuple[str, int, str]]:
        """A log's stored events in seq order as (origin, origin_time, key): identity (M3) and content."""
        return [
            (e["origin"], e["origin_time"], e["key"]) for e in self.json("log", "show", location)["events"]
        ]

    def append(self, location: str, *keys: str) -> None:
        """Append one event per key (as `--event '{"key": ...}'`) in one command."""
        args: list[str] = []
        for key in keys:
            args += ["--event", json.dumps({"key": key})]
        self("log", "append", location, *args)

    def location(self, name: str) -> dict[str, Any]:
        """One location as `status --json` shows it."""
        found: dict[str, Any] = next(x for x in self.json("status")["locations"] if x["name"] == name)
        return found

    def connections(self) -> dict[tuple[str, str], dict[str, Any]]:
        """Every connection as `status --json` shows it, by (source, target)."""
        return {(c["source"], c["target"]): c for c in self.json("status")["connections"]}

    def connection(self, source: str, target: str) -> dict[str, Any]:
        """One connection as `status --json` shows it."""
        return self.connections()[(source, target)]

    def snapshot(self) -> dict[str, Any]:
        """Catalog state that a refusal must leave untouched: status plus the recorded history."""
        status = self.json("status")
        history = self.json("topology", "history")["changes"]
        return {"status": status, "history": history}

    def refused_alike(self, *args: str, error: dict[str, str]) -> None:
        """`replctl ARGS`, its dry run and its run alike, refused (exit 3) with `error`; nothing changed."""
        before = self.snapshot()
        assert self.json(*args, "--dry-run", expect=3)["error"] == error
        assert self.json(*args, expect=3)["error"] == error
        assert self.snapshot() == before

    def refused_backup_held(self, location: str, lost: str, backup: str) -> None:
        """`recover location LOCATION` refused by BK3, dry run and run alike: it would lose `lost` (as
        `A: 1..2`), which `backup` holds."""
        message = f"would lose {lost}, which backup {backup} holds; nothing was changed"
        self.refused_alike(
            "recover",
            "location",
            location,
            error={
                "code": "BK3",
                "message": f"refused [BK3]: recover location {location} {message}",
                "hint": f"replctl recover location {location} --from-backup {backup}",
            },
        )


def lose_what_the_neighbour_deleted(rc: Replctl, *, lost_from: int) -> None:
    """A and B connected both ways; B deleted A's a1..a3 after receiving them, then A loses its log from
    `lost_from` on: B fails DR4 for A, so recovering A ends incomplete (exit 5) until the loss is accepted."""
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "a1", "a2", "a3")
    rc("replicate")
    rc("delete", "B", "--upto", "3")
    rc("drill", "disaster", "A", "--from", str(lost_from))


def terminal_once_unfiltered(rc: Replctl) -> None:
    """A terminal behind N→A, filtered `x%` (x1 came), cleared (z1 came), then filtered `y%` (y2 came, w1 not):
    the connection was once unfiltered, so DR3 recovers A from N unfiltered."""
    rc("location", "add", "A")
    rc("location", "add", "N")
    rc("topology", "add", "A", "N")
    rc("topology", "add", "N", "A", "--filter", "key like 'x%'")
    rc.append("N", "x1")
    rc("replicate")
    rc("topology", "filter", "N", "A", "--clear")
    rc.append("N", "z1")
    rc("replicate")
    rc("topology", "filter", "N", "A", "--set", "key like 'y%'")
    rc.append("N", "w1", "y2")
    rc("replicate")


def y_between_b_and_n(rc: Replctl, *, with_n: bool) -> None:
    """A↔B↔Y, and (`with_n`) A→N→Y; a1..a6 everywhere, then N deletes a1..a6 (its only target Y has them),
    B deletes a1..a2, and Y loses its whole log. B is Y's eligible source but fails DR4 (it deleted A:1..2,
    Y has nothing); N is no recovery source at all (DR3: no Y→N)."""
    for name in ["A", "B", "Y", *(["N"] if with_n else [])]:
        rc("location", "add", name)
    rc("topology", "add", "A", "B", "--both")
    rc("topology", "add", "B", "Y", "--both")
    if with_n:
        rc("topology", "add", "A", "N")
        rc("topology", "add", "N", "Y")
    rc.append("A", "a1", "a2", "a3", "a4", "a5", "a6")
    rc("replicate")
    if with_n:
        rc("delete", "N", "--upto", "6")
        assert rc.stored("N") == []
    rc("delete", "B", "--upto", "2")
    rc("drill", "disaster", "Y", "--from", "1")


def a_between_b_and_c(rc: Replctl, *c_keys: str) -> None:
    """A↔B and A↔C; C appends `c_keys` (origin times 1, 2, ...); one replicate takes them everywhere."""
    for name in "ABC":
        rc("location", "add", name)
    rc("topology", "add", "A", "B", "--both")
    rc("topology", "add", "A", "C", "--both")
    rc.append("C", *c_keys)
    rc("replicate")


def chain_z_y_x(rc: Replctl) -> None:
    """Z→Y→X, y1 at Y and z1, z2 at Z. The connections are taken in name order, so Y→X comes before Z→Y:
    the run's round 1 copies y1 into X before Z→Y has written z1, z2 into Y, and round 2 takes them on."""
    for name in ("X", "Y", "Z"):
        rc("location", "add", name)
    rc("topology", "add", "Z", "Y")
    rc("topology", "add", "Y", "X")
    rc.append("Y", "y1")
    rc.append("Z", "z1", "z2")


def chain_a_b_c_d(rc: Replctl) -> None:
    """A→B→C→D, C→D filtered (no b3); a1, a2 at A and b1..b3 at B: in name order, each pass feeds the next."""
    for name in ("A", "B", "C", "D"):
        rc("location", "add", name)
    rc("topology", "add", "A", "B")
    rc("topology", "add", "B", "C")
    rc("topology", "add", "C", "D", "--filter", "key <> 'b3'")
    rc.append("A", "a1", "a2")
    rc.append("B", "b1", "b2", "b3")
