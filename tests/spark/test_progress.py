"""The stage progress display follows a real job while it runs and stops cleanly; a described step names its
stages (issue 18)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from replctl.adapters.spark.progress import StageProgress, described

PARTITIONS = 4
# Only ends a test whose display never shows the stage (it then fails); no outcome depends on timing.
GIVE_UP_S = 120


def _held_job(
    spark: Any, tmp_path: Path, display: StageProgress, wrap: Callable[[Callable[[], None]], None]
) -> list[list[int]]:
    """Run a job of PARTITIONS tasks that wait until `display` has shown their stage, through `wrap` in a
    thread of its own; checks the display saw no task done; returns the job's rows."""
    from pyspark.sql.functions import udf

    release = tmp_path / "release"

    def wait_for_release(value: int) -> int:
        # Each task waits until the test has seen the display show the stage: the job cannot end before a poll.
        while not release.exists():
            time.sleep(0.05)
        return value

    held = udf(wait_for_release, "long", useArrow=False)  # a plain Python UDF: no type hints to infer from

    frame = spark.range(0, PARTITIONS, 1, PARTITIONS).select(held("id").alias("id"))
    results: list[list[int]] = []
    job = threading.Thread(
        target=lambda: wrap(lambda: results.append(sorted(r.id for r in frame.collect()))), daemon=True
    )
    job.start()
    try:
        deadline = time.monotonic() + GIVE_UP_S
        while not any(total == PARTITIONS for _, total in display.shown.values()):
            assert time.monotonic() < deadline, f"the display never showed the held stage: {display.shown}"
            time.sleep(0.1)
        # Shown while its tasks were held: none of them can have completed yet.
        (done,) = [done for done, total in display.shown.values() if total == PARTITIONS]
        assert done == 0
    finally:
        release.touch()
        job.join(GIVE_UP_S)
    return results


def test_progress_shows_a_running_stage_with_its_tasks_and_stops(spark: Any, tmp_path: Path) -> None:
    display = StageProgress(spark).start()
    results = _held_job(spark, tmp_path, display, lambda collect: collect())
    assert results == [list(range(PARTITIONS))]
    display.stop()
    assert display._thread is None


def test_a_described_step_names_its_stages_and_its_spark_jobs(spark: Any, tmp_path: Path) -> None:
    # Issue 18: the line read "stage 0 parquet at NativeMethodAccessorImpl.java"; it names the replctl step.
    step = "replicate A→B: reading A, writing B"
    context = spark.sparkContext
    seen: list[str | None] = []

    def in_step(collect: Callable[[], None]) -> None:
        with described(spark, step, display):
            seen.append(context.getLocalProperty("spark.job.description"))
            collect()
        seen.append(context.getLocalProperty("spark.job.description"))

    display = StageProgress(spark).start()
    try:
        results = _held_job(spark, tmp_path, display, in_step)
    finally:
        display.stop()
    assert results == [list(range(PARTITIONS))]
    [held] = [sid for sid, (_, total) in display.shown.items() if total == PARTITIONS]
    assert display.labels[held] == step
    # The job carried the step as its Spark description (the Spark UI's), and the thread's is cleared after.
    assert seen == [step, None]
    assert display.step is None
