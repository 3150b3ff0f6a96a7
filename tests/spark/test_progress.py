"""The stage progress display follows a real job while it runs and stops cleanly."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from replctl.adapters.spark.progress import StageProgress

PARTITIONS = 4
# Only ends a test whose display never shows the stage (it then fails); no outcome depends on timing.
GIVE_UP_S = 120


def test_progress_shows_a_running_stage_with_its_tasks_and_stops(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql.functions import udf

    release = tmp_path / "release"

    def wait_for_release(value: int) -> int:
        # Each task waits until the test has seen the display show the stage: the job cannot end before a poll.
        while not release.exists():
            time.sleep(0.05)
        return value

    held = udf(wait_for_release, "long", useArrow=False)  # a plain Python UDF: no type hints to infer from

    display = StageProgress(spark).start()
    frame = spark.range(0, PARTITIONS, 1, PARTITIONS).select(held("id").alias("id"))
    results: list[list[int]] = []
    job = threading.Thread(target=lambda: results.append(sorted(r.id for r in frame.collect())), daemon=True)
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
    assert results == [list(range(PARTITIONS))]
    display.stop()
    assert display._thread is None
