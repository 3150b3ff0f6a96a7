"""Catalog fixtures: a SQLite file per test, and a fresh database per test on a real PostgreSQL server.

The server comes from `REPLCTL_TEST_PG_URL` when set (CI starts one; `.ci/run` shows how), otherwise a
throwaway one is started once per session from the local PostgreSQL binaries (as the `postgres` user when the
tests run as root, since `initdb` refuses root) on a free loopback port, and stopped at the end. Without
binaries the PostgreSQL tests are skipped, unless `CI` is set: there a missing server fails them, so that a
green CI run always means both backends were tested.

Registered as a plugin by `tests/conftest.py`.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest
from sqlalchemy import Engine, create_engine
from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError

from replctl.adapters.catalog.engine import parse_url

ENV_URL = "REPLCTL_TEST_PG_URL"
SERVER_USER = "postgres"
# Debian installs the server binaries per major version, outside PATH.
DEBIAN_BIN_GLOB = "/usr/lib/postgresql/*/bin"
START_ATTEMPTS = 3


class ServerUnavailable(Exception):
    """No PostgreSQL server could be had; the message says why."""


def unavailable(reason: str) -> NoReturn:
    """Skip the PostgreSQL tests with `reason`, or fail them when running under CI."""
    if os.environ.get("CI"):
        pytest.fail(f"PostgreSQL unavailable under CI: {reason}", pytrace=False)
    pytest.skip(f"PostgreSQL unavailable: {reason} (set {ENV_URL} or install the server binaries)")


def find_server_binaries() -> Path | None:
    """The folder holding `initdb` and `pg_ctl`: PATH first, then Debian's folders, newest version first."""
    on_path = shutil.which("pg_ctl")
    if on_path and shutil.which("initdb"):
        return Path(on_path).parent
    candidates = [Path(p) for p in Path("/").glob(DEBIAN_BIN_GLOB.lstrip("/"))]
    candidates = [p for p in candidates if (p / "initdb").exists() and (p / "pg_ctl").exists()]

    def major(path: Path) -> int:
        version = path.parent.name
        return int(version) if version.isdigit() else 0

    return max(candidates, key=major, default=None)


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class ThrowawayServer:
    """A PostgreSQL server in a temporary folder, listening on loopback only, trusting local connections."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        # Under /tmp when root, not $TMPDIR: the server's user must be able to reach the folder.
        self.base = Path(tempfile.mkdtemp(prefix="replctl-pg-", dir="/tmp" if os.geteuid() == 0 else None))
        self.data = self.base / "data"
        self.log = self.base / "server.log"
        self.port = 0
        # initdb refuses to run as root; the server then runs as the unprivileged user that owns the data.
        self.user: str | None = None
        if os.geteuid() == 0:
            try:
                account = pwd.getpwnam(SERVER_USER)
            except KeyError as exc:
                raise ServerUnavailable(f"running as root and there is no {SERVER_USER!r} user") from exc
            os.chown(self.base, account.pw_uid, account.pw_gid)
            self.user = SERVER_USER

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.bindir / args[0]), *args[1:]],
            capture_output=True,
            text=True,
            check=False,
            user=self.user,
            group=self.user,
            extra_groups=[] if self.user else None,
            cwd=self.base,
            timeout=120,
        )

    def start(self) -> URL:
        """initdb, then start on a free port (retrying when another process took the port first)."""
        # --no-sync and the settings below trade durability for speed: the data dies with the tests.
        done = self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--no-locale",
            "--no-sync",
        )
        if done.returncode != 0:
            raise ServerUnavailable(f"initdb failed: {done.stderr.strip() or done.stdout.strip()}")
        for _ in range(START_ATTEMPTS):
            self.port = free_port()
            options = (
                f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.base} "
                "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
            )
            done = self._run(
                "pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "-t", "60", "start"
            )
            if done.returncode == 0:
                return URL.create(
                    "postgresql+psycopg",
                    username="postgres",
                    host="127.0.0.1",
                    port=self.port,
                    database="postgres",
                )
        tail = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
        raise ServerUnavailable(f"pg_ctl start failed: {done.stderr.strip()}\n{tail}")

    def stop(self) -> None:
        """Stop the server (if it runs) and delete its folder."""
        if (self.data / "postmaster.pid").exists():
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.base, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_admin_url() -> Iterator[URL]:
    """The URL of a superuser database on the session's PostgreSQL server."""
    given = os.environ.get(ENV_URL)
    if given:
        # An explicitly named server that does not answer is an error, not a reason to skip.
        url = parse_url(given)
        engine = create_engine(url)
        try:
            with engine.connect():
                pass
        except DBAPIError as exc:
            pytest.fail(f"{ENV_URL} names a server that does not answer: {exc.orig}", pytrace=False)
        finally:
            engine.dispose()
        yield url
        return
    bindir = find_server_binaries()
    if bindir is None:
        unavailable("no PostgreSQL server binaries (initdb, pg_ctl) on PATH or in /usr/lib/postgresql")
    server: ThrowawayServer | None = None
    try:
        server = ThrowawayServer(bindir)
        url = server.start()
    except (ServerUnavailable, OSError, subprocess.SubprocessError) as exc:
        if server is not None:
            server.stop()
        unavailable(str(exc))
    try:
        yield url
    finally:
        server.stop()


@pytest.fixture(scope="session")
def pg_admin_engine(pg_admin_url: URL) -> Iterator[Engine]:
    """An autocommit engine on the admin database, for CREATE/DROP DATABASE."""
    engine = create_engine(pg_admin_url, isolation_level="AUTOCOMMIT")
    yield engine
    engine.dispose()


@pytest.fixture
def postgres_url(pg_admin_url: URL, pg_admin_engine: Engine) -> Iterator[str]:
    """A new, empty PostgreSQL database for one test (dropped afterwards, even with connections left)."""
    name = f"replctl_test_{uuid.uuid4().hex[:12]}"
    with pg_admin_engine.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    try:
        yield pg_admin_url.set(database=name).render_as_string(hide_password=False)
    finally:
        with pg_admin_engine.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """A SQLite catalog file (not yet created) in the test's temporary folder."""
    return f"sqlite:///{tmp_path / 'catalog' / 'catalog.db'}"


@pytest.fixture(
    params=[pytest.param("sqlite"), pytest.param("postgres", marks=pytest.mark.postgres)],
)
def catalog_url(request: pytest.FixtureRequest) -> str:
    """The URL of an empty catalog database, once per backend."""
    url: str = request.getfixturevalue(f"{request.param}_url")
    return url
