"""The census of damage: catalogued segments against the files the store holds (pure, DR0)."""

from __future__ import annotations

from replctl.core.damage import census, copy_differs, describe
from replctl.core.model import Segment, SegmentFile


def seg(i: int, files: tuple[tuple[str, int], ...] | None) -> Segment:
    recorded = None if files is None else tuple(SegmentFile(name, size) for name, size in files)
    return Segment(
        id=i, location="B", path=f"B/s{i}", seq_lo=i * 10, seq_hi=i * 10 + 9, count=10, files=recorded
    )


def test_a_segment_whose_folder_is_gone_or_empty_is_missing() -> None:
    segments = [seg(1, (("p0", 5),)), seg(2, None), seg(3, (("p0", 5),))]
    found = census(segments, {"B/s1": {"p0": 5}, "B/s2": {}})
    assert [(d.segment.id, d.reason) for d in found] == [(2, "missing"), (3, "missing")]


def test_a_renamed_resized_or_lost_file_makes_the_files_differ() -> None:
    recorded = (("p0", 5), ("p1", 7))
    segments = [seg(i, recorded) for i in range(1, 4)]
    stored = {
        "B/s1": {"p0": 5, "p9": 7},  # another name
        "B/s2": {"p0": 5, "p1": 8},  # another size
        "B/s3": {"p0": 5},  # a file lost
    }
    assert [(d.segment.id, d.reason) for d in census(segments, stored)] == [
        (1, "files differ"),
        (2, "files differ"),
        (3, "files differ"),
    ]


def test_a_stray_file_beside_the_catalogued_ones_is_garbage_not_damage() -> None:
    # Issue 19, case 5: readers read only the row's files, so a copied-in file is never read; calling it
    # damage would send the operator to a recovery that finds nothing lost.
    assert census([seg(1, (("p0", 5),))], {"B/s1": {"p0": 5, "stray": 5}}) == []


def test_a_copy_is_compared_with_its_row_by_rows_size_and_digest() -> None:
    row = Segment(
        1,
        "B",
        "B/s1",
        1,
        4,
        4,
        files=(SegmentFile("p0", 5, 2, 1, 2, "aa"), SegmentFile("p1", 5, 2, 3, 4, "bb")),
    )
    same = (SegmentFile("p0", 5, 2, 1, 2, "aa"), SegmentFile("p1", 5, 2, 3, 4, "bb"))
    assert copy_differs(row, same) is None
    assert copy_differs(row, same[:1]) == "its files hold 2 events, its catalog row 4"
    other = (same[0], SegmentFile("p1", 5, 2, 3, 4, "cc"))
    assert copy_differs(row, other) == "p1 differs from its catalog row (size or SHA-256)"


def test_a_whole_segment_recorded_or_not_is_no_damage() -> None:
    segments = [seg(1, (("p0", 5),)), seg(2, None)]
    assert census(segments, {"B/s1": {"p0": 5}, "B/s2": {"anything": 1}}) == []


def test_the_description_names_the_first_damaged_segment() -> None:
    found = census([seg(1, None), seg(2, None)], {"B/s1": {"p0": 1}})
    assert describe("B", found) == (
        "B's log is damaged: 1 catalogued segment(s) from seq 20 on are missing from the store or differ "
        "from their catalog rows (missing at B/s2)"
    )
