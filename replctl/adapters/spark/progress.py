"""A Rich progress display of running Spark stages on stderr, fed by Spark's status tracker.

A daemon thread polls `statusTracker()` twice a second, so jobs are not slowed and no listener is installed in
the JVM. Spark Connect sessions have no SparkContext to ask; there the display stays silent.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

POLL_SECONDS = 0.5


class StageProgress:
    """Shows each active stage as `stage N: done/total tasks` while a command runs Spark jobs."""

    def __init__(self, spark: Any) -> None:
        self._tracker = _tracker(spark)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # Every stage the display has shown, with the (done, total) tasks it last showed: what an operator saw.
        self.shown: dict[int, tuple[int, int]] = {}

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
                        tasks[sid] = progress.add_task(
                            f"stage {sid} {info.name[:40]}", total=int(info.numTasks)
                        )
                    progress.update(tasks[sid], completed=int(info.numCompletedTasks))
                    self.shown[sid] = (int(info.numCompletedTasks), int(info.numTasks))
                active = {int(i.stageId) for i in stages if i is not None}
                for sid in [s for s in tasks if s not in active]:
                    progress.remove_task(tasks.pop(sid))


def _tracker(spark: Any) -> Any:
    try:
        return spark.sparkContext.statusTracker()
    except Exception:  # Spark Connect: no SparkContext
        return None
