"""The one place a SparkSession is built (architecture.md, "Spark").

pyspark is imported inside the functions: commands that never touch Spark must not pay for it, and a missing
or broken Spark installation must surface as `EnvironmentFailure` only when Spark is actually needed.

A classic (local or cluster) session is tuned for a fast cold start on a small machine: no UI, no event log,
no console progress bar, an in-memory catalog, few shuffle partitions, a later optimising JIT, and a JVM
class-data-sharing (CDS) archive of the driver. In local mode pyspark launches the driver JVM through
`spark-submit`, which adds `spark.driver.extraJavaOptions` to that JVM's command line, so the archive options
take effect there.

The archive is created by the first process (`-XX:ArchiveClassesAtExit`) under a per-process temporary name
and moved into place once that JVM has exited, so a concurrent process never maps a half-written archive;
later processes map it with `-XX:SharedArchiveFile`. An archive that does not match the JVM or the class path
is ignored by the JVM (`-Xshare:auto`), so a stale one costs speed, never correctness.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import re
import shutil
import signal
import socket
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from replctl.errors import EnvironmentFailure, InvalidInput, ReplctlError
from replctl.masking import mask_url

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from replctl.adapters.spark.server import EngineRecord

JAVA_HINT = "install a Java runtime, e.g. `apt-get install -y openjdk-17-jre-headless`, or set JAVA_HOME"
CONNECT_HINT = "install the Spark Connect client: `pip install 'pyspark[connect]==<the pyspark version>'`"
MASTER_HINT = "use local[*], local[N], spark://HOST:PORT, yarn or k8s://https://HOST:PORT (--spark-master)"
REMOTE_HINT = (
    "check --spark-remote / REPLCTL_SPARK_REMOTE and that the Spark Connect server runs and is reachable"
)
STORE_HINT = "check that the log store has free space and is writable (--store / REPLCTL_STORE)"
# A Spark Connect server gone in the middle of a command: each step commits on its own, so the re-run resumes.
ENGINE_LOST_HINT = (
    "check the engine with `replctl engine status` (and its log); re-run the command: it resumes where this "
    "one stopped, on local Spark while the engine is down"
)
REMOTE_LOST_HINT = f"{REMOTE_HINT}; then re-run the command: it resumes where this one stopped"

# How long a Spark Connect server has to answer before the command gives up (exit 6), leaving room for the
# command's own start within the ten seconds an operator waits. The client's own retries would otherwise wait
# minutes, with no output, on an address where nothing answers; a live server answers in milliseconds.
CONNECT_TIMEOUT_S = 6.0
# Spark Connect's port when the URL names none.
CONNECT_DEFAULT_PORT = 15002

# The master URLs Spark accepts (SparkContext.createTaskScheduler); anything else is a typo, refused before a
# JVM starts and fails with a message about Java.
_MASTER = re.compile(
    r"^(local(\[(\*|[1-9]\d*)(,[1-9]\d*)?\])?"
    r"|local-cluster\[\d+,\d+,\d+\]"
    r"|spark://[^\s/,]+:\d+(,[^\s/,]+:\d+)*"
    r"|yarn"
    r"|k8s://\S+)$"
)
# Java exceptions that mean the store (not Spark) failed a read or write: the disk is full, the file system
# read-only, a folder not writable or a file in the way.
_STORE_FAULTS = (
    "java.io.",
    "java.nio.file.",
    "org.apache.hadoop.fs.",
    "org.apache.hadoop.security.AccessControlException",
)

# JVM log output goes to stderr only: warnings on stdout would corrupt `--json` output (cli.md, Output).
# CDS messages are silenced: the archive is an optimisation and the JVM falls back on its own.
_JVM_LOG_OPTIONS = "-Xlog:disable -Xlog:all=warning:stderr -Xlog:cds*=off:stderr -Xlog:class+path=off:stderr"
# The optimising JIT compiler (C2) takes a method only after 10x HotSpot's default use: a cold process spends
# its first seconds in code that runs a few thousand times (session start, planning, the first query), and on
# two cores C2 compiling it competes with the work itself. A job's per-row loops pass the higher thresholds
# within a fraction of a second. Measured on 2 cores: a cold `replicate` of 10 events 1.1 s faster, a cold
# 1M-event pass 9.3-11.5 s -> 8.8-9.2 s, a cold 10M-event pass 32-34 s -> 31-32 s; warm passes unchanged.
_JIT_OPTIONS = (
    "-XX:Tier4InvocationThreshold=50000 -XX:Tier4MinInvocationThreshold=20000 "
    "-XX:Tier4CompileThreshold=60000 -XX:Tier4BackEdgeThreshold=400000"
)
# The throughput collector instead of the JVM's default (G1): a job copies every row it reads into new objects,
# and G1's write barriers and concurrent work cost a replication pass and a plain copy alike a measurable share
# of their CPU (README, "Performance"); replctl's jobs are batch work that no pause of the driver disturbs.
_GC_OPTIONS = "-XX:+UseParallelGC"
# Set in every session replctl builds, after the operator's --spark-conf: Spark would otherwise expand
# ${env:...} and ${system:...} in a filter, handing the environment (the catalog password) to an expression.
# Adaptive execution must not replace a stage that turned out empty by an empty relation: the plan it leaves
# no longer holds the reads' row-count observations, so a read whose filter kept nothing (a `log show` page
# past the end) would have no count to compare with its segment rows (issue 19, DR0).
# Every Parquet page read is checked against the CRC its writer stored (Spark's writer stores them by default,
# `parquet.page.write-checksum.enabled`; the local writer too, `logstore.writer`): a byte changed at the file's
# size (bit rot, a foreign overwrite) still decoded, so a pass spread the changed event and a compaction
# rewrote it under a fresh digest, after which nothing found it. A failed check is damage (DR0,
# `sourcechecks.damage_explains`). A session option, not a Hadoop one, so a Spark Connect session sets it too
# (`_build_connect`): Spark copies session options into the Hadoop configuration its reads use.
FORCED_CONF: dict[str, str] = {
    "spark.sql.variable.substitute": "false",
    "spark.sql.adaptive.optimizer.excludedRules": (
        "org.apache.spark.sql.execution.adaptive.AQEPropagateEmptyRelation"
    ),
    "parquet.page.verify-checksum.enabled": "true",
}
# Hadoop's local file system checks each file it reads against the `.<name>.crc` side file written beside it,
# and a file changed since (a torn disk, `drill disaster` cutting a segment short) then fails every read with a
# ChecksumException: the census of damage could not read the segment, so recovery failed as if the store did
# (exit 6) and the location stayed damaged for good. replctl checks its own files itself (DR0): the catalog
# holds each data file's size, rows, seq range and SHA-256 (`logstore.inventory`), reads count their rows
# (`schema.read_checked`), and `log verify` compares digests. So the side files are not read: a changed file
# is read as it is and found damaged by those checks, and recovery keeps what it still holds (DR1). Only the
# `file:` scheme's checksums are affected; remote stores keep their own. Set for classic sessions and the
# managed engine (`tuned_conf`); a Spark Connect server started elsewhere keeps its own setting.
STORE_CONF: dict[str, str] = {"spark.hadoop.fs.file.checksum.verify": "false"}
# Spark's log4j output: errors only, on stderr (see the file for why).
_LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")


@dataclass(frozen=True)
class SparkSettings:
    """How to reach Spark: a master URL (classic) or a Spark Connect URL, plus extra configuration."""

    master: str = "local[*]"
    remote: str | None = None  # Spark Connect, `sc://host:port`
    conf: tuple[tuple[str, str], ...] = ()
    home: Path = field(default_factory=lambda: Path(".replctl"))  # replctl home, for the CDS archive
    tuned: bool = True  # the cold-start tuning below; off only to measure it
    cds: bool = True  # the JVM class-data-sharing archive (classic sessions only)
    java_options: tuple[str, ...] = ()  # extra driver JVM options, after the tuned ones
    managed: bool = False  # `remote` is the managed engine on loopback (`replctl engine start`)

    def cache_key(self) -> tuple[Any, ...]:
        """What identifies an equivalent session (the home only locates caches)."""
        return (self.master, self.remote, self.conf, self.tuned, self.cds, self.java_options, self.managed)


# The tag of this process's operations on a Spark Connect server (`_build_connect`).
_CONNECT_TAG = f"replctl-{os.getpid()}"

_session: SparkSession | None = None
_session_key: tuple[Any, ...] | None = None
# The log that explains a Spark failure: the driver log of a local JVM, or the managed engine's log.
_failure_log: Path | None = None
# The session's Spark Connect server, masked, and whether it is the managed engine; None for a classic session.
_connect: tuple[str, bool] | None = None
# The managed engine the session talks to (`engine_gone`): the replctl home that records it, its address, and
# the record of the server it connected to (None when the home recorded no engine at that address then).
_engine_at: tuple[Path, str, EngineRecord | None] | None = None


def get_session(settings: SparkSettings) -> SparkSession:
    """The process-wide SparkSession for `settings`, built on first use and then reused.

    The CLI may be invoked many times in one process (CliRunner); each call reuses the session. Asking for
    different settings stops the cached session first (one SparkContext per JVM).
    """
    global _session, _session_key
    key = settings.cache_key()
    # Fail before giving up a working session: a typo must not cost the next command a cold start.
    if settings.remote:
        _check_connect_dependencies(settings)
        if key != _session_key:
            wait_for_connect(settings.remote)
    else:
        check_master(settings.master)
    if _session is not None:
        if key == _session_key and not _is_stopped(_session):
            return _session
        with contextlib.suppress(Exception):
            _session.stop()
        _session = None
    # Read before connecting: a server restarted on the same port after this read is another one (`engine_gone`).
    recorded = _recorded_engine(settings) if settings.remote else None
    session = _build_connect(settings) if settings.remote else _build_classic(settings)
    # pyspark logs every analysis error with its JVM stack trace before raising it; replctl reports the
    # error itself (translated at the boundary), so the duplicate only buries the message on stderr.
    logging.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)
    _session, _session_key = session, key
    global _failure_log, _connect, _engine_at
    if settings.remote:
        # The managed engine's log explains a failure when `remote` is the engine recorded under the home.
        _failure_log = Path(recorded.log) if recorded is not None else None
    else:
        _failure_log = driver_log(settings.home)
    _connect = (mask_url(settings.remote), settings.managed) if settings.remote else None
    _engine_at = (
        (Path(settings.home), settings.remote, recorded) if settings.remote and settings.managed else None
    )
    return session


def _recorded_engine(settings: SparkSettings) -> EngineRecord | None:
    """The managed engine recorded under the home when it is the server at `remote` (not another one)."""
    from replctl.adapters.spark.server import read_record

    record = read_record(Path(settings.home))
    return record if record is not None and record.address == settings.remote else None


def stop_session() -> None:
    """Stop the cached session, if any (tests and long-lived hosts)."""
    global _session, _session_key
    if _session is not None:
        with contextlib.suppress(Exception):
            _session.stop()
    _session, _session_key = None, None


def tuned_conf(settings: SparkSettings) -> dict[str, str]:
    """The configuration a classic session (or the managed engine) is built with: tuning first, then the
    user's `conf`, then what replctl's correctness needs (`FORCED_CONF`, `STORE_CONF`)."""
    conf: dict[str, str] = {}
    if settings.tuned:
        cores = os.cpu_count() or 2
        conf.update(
            {
                "spark.ui.enabled": "false",
                "spark.ui.showConsoleProgress": "false",
                "spark.eventLog.enabled": "false",
                # Logs are small per job; a few partitions per core avoid scheduling hundreds of tiny tasks.
                "spark.sql.shuffle.partitions": str(max(2, 2 * cores)),
                "spark.sql.catalogImplementation": "in-memory",
                "spark.sql.session.timeZone": "UTC",
            }
        )
        if settings.master.startswith("local"):
            # A local driver needs no network name; on a cluster, executors must reach the driver's real host.
            conf.update({"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"})
        java_options = [
            _JVM_LOG_OPTIONS,
            _JIT_OPTIONS,
            _GC_OPTIONS,
            f"-Dlog4j2.configurationFile=file:{_LOG4J_CONFIG}",
        ]
        if settings.cds:
            java_options.append(_cds_option(settings.home))
        conf["spark.driver.extraJavaOptions"] = " ".join([*java_options, *settings.java_options])
    elif settings.java_options:
        conf["spark.driver.extraJavaOptions"] = " ".join(settings.java_options)
    conf.update(dict(settings.conf))
    conf.update(FORCED_CONF)
    conf.update(STORE_CONF)
    return conf


def _is_stopped(session: SparkSession) -> bool:
    # Classic sessions expose their JVM context; Connect sessions report closure themselves.
    is_stopped = getattr(session, "is_stopped", None)
    if isinstance(is_stopped, bool):
        return is_stopped
    jsc = getattr(getattr(session, "_sc", None), "_jsc", "connect")
    return jsc is None


def check_master(master: str) -> None:
    """Refuse (exit 2) a master URL Spark would not accept, before a JVM is started for it."""
    if not _MASTER.match(master):
        raise InvalidInput(f"not a Spark master URL: {master!r}", code="bad-spark-master", hint=MASTER_HINT)


def _build_classic(settings: SparkSettings) -> SparkSession:
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        raise EnvironmentFailure("cannot start Spark: no Java runtime found", code="spark", hint=JAVA_HINT)
    if settings.master.startswith("local"):
        # A local driver talks to itself: without this Spark warns that the host name resolves to loopback.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:  # pragma: no cover - pyspark is a dependency
        raise EnvironmentFailure(f"cannot import pyspark: {exc}", code="spark") from exc
    builder: Any = SparkSession.builder.master(settings.master).appName("replctl")
    conf = tuned_conf(settings)
    for k, v in conf.items():
        builder = builder.config(k, v)
    # PySpark replaces the SIGINT handler with one that calls into py4j from inside the signal handler; the
    # CLI owns Ctrl-C (cli.interrupt, issue 18), so the handler in place before is put back.
    sigint = (
        signal.getsignal(signal.SIGINT) if threading.current_thread() is threading.main_thread() else None
    )
    try:
        _launch_quiet_gateway(settings, conf)
        session: SparkSession = builder.getOrCreate()
    except Exception as exc:
        # A local driver that does not start is the Java runtime's fault; a cluster's may be its master's.
        hint = JAVA_HINT
        if not settings.master.startswith("local"):
            hint = f"check that the master {settings.master} is up and reachable from here; or {JAVA_HINT}"
        raise EnvironmentFailure(
            f"cannot start Spark ({settings.master}): {exc}; driver log: {driver_log(settings.home)}",
            code="spark",
            hint=hint,
        ) from exc
    finally:
        if sigint is not None:
            signal.signal(signal.SIGINT, sigint)
    if settings.tuned and settings.cds:
        _promote_archive_at_exit(session, settings.home)
    return session


def cancel_running_jobs() -> None:
    """Cancel every job of this process's session, if it started one (an interrupted command's jobs): those of
    its SparkContext, or on a Spark Connect server (the managed engine) the operations it tagged, which the
    server would otherwise run to the end."""
    if "pyspark" not in sys.modules:
        return
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    # Best effort, both: the process is ending on Ctrl-C anyway.
    if context is not None:
        with contextlib.suppress(Exception):
            context.cancelAllJobs()
    if _session is not None and _connect is not None:
        with contextlib.suppress(Exception):
            _session.interruptTag(_CONNECT_TAG)


def driver_log(home: Path) -> Path:
    """Where the local driver JVM's own output goes (its start-up lines, JVM and log4j warnings)."""
    return Path(home).resolve() / "driver.log"


def _launch_quiet_gateway(settings: SparkSettings, conf: dict[str, str]) -> None:
    """Start the driver JVM with its stdout and stderr going to the driver log (issue 17).

    The JVM otherwise prints its start-up lines (`Using incubator modules`, `Setting default log level`, ...)
    on the command's stderr, where operators learn to overlook replctl's own warnings, and anything it printed
    on stdout would break `--json`. pyspark keeps one gateway per process: once it is up, later sessions reuse
    it and this does nothing.
    """
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:
        return
    spark_conf = SparkConf(loadDefaults=False).setMaster(settings.master).setAppName("replctl")
    for k, v in conf.items():
        spark_conf.set(k, v)
    log = driver_log(settings.home)
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        out.write(f"--- replctl pid {os.getpid()}: driver JVM for {settings.master}\n".encode())
        out.flush()
        # pyspark leaves launch_gateway unannotated.
        gateway = launch_gateway(spark_conf, popen_kwargs={"stdout": out, "stderr": out})  # type: ignore[no-untyped-call]
    SparkContext._ensure_initialized(gateway=gateway, conf=spark_conf)


def _check_connect_dependencies(settings: SparkSettings) -> None:
    # pyspark's Connect client needs these; they are optional for replctl (classic sessions do not).
    missing = [m for m in ("pandas", "pyarrow", "grpc", "google.protobuf") if not _importable(m)]
    if missing:
        raise EnvironmentFailure(
            f"Spark Connect ({mask_url(settings.remote or '')}) needs the modules {', '.join(missing)}, "
            "which are not installed",
            code="spark",
            hint=CONNECT_HINT,
        )


def wait_for_connect(remote: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Make sure a Spark Connect server answers at `remote` within `timeout` seconds, else exit 6.

    First a TCP connection (a closed port fails at once), then a gRPC channel that must become ready in
    the time left (a port that accepts but does not speak Spark Connect times out). The URL is printed with
    its token masked.
    """
    shown = mask_url(remote)
    host, port = _connect_address(remote)
    deadline = time.monotonic() + timeout
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        reason = "no answer" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
        raise EnvironmentFailure(
            f"Spark Connect at {shown} does not answer: {reason}", code="spark-unreachable", hint=REMOTE_HINT
        ) from exc
    import grpc
    from pyspark.sql.connect.client import DefaultChannelBuilder

    channel = DefaultChannelBuilder(remote).toChannel()
    try:
        grpc.channel_ready_future(channel).result(timeout=max(0.1, deadline - time.monotonic()))
    except grpc.FutureTimeoutError as exc:
        raise EnvironmentFailure(
            f"Spark Connect at {shown} does not answer: nothing spoke Spark Connect within {timeout:g} s",
            code="spark-unreachable",
            hint=REMOTE_HINT,
        ) from exc
    finally:
        # Closing a gRPC channel waits for its poller (about 0.2 s, a fifth of a warm command); the probe's
        # channel has nothing in flight, so it is closed beside the command rather than before it.
        threading.Thread(target=channel.close, name="replctl-probe-close", daemon=True).start()


def _connect_address(remote: str) -> tuple[str, int]:
    """The host and port of `sc://HOST[:PORT][/;param=value...]`; anything else exits 2."""
    parsed = urlparse(remote)
    try:
        port = parsed.port
    except ValueError:
        port = -1
    if parsed.scheme != "sc" or not parsed.hostname or port == -1:
        raise InvalidInput(
            f"not a Spark Connect URL: {mask_url(remote)}",
            code="bad-spark-remote",
            hint="use sc://HOST:PORT (--spark-remote / REPLCTL_SPARK_REMOTE)",
        )
    return parsed.hostname, port or CONNECT_DEFAULT_PORT


def _build_connect(settings: SparkSettings) -> SparkSession:
    _check_connect_dependencies(settings)
    from pyspark.sql import SparkSession

    builder: Any = SparkSession.builder.remote(settings.remote or "")
    options = [*settings.conf, *FORCED_CONF.items()]
    if not settings.managed:
        for k, v in options:
            builder = builder.config(k, v)
    session: SparkSession | None = None
    try:
        # Creating the client asks the server nothing; the options given to the builder are its first calls.
        session = builder.getOrCreate()
        # Every operation this process starts carries its tag, so an interrupted command stops its own and
        # no other client's on a shared session (`cancel_running_jobs`).
        session.addTag(_CONNECT_TAG)
        if settings.managed:
            _fail_fast(session)
            for k, v in options:
                _set_option(session, k, v)
    except Exception as exc:
        if session is not None:
            # pyspark keeps the session it created as the process's default: the next getOrCreate would hand
            # back this dead one. Nothing to release on a server that does not answer.
            session.release_session_on_close = False  # type: ignore[attr-defined]
            session.stop()
        # A gRPC error's text is its multi-line repr (`<_InactiveRpcError of RPC ...>`): not for the operator.
        reason = "it does not answer" if unreachable(exc) else _first_line(exc)
        raise EnvironmentFailure(
            f"cannot reach Spark Connect at {mask_url(settings.remote or '')}: {reason}",
            code="spark-unreachable",
            hint=REMOTE_HINT,
        ) from exc
    return session


def _fail_fast(session: SparkSession) -> None:
    """A session on the managed engine gives up within seconds on a server that does not answer.

    The client retries an unreachable server for at least ten minutes, which suits a cluster's server that
    restarts. The managed engine runs on this machine: refused means stopped, so a command fails (exit 6,
    nothing committed by the failing step) within seconds instead of hanging; the session's options are set
    after this, since an engine stopped while a command starts would otherwise hang at the first of them."""
    from pyspark.sql.connect.client.retries import DefaultPolicy

    session.client.set_retry_policies([DefaultPolicy(max_retries=4, max_backoff=2000)])
    # The client also warns on stderr when it gives up; replctl reports the failure itself (exit 6).
    warnings.filterwarnings("ignore", message=r"\[RETRIES_EXCEEDED\]", category=UserWarning)


def _set_option(session: SparkSession, key: str, value: str) -> None:
    """Set one session option as the builder would: one the server holds fixed (a static setting) is left as
    it is, as the builder leaves it; a server that does not answer is raised."""
    try:
        session.conf.set(key, value)
    except Exception as exc:
        if unreachable(exc):
            raise


def _importable(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


# --- class-data-sharing archive ------------------------------------------------------------------------


def archive_path(home: Path) -> Path:
    """Where the driver's CDS archive lives; named by Spark version, as it is tied to the jars."""
    import pyspark

    return Path(home).resolve() / f"spark-cds-{pyspark.__version__}.jsa"


def _cds_option(home: Path) -> str:
    final = archive_path(home)
    if final.is_file() and final.stat().st_size > 0:
        return f"-XX:SharedArchiveFile={final}"
    final.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_archives(final)
    return f"-XX:ArchiveClassesAtExit={final}.tmp-{os.getpid()}"


def _remove_stale_archives(final: Path) -> None:
    # Temporary archives of processes that died before promoting theirs are garbage.
    for tmp in final.parent.glob(final.name + ".tmp-*"):
        pid = tmp.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(OSError):
                tmp.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _promote_archive_at_exit(session: SparkSession, home: Path) -> None:
    """Once this process ends, let the driver JVM exit, then move its fresh archive into place."""
    final = archive_path(home)
    tmp = Path(f"{final}.tmp-{os.getpid()}")
    gateway = getattr(getattr(session, "_sc", None), "_gateway", None)
    proc = getattr(gateway, "proc", None)
    if proc is None or final.exists():
        return

    def promote() -> None:
        # The JVM exits when its stdin closes (pyspark's gateway protocol) and writes the archive on exit.
        with contextlib.suppress(Exception):
            session.stop()
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(timeout=120)
        except Exception:
            return
        if proc.returncode == 0 and tmp.is_file() and tmp.stat().st_size > 0 and not final.exists():
            with contextlib.suppress(OSError):
                tmp.replace(final)
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)

    atexit.register(promote)


@contextlib.contextmanager
def spark_failures(what: str) -> Iterator[None]:
    """Translate a failing Spark call into `EnvironmentFailure` (replctl's own errors pass through).

    Adapters translate every foreign exception at the boundary (errors.py); `what` names the job for the
    operator, e.g. "replication pass A→B".
    """
    try:
        yield
    except ReplctlError:
        raise
    except Exception as exc:
        # grpc: a Spark Connect server that went away mid-command (the client gives up after its retries).
        if type(exc).__module__.startswith(("pyspark", "py4j", "grpc")):
            raise spark_failure(what, exc) from exc
        raise


def spark_failure(what: str, exc: BaseException) -> EnvironmentFailure:
    """The error (exit 6) for a failed Spark call: its root cause in one line, not py4j's call site, and the
    log that explains it.

    A failed write reaches Python as "An error occurred while calling o108.parquet", with the Java
    exception and its causes below; the last `Caused by:` is what went wrong (no space left on the device,
    a read-only file system). A cause in Java's or Hadoop's file classes is the store's fault.
    """
    if _connect is not None and (unreachable(exc) or engine_gone(exc)):
        return connect_lost(what)
    text = str(exc).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    causes = [line.removeprefix("Caused by:").strip() for line in lines if line.startswith("Caused by:")]
    if causes:
        root = causes[-1]
    elif lines and lines[0].startswith("An error occurred while calling") and len(lines) > 1:
        root = lines[1].removeprefix(":").strip()
    else:
        root = lines[0] if lines else type(exc).__name__
    if root.startswith(_STORE_FAULTS):
        return EnvironmentFailure(
            f"{what} failed in the store: {root}{failure_log_note()}", code="store", hint=STORE_HINT
        )
    return EnvironmentFailure(f"{what} failed in Spark: {root}{failure_log_note()}", code="spark")


def raise_if_connect_lost(exc: BaseException, what: str) -> None:
    """Raise `connect_lost(what)` from `exc` when it says the Spark Connect server is gone: a server that went
    away says nothing about what was asked (a filter, a read), and must not be reported as its fault."""
    if unreachable(exc) or engine_gone(exc):
        raise connect_lost(what) from exc


# What the managed engine answers once `replctl engine stop` stopped its SparkContext while a job ran or was
# about to (SparkContext.assertNotStopped, SparkContext.runJob, DAGScheduler.cleanUpAfterSchedulerStop): the
# server is going away, though its answer came through.
_CONTEXT_STOPPED = re.compile(
    r"Cannot call methods on a stopped SparkContext|SparkContext (?:has been|was) shut ?down"
)


def engine_gone(exc: BaseException) -> bool:
    """Whether `exc`, raised on the managed engine, came from an engine that is going or gone: its answer says
    its SparkContext is stopped, or the engine is no longer up (stopped, killed, replaced by another one, also
    one restarted on the same port: a new pid and start time in the record, `EngineRecord.same_server`).

    A job the engine was running when `replctl engine stop` landed fails with the server's own answer, not a
    transport error (`unreachable`): reported as Spark's fault it gave the operator neither the engine's
    state nor the re-run that resumes the command."""
    if _engine_at is None:
        return False
    if _CONTEXT_STOPPED.search(str(exc)):
        return True
    from replctl.adapters.spark.server import settled_state

    home, address, connected = _engine_at
    found = settled_state(home)
    if not found.up or found.record is None:
        return True
    if connected is not None:
        # The session of the server it connected to is gone with that server, even where another one now
        # answers on its port: pyspark refuses the new server's session (INVALID_HANDLE.SESSION_CHANGED).
        return not found.record.same_server(connected)
    return found.record.address != address


def connect_lost(what: str) -> EnvironmentFailure:
    """The error (exit 6) for `what` when the session's Spark Connect server stopped answering mid-command.

    The client's error is a gRPC status whose text is a multi-line repr (`<_InactiveRpcError of RPC that
    terminated with: ...>`), or pyspark's RETRIES_EXCEEDED over one: what the operator needs is which server
    went, where its log is, and that a re-run resumes.
    """
    address, managed = _connect if _connect is not None else ("?", False)
    if managed:
        return EnvironmentFailure(
            f"{what} failed: the managed Spark engine at {address} stopped answering{failure_log_note()}",
            code="spark",
            hint=ENGINE_LOST_HINT,
        )
    return EnvironmentFailure(
        f"{what} failed: the Spark Connect server at {address} stopped answering{failure_log_note()}",
        code="spark",
        hint=REMOTE_LOST_HINT,
    )


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def failure_log_note() -> str:
    """` (Spark's log: PATH)` naming the log that explains a Spark failure, or "" when there is none."""
    return f" (Spark's log: {_failure_log})" if _failure_log is not None else ""


# gRPC status codes of a call the server never answered: it is down, or went away during the call.
_SERVER_GONE = frozenset({"UNAVAILABLE", "CANCELLED"})


def unreachable(exc: BaseException) -> bool:
    """Whether `exc` (or what caused it) says the Spark Connect server cannot be reached, not what was asked."""
    seen: BaseException | None = exc
    while seen is not None:
        if type(seen).__module__.startswith("grpc"):
            return True
        error_class = getattr(seen, "getCondition", None) or getattr(seen, "getErrorClass", None)
        if callable(error_class) and error_class() == "RETRIES_EXCEEDED":
            return True
        status = getattr(seen, "getGrpcStatusCode", None)
        if callable(status) and getattr(status(), "name", None) in _SERVER_GONE:
            return True
        # pyspark raises the server's answer (a failed cast, an analysis error) `from None` inside its handler of
        # the RPC error: that transport error is context it suppressed, not a cause, and says nothing of a server
        # gone. Only an unsuppressed context is followed.
        seen = (
            seen.__cause__
            if seen.__cause__ is not None
            else None
            if seen.__suppress_context__
            else seen.__context__
        )
    return False
