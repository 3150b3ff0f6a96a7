"""A pass reads exactly its source's catalogued files and counts them (issue 19, cases 4-5; DR0).

Each story changes the source segment after its row was catalogued (after the census) and before the pass
reads it: a file removed, or cut short under its own name, or a file added. A pass whose read differs from
the rows raises DamagedLog and leaves no segment behind, so the service has nothing to commit: no progress,
no CVV, no deletion decision is ever made from a partial read. A file the row does not name is never read.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from segment_rows import catalogued

from replctl.adapters.logstore import LogStore
from replctl.adapters.spark.jobs import append_events, read_log, replicate_pass
from replctl.core.jobs import PassResult, PassSpec, SegmentStats
from replctl.core.model import Segment
from replctl.errors import DamagedLog

pytestmark = pytest.mark.spark


def _two_file_segment(spark: Any, store: LogStore) -> tuple[Segment, list[str]]:
    """A's segment of A1..A6 in two data files (A1..A3, A4..A6) and its catalog row, as a pass sees it."""
    first, second = store.new_segment_path("A", 1), store.new_segment_path("A", 4)
    append_events(
        spark, store, "A", events=[{"key": f"a{i}"} for i in (1, 2, 3)], start_seq=1, cvv={}, out_rel=first
    )
    append_events(
        spark,
        store,
        "A",
        events=[{"key": f"a{i}"} for i in (4, 5, 6)],
        start_seq=4,
        cvv={"A": 3},
        out_rel=second,
    )
    (moved,) = store.segment_files(second) or {}
    shutil.move(store.local_path(f"{second}/{moved}"), store.local_path(f"{first}/{moved}"))
    store.remove(second)
    row = catalogued(store, first)
    assert row.count == 6 and row.files is not None and len(row.files) == 2
    # The file holding A4..A6, whichever name sorts first.
    later = next(f.name for f in row.files if f.seq_lo == 4)
    return row, [f.name for f in row.files if f.name != later] + [later]


def _spec(source: Segment, out_rel: str) -> PassSpec:
    return PassSpec([source], 0, {}, None, [], 0, out_rel, ["A"])


def _cut_short(store: LogStore, relative: str) -> None:
    """Rewrite one data file in place with its first row only (a torn write that keeps the name)."""
    path = store.local_path(relative)
    table = pq.read_table(path)
    pq.write_table(table.filter(pc.field("seq") == pc.min(table.column("seq"))), path)


@pytest.mark.parametrize("damage", ["removed", "cut short"])
def test_a_catalogued_file_lost_after_the_census_refuses_the_pass(
    spark: Any, store: LogStore, damage: str
) -> None:
    source, (_, later) = _two_file_segment(spark, store)
    lost = f"{source.path}/{later}"
    if damage == "removed":
        store.local_path(lost).unlink()
    else:
        _cut_short(store, lost)
    out = store.new_segment_path("B", 1)
    with pytest.raises(DamagedLog) as refused:
        replicate_pass(spark, store, _spec(source, out))
    assert refused.value.location == "A"
    assert refused.value.message == (
        f"A's log is damaged: {lost} is missing or of another size than catalogued; nothing was decided or written "
        "from the log (DR0)"
    )
    assert refused.value.hint == "replctl recover location A"
    assert not store.exists(out)  # nothing written: the service has no segment, progress or CVV to commit


@pytest.mark.parametrize("change", ["removed", "added"])
def test_a_folder_read_compares_its_rows_with_the_catalog_row(
    spark: Any, store: LogStore, change: str
) -> None:
    # A row committed before rows named their files is read as its folder: the count is then what finds a
    # file removed (3 of 6 events) or one copied in (9 of 6) between the census and the read.
    named, (earlier, later) = _two_file_segment(spark, store)
    source = replace(named, files=None)
    if change == "removed":
        store.local_path(f"{source.path}/{later}").unlink()
    else:
        shutil.copy(
            store.local_path(f"{source.path}/{earlier}"),
            store.local_path(f"{source.path}/part-stray.parquet"),
        )
    out = store.new_segment_path("B", 1)
    with pytest.raises(DamagedLog) as refused:
        replicate_pass(spark, store, _spec(source, out))
    got = 3 if change == "removed" else 9
    assert refused.value.message == (
        f"A's log is damaged: reading 1 segment(s) from seq 1 on gave {got} events, their catalog rows hold 6; "
        "nothing was decided or written from the read (DR0)"
    )
    assert not store.exists(out)  # the written segment was removed before anything could commit it


def test_a_file_added_to_a_catalogued_segment_is_never_read(spark: Any, store: LogStore) -> None:
    # Issue 19 case 5: a part file copied into the folder after the census (here A1..A3 again) is not named
    # by the row, so the pass reads A1..A6 once and writes them once; no duplicate identity reaches B (I2).
    source, (earlier, _) = _two_file_segment(spark, store)
    shutil.copy(
        store.local_path(f"{source.path}/{earlier}"), store.local_path(f"{source.path}/part-stray.parquet")
    )
    out = store.new_segment_path("B", 1)
    result = replicate_pass(spark, store, _spec(source, out))
    assert result == PassResult(6, 6, 0, 0, None, 6, SegmentStats(6, 1, 6, {"A": 6}))
    written = read_log(spark, store, [catalogued(store, out)])
    assert [(e["seq"], e["origin"], e["origin_time"], e["key"]) for e in written] == [
        (i, "A", i, f"a{i}") for i in range(1, 7)
    ]
