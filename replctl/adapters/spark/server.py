"""The managed Spark engine: a local Spark Connect server started from the installed pyspark (`replctl engine`).

Every command that touches Spark otherwise starts a JVM of its own; a warm server started once answers each of
them in a fraction of that time. The server is pyspark's own `SparkConnectServer` class, launched through its
`spark-submit` with the tuning of the classic session (`session.tuned_conf`), in its own process group, its
output going to a log file under the replctl home. What was started is recorded in `engine.json` beside it:
address, pid, Spark version, start time, master and log. A file lock makes `engine start` atomic, so two of
them at once start one server.

Only a process this module recorded is ever stopped, and only while its command line still names the server
class: a pid the system has reused for another program is never signalled.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

from replctl.errors import EnvironmentFailure

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
DEFAULT_PORT = 15002  # Spark Connect's own default
LOOPBACK = "127.0.0.1"
RECORD = "engine.json"
LOG = "engine.log"
LOCK = "engine.lock"
_START_TIMEOUT_S = 180.0
_STOP_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class EngineRecord:
    """What `engine start` recorded about the server it started."""

    address: str  # sc://HOST:PORT
    pid: int
    version: str  # the Spark version of the server (the installed pyspark's)
    started_at: str  # ISO 8601, UTC
    master: str
    log: str

    def same_server(self, other: EngineRecord) -> bool:
        """Whether `other` records this very server: the same address, pid and start time. A server restarted on
        the same port (`engine stop` and `engine start`, or a start after it died) has a new pid and start
        time; a session on the old one is gone with it, whatever answers on the port now."""
        return (self.address, self.pid, self.started_at) == (other.address, other.pid, other.started_at)


@dataclass(frozen=True)
class EngineState:
    """The managed engine as found now: `up` only when its process lives and its port answers."""

    record: EngineRecord | None
    alive: bool  # the recorded process exists and is the server
    answers: bool  # its port accepts a connection

    @property
    def up(self) -> bool:
        """True when commands can use it."""
        return self.record is not None and self.alive and self.answers

    @property
    def stale(self) -> bool:
        """True when a record exists but the server behind it is gone or does not answer."""
        return self.record is not None and not self.up


@dataclass(frozen=True)
class ManagedServer:
    """The managed engine of one replctl home, as the services see it (`services.ports.ManagedEngine`)."""

    home: Path

    @property
    def log(self) -> Path:
        """Where a server started from this home writes its output."""
        return self.home / LOG

    def state(self) -> EngineState:
        """`state(home)`."""
        return state(self.home)

    def start(
        self, *, master: str, port: int, conf: tuple[tuple[str, str], ...]
    ) -> tuple[EngineRecord, bool]:
        """`start(home, ...)`."""
        return start(self.home, master=master, port=port, conf=conf)

    def stop(self) -> EngineRecord | None:
        """`stop(home)`."""
        return stop(self.home)


def client_version() -> str:
    """The installed pyspark's version (the client side of Spark Connect)."""
    return version("pyspark")


def read_record(home: Path) -> EngineRecord | None:
    """The recorded engine under `home`, None when there is none (or the record is unreadable)."""
    try:
        data = json.loads((home / RECORD).read_text())
        return EngineRecord(**data)
    except (OSError, ValueError, TypeError):
        return None


def state(home: Path) -> EngineState:
    """Look at the recorded engine: is its process the server, does its port answer."""
    record = read_record(home)
    if record is None:
        return EngineState(None, alive=False, answers=False)
    alive = _is_server(record.pid, record.address)
    return EngineState(record, alive=alive, answers=alive and _answers(record.address))


def settled_state(home: Path, *, wait: float = 10.0) -> EngineState:
    """`state(home)` once a `replctl engine start|stop` under way has finished, waiting at most `wait` seconds
    for it: a job that failed because `engine stop` landed fails while the server is still shutting down (its
    process alive, its port open), and must see the engine gone, as the stop leaves it.

    Only looks: the lock file is opened read-only (a shared lock needs no write access) and nothing is created,
    so the check works on a home this process cannot write. No lock file means no start or stop ever ran here.
    """
    try:
        handle = (home / LOCK).open("rb")
    except OSError:
        return state(home)
    deadline = time.monotonic() + wait
    with handle:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    break
                time.sleep(0.1)
                continue
            try:
                return state(home)
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
    return state(home)


def start(
    home: Path, *, master: str, port: int, conf: tuple[tuple[str, str], ...]
) -> tuple[EngineRecord, bool]:
    """Start the server unless one is up; return its record and whether this call started it.

    Waits until the server answers on its port. A server that exits before answering raises
    `EnvironmentFailure` naming its log; a home that cannot be written raises it with code `engine-home`.
    """
    with _locked(home):
        found = state(home)
        if found.up and found.record is not None:
            return found.record, False
        if found.alive and found.record is not None:
            # Alive but not answering: a server still starting (another start was interrupted) or hung.
            _terminate(found.record.pid)
        if _answers(f"sc://{LOOPBACK}:{port}"):
            # Another program holds the port (often another replctl home's engine): the new server would fail
            # to bind, while the other one answered this start's wait and was recorded as this home's.
            raise EnvironmentFailure(
                f"cannot start the Spark engine: port {port} on {LOOPBACK} is in use by another program",
                code="spark",
                hint="choose a free port: replctl engine start --port N",
            )
        log = home / LOG
        process = _launch(home, master=master, port=port, conf=conf, log=log)
        record = EngineRecord(
            address=f"sc://{LOOPBACK}:{port}",
            pid=process.pid,
            version=client_version(),
            started_at=datetime.now(UTC).isoformat(timespec="seconds"),
            master=master,
            log=str(log),
        )
        _wait_until_answering(process, record)
        tmp = home / f".{RECORD}.tmp-{os.getpid()}"
        try:
            tmp.write_text(json.dumps(asdict(record), indent=2) + "\n")
            tmp.replace(home / RECORD)
        except OSError as exc:
            # Unrecorded, the server could never be found again, not even by `engine stop`: not left running.
            _terminate(process.pid)
            raise _home_failure(home, exc) from exc
        return record, True


def stop(home: Path) -> EngineRecord | None:
    """Stop the recorded server (if it still runs) and forget it; the record that was stopped, if any.

    A home that cannot be written raises `EnvironmentFailure` (code `engine-home`).
    """
    with _locked(home):
        record = read_record(home)
        if record is None:
            return None
        if _is_server(record.pid, record.address):
            _terminate(record.pid)
        try:
            (home / RECORD).unlink(missing_ok=True)
        except OSError as exc:
            raise _home_failure(home, exc) from exc
        return record


def _launch(
    home: Path, *, master: str, port: int, conf: tuple[tuple[str, str], ...], log: Path
) -> subprocess.Popen[bytes]:
    import pyspark

    from replctl.adapters.spark.session import SparkSettings, archive_path, tuned_conf

    # The class-data archive is mapped when a classic run made one; the server never writes one itself (its
    # JVM outlives this process, which promotes archives).
    settings = SparkSettings(master=master, conf=conf, home=home, cds=archive_path(home).is_file())
    options = {
        **tuned_conf(settings),
        "spark.connect.grpc.binding.address": LOOPBACK,
        "spark.connect.grpc.binding.port": str(port),
    }
    spark_home = Path(pyspark.__file__).parent
    command = [str(spark_home / "bin" / "spark-submit"), "--class", SERVER_CLASS, "--name", "replctl-engine"]
    command += ["--master", master]
    for key, value in options.items():
        # spark-submit drops a key outside `spark.` (a Parquet reader option of `FORCED_CONF`); under
        # `spark.hadoop.` it reaches the engine's Hadoop configuration, which every session's reads start from.
        command += ["--conf", f"{key if key.startswith('spark.') else f'spark.hadoop.{key}'}={value}"]
    env = {**os.environ, "SPARK_HOME": str(spark_home), "SPARK_LOCAL_IP": LOOPBACK}
    try:
        out = log.open("ab")
    except OSError as exc:
        raise _home_failure(home, exc) from exc
    try:
        with out:
            out.write(
                f"--- replctl engine start {datetime.now(UTC).isoformat(timespec='seconds')}\n".encode()
            )
            out.flush()
            # Its own session (process group): closing this terminal or this process leaves it running.
            return subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=env, start_new_session=True
            )
    except OSError as exc:
        raise EnvironmentFailure(f"cannot start the Spark engine: {exc}", code="spark") from exc


def _wait_until_answering(process: subprocess.Popen[bytes], record: EngineRecord) -> None:
    deadline = time.monotonic() + _START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise EnvironmentFailure(
                f"the Spark engine exited while starting (exit {process.returncode}); its log: {record.log}",
                code="spark",
                hint=f"read {record.log}; a port in use? try `replctl engine start --port N`",
            )
        if _answers(record.address):
            return
        time.sleep(0.2)
    _terminate(process.pid)
    raise EnvironmentFailure(
        f"the Spark engine did not answer within {int(_START_TIMEOUT_S)} s; its log: {record.log}",
        code="spark",
    )


def _answers(address: str) -> bool:
    host, _, port = address.removeprefix("sc://").partition(":")
    try:
        with socket.create_connection((host, int(port.split("/")[0])), timeout=1.0):
            return True
    except (OSError, ValueError):
        return False


def _is_server(pid: int, address: str | None = None) -> bool:
    # /proc names the program behind a pid: a reused pid of another program is not the server, and a reused
    # pid of another home's server (another port) is not the one recorded at `address`.
    try:
        arguments = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    if SERVER_CLASS.encode() not in arguments:
        return False
    if address is None:
        return True
    port = address.removeprefix("sc://").partition(":")[2].split("/")[0]
    return f"spark.connect.grpc.binding.port={port}".encode() in arguments


def _terminate(pid: int) -> None:
    # The server leads its own process group (start_new_session): the group holds it and nothing else.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + _STOP_TIMEOUT_S
    while time.monotonic() < deadline:
        if not _is_server(pid):
            _reap(pid)
            return
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    _reap(pid)


def _reap(pid: int) -> None:
    # A server started by this very process is its child: collect its exit status so it leaves no zombie.
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


@contextlib.contextmanager
def _locked(home: Path) -> Iterator[None]:
    # `engine start|stop` one at a time per home. Only making the folder and opening the lock are translated
    # here: an OSError of the body is the body's to translate.
    try:
        home.mkdir(parents=True, exist_ok=True)
        handle = (home / LOCK).open("a")
    except OSError as exc:
        raise _home_failure(home, exc) from exc
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _home_failure(home: Path, exc: OSError) -> EnvironmentFailure:
    """The error (exit 6) for a replctl home where the engine's lock, record or log cannot be written: a
    folder not writable, a file in its place (errors.py: foreign exceptions are translated at the boundary)."""
    if isinstance(exc, FileExistsError | NotADirectoryError):
        reason = "a file stands where a folder should be"
    else:
        reason = exc.strerror or type(exc).__name__
    where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(home) else ""
    return EnvironmentFailure(
        f"cannot write the managed engine's files in {home}: {reason}{where}",
        code="engine-home",
        hint=f"make {home} a folder this user can write, or point REPLCTL_HOME at one; then re-run",
    )
