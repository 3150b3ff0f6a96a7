"""The JVM a classic session starts runs with replctl's tuning (`session.tuned_conf`), asked of the JVM itself."""

from __future__ import annotations

from typing import Any


def test_the_driver_jvm_collects_with_the_throughput_collector(spark: Any) -> None:
    """`-XX:+UseParallelGC` reached the driver: its collectors are the parallel ones, not G1's."""
    beans = spark._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
    names = sorted(str(bean.getName()) for bean in beans)
    assert names == ["PS MarkSweep", "PS Scavenge"]
