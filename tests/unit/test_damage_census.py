"""The census of damage: catalogued segments against the files the store holds (pure, DR0)."""

from __future__ import annotations

from replctl.core.damage import census, describe
from replctl.core.model import Segment


def seg(i: int, files: tuple[tuple[str, int], ...] | None) -> Segment:
    return Segment(
        id=i, location="B", path=f"B/s{i}", seq_lo=i * 10, seq_hi=i * 10 + 9, count=10, files=files
    )


def test_a_segment_whose_folder_is_gone_or_empty_is_missing() -> None:
    segments = [seg(1, (("p0", 5),)), seg(2, None), seg(3, (("p0", 5),))]
    found = census(segments, {"B/s1": {"p0": 5}, "B/s2": {}})
    assert [(d.segment.id, d.reason) for d in found] == [(2, "missing"), (3, "missing")]


def test_a_renamed_resized_lost_or_stray_file_makes_the_files_differ() -> None:
    recorded = (("p0", 5), ("p1", 7))
    segments = [seg(i, recorded) for i in range(1, 5)]
    stored = {
        "B/s1": {"p0": 5, "p9": 7},  # another name
        "B/s2": {"p0": 5, "p1": 8},  # another size
        "B/s3": {"p0": 5},  # a file lost
        "B/s4": {"p0": 5, "p1": 7, "stray": 3},  # a file that is not the segment's
    }
    assert [(d.segment.id, d.reason) for d in census(segments, stored)] == [
        (1, "files differ"),
        (2, "files differ"),
        (3, "files differ"),
        (4, "files differ"),
    ]


def test_a_whole_segment_recorded_or_not_is_no_damage() -> None:
    segments = [seg(1, (("p0", 5),)), seg(2, None)]
    assert census(segments, {"B/s1": {"p0": 5}, "B/s2": {"anything": 1}}) == []


def test_the_description_names_the_first_damaged_segment() -> None:
    found = census([seg(1, None), seg(2, None)], {"B/s1": {"p0": 1}})
    assert describe("B", found) == (
        "B's log is damaged: 1 catalogued segment(s) from seq 20 on are missing from the store or differ "
        "from their catalog rows (missing at B/s2)"
    )
