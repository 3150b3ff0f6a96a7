"""Spark services on loopback for the cluster tests: a standalone master and worker, and a Spark Connect server.

Each service is a JVM started from the installed pyspark (`SPARK_HOME` = the pyspark package folder) in its own
process group, so stopping it also stops what it spawned (the worker's executors, spark-submit's JVM). Logs go to
files under the test's temporary folder; readiness is read from them, since the services have no other signal.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).resolve().parent
LOOPBACK = "127.0.0.1"
# Under load (two cores shared with other test runs) a JVM service can take tens of seconds to come up.
START_TIMEOUT_S = 180.0
STOP_TIMEOUT_S = 30.0


def free_port() -> int:
    """A TCP port on loopback that was free a moment ago (the service binds it right after)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        port: int = sock.getsockname()[1]
        return port


def spark_env(**extra: str) -> dict[str, str]:
    """The environment for Spark JVMs and for replctl subprocesses that drive them.

    Every service binds loopback only (`SPARK_LOCAL_IP`), and executors run this interpreter, the driver's
    (`PYSPARK_PYTHON`). replctl's own variables are dropped so that only a test's flags configure it.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REPLCTL_", "SPARK_", "PYSPARK_"))}
    env.update(
        {
            "SPARK_HOME": str(SPARK_HOME),
            "SPARK_LOCAL_IP": LOOPBACK,
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
        }
    )
    env.update(extra)
    return env


@dataclass
class Service:
    """One running JVM service: its process (the group leader) and its log file."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def log_text(self) -> str:
        """The service's output so far."""
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def wait_for(self, marker: str, timeout: float = START_TIMEOUT_S) -> None:
        """Block until `marker` appears in the log; fail with the log's tail if the JVM exits or time runs out."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if marker in self.log_text():
                return
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.process.returncode}:\n{self._tail()}")
            time.sleep(0.25)
        raise RuntimeError(f"{self.name} did not log {marker!r} within {timeout:.0f}s:\n{self._tail()}")

    def stop(self) -> None:
        """Stop the whole process group: SIGTERM, then SIGKILL for whatever is left after a grace period."""
        pgid = self.process.pid
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGTERM)
        if not _group_gone(self.process, STOP_TIMEOUT_S):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
            if not _group_gone(self.process, STOP_TIMEOUT_S):
                raise RuntimeError(f"{self.name} (process group {pgid}) survived SIGKILL")

    def _tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])


def _group_gone(leader: subprocess.Popen[bytes], timeout: float) -> bool:
    """Whether every process of the leader's group has ended (the leader is reaped first: a zombie still counts)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        leader.poll()
        if leader.returncode is not None:
            try:
                os.killpg(leader.pid, 0)
            except ProcessLookupError:
                return True
        time.sleep(0.2)
    return False


def start(name: str, argv: list[str], log: Path, env: Mapping[str, str]) -> Service:
    """Start `argv` in a new process group with stdout and stderr in `log`."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=dict(env),
            cwd=log.parent,
            start_new_session=True,
        )
    return Service(name, process, log)


@contextlib.contextmanager
def services(*started: Service) -> Iterator[None]:
    """Stop the given services when the block ends, however it ends; every one is stopped even if one fails."""
    try:
        yield
    finally:
        errors = []
        for service in reversed(started):
            try:
                service.stop()
            except RuntimeError as exc:
                errors.append(str(exc))
        if errors:
            raise RuntimeError("; ".join(errors))


@contextlib.contextmanager
def standalone_cluster(folder: Path) -> Iterator[str]:
    """A standalone master and one worker (1 core, 1 GiB) on loopback; yields the master URL.

    The master's REST submission server is off: it would bind the fixed port 6066, which a concurrent run
    may hold. Web UIs take any free port (0).
    """
    port = free_port()
    url = f"spark://{LOOPBACK}:{port}"
    env = spark_env(
        SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",
        SPARK_WORKER_DIR=str(folder / "work"),
    )
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    master = start(
        "spark master",
        [
            spark_class,
            "org.apache.spark.deploy.master.Master",
            "--host",
            LOOPBACK,
            "--port",
            str(port),
            "--webui-port",
            "0",
        ],
        folder / "master.log",
        env,
    )
    started = [master]
    try:
        # The worker retries until the master listens, so both JVMs start together.
        worker = start(
            "spark worker",
            [
                spark_class,
                "org.apache.spark.deploy.worker.Worker",
                url,
                "--cores",
                "1",
                "--memory",
                "1g",
                "--host",
                LOOPBACK,
                "--webui-port",
                "0",
                "--work-dir",
                str(folder / "work"),
            ],
            folder / "worker.log",
            env,
        )
        started.append(worker)
        worker.wait_for("Successfully registered with master")
    except BaseException:
        with services(*started):
            raise
    with services(*started):
        yield url


@contextlib.contextmanager
def connect_server(folder: Path) -> Iterator[str]:
    """A Spark Connect server (its own Spark on `local[2]`) listening on loopback; yields its `sc://` URL.

    It is started with `spark-submit` in the foreground rather than `sbin/start-connect-server.sh`, which
    daemonises it: a foreground process group is one that can be stopped for certain.
    """
    port = free_port()
    server = start(
        "spark connect server",
        [
            str(SPARK_HOME / "bin" / "spark-submit"),
            "--class",
            "org.apache.spark.sql.connect.service.SparkConnectServer",
            "--name",
            "replctl-connect-test",
            "--master",
            "local[2]",
            "--conf",
            f"spark.connect.grpc.binding.address={LOOPBACK}",
            "--conf",
            f"spark.connect.grpc.binding.port={port}",
            "--conf",
            "spark.ui.enabled=false",
            "--conf",
            "spark.sql.shuffle.partitions=4",
            "--conf",
            "spark.sql.session.timeZone=UTC",
        ],
        folder / "connect.log",
        spark_env(),
    )
    with services(server):
        server.wait_for("Spark Connect server started")
        yield f"sc://{LOOPBACK}:{port}"
