"""A Rich progress display of running Spark stages on stderr, fed by Spark's status tracker.

A daemon thread polls `statusTracker()` twice a second, so jobs are not slowed and no listener is installed in
the JVM. Spark Connect sessions have no SparkContext to ask; there the display stays silent.

Each replctl step that runs Spark jobs is `described` (issue 18): its jobs carry the step's words as their
Spark job description (the Spark UI shows it; on Spark Connect, a session tag), and the display names the
step instead of the stage's call site ("stage 0 parquet at NativeMethodAccessorImpl.java" told nothing). The
steps run their jobs synchronously in the command's thread, so a stage the display first sees while a step is
described is one of that step's.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

POLL_SECONDS = 0.5
DESCRIPTION = "spark.job.description"


@contextmanager
def described(spark: Any, text: str, display: StageProgress | None = None) -> Iterator[None]:
    """Inside the block, Spark jobs started by this thread carry `text` (Spark's job description, or a tag
    on Spark Connect) and `display` names `text` for their stages; the previous description comes back after.
    Best effort: a session that cannot take a description runs its jobs all the same."""
    context = _context(spark)
    previous = display.step if display is not None else None
    tag: str | None = None
    before: str | None = None
    try:
        if context is not None:
            before = context.getLocalProperty(DESCRIPTION)
            context.setJobDescription(text)
        else:
            tag = text.replace(",", ";") or None  # a Connect tag holds no comma and is never empty
            if tag is not None:
                spark.addTag(tag)
    except Exception:  # the session is stopping, or this Spark has no tags: the jobs still run
        context, tag = None, None
    if display is not None:
        display.step = text
    try:
        yield
    finally:
        if display is not None:
            display.step = previous
        try:
            if context is not None:
                context.setJobDescription(before)
            elif tag is not None:
                spark.removeTag(tag)
        except Exception:  # as above: best effort
            pass


class StageProgress:
    """Shows each active stage as `stage N: done/total tasks` while a command runs Spark jobs."""

    def __init__(self, spark: Any) -> None:
        self._tracker = _tracker(spark)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # Every stage the display has shown, with the (done, total) tasks it last showed: what an operator saw.
        self.shown: dict[int, tuple[int, int]] = {}
        # The replctl step running now (`described`), and the label each stage was shown with.
        self.step: str | None = None
        self.labels: dict[int, str] = {}

    def start(self) -> StageProgress:
        """Begin polling (no-op without a status tracker)."""
        if self._tracker is not None and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="replctl-progress", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop polling and clear the display."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
            self._thread = None

    def _run(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        console = Console(file=sys.stderr)
        tasks: dict[int, Any] = {}
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        ) as progress:
            while not self._stop.wait(POLL_SECONDS):
                try:
                    stages = [self._tracker.getStageInfo(i) for i in self._tracker.getActiveStageIds()]
                except Exception:  # the session is stopping; the display is best effort
                    return
                for info in stages:
                    if info is None:
                        continue
                    sid = int(info.stageId)
                    if sid not in tasks:
                        self.labels[sid] = self.step or f"stage {sid} {info.name[:40]}"
                        tasks[sid] = progress.add_task(self.labels[sid], total=int(info.numTasks))
                    progress.update(tasks[sid], completed=int(info.numCompletedTasks))
                    self.shown[sid] = (int(info.numCompletedTasks), int(info.numTasks))
                active = {int(i.stageId) for i in stages if i is not None}
                for sid in [s for s in tasks if s not in active]:
                    progress.remove_task(tasks.pop(sid))


def _tracker(spark: Any) -> Any:
    context = _context(spark)
    return None if context is None else context.statusTracker()


def _context(spark: Any) -> Any:
    """The session's SparkContext, or None on Spark Connect (which has none)."""
    try:
        return spark.sparkContext
    except Exception:  # Spark Connect: no SparkContext
        return None
