"""The stage progress display follows a real job and stops cleanly."""

from __future__ import annotations

import time
from typing import Any

from replctl.adapters.spark.progress import StageProgress


def test_progress_polls_the_status_tracker_during_a_job_and_stops(spark: Any) -> None:
    display = StageProgress(spark).start()
    assert display._thread is not None and display._thread.is_alive()
    assert spark.range(0, 200_000, 1, 4).selectExpr("sum(id)").first()[0] == 199_999 * 200_000 // 2
    time.sleep(0.6)  # at least one poll
    display.stop()
    assert display._thread is None
