"""Whether two store roots overlap (replctl.storeroots): a backup store must lie apart from the log store."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replctl.errors import InvalidInput
from replctl.storeroots import Overlap, StoreRoot, apart_from, check_root_text, overlap, root_of

LAWS = settings(max_examples=50, deadline=None)

# Folder names a store path may hold; few letters, so that shared prefixes (`a`, `ab`) come up often.
names = st.text(alphabet="ab.-_", min_size=1, max_size=3).filter(lambda s: s not in {".", ".."})
roots = st.builds(
    StoreRoot,
    st.sampled_from(["file", "s3a", "hdfs"]),
    st.sampled_from(["", "bucket", "nn:8020"]),
    st.lists(names, max_size=4).map(tuple),
)
MIRROR = {
    None: None,
    Overlap.SAME: Overlap.SAME,
    Overlap.INSIDE: Overlap.CONTAINS,
    Overlap.CONTAINS: Overlap.INSIDE,
}


def test_a_folder_in_the_log_store_is_inside_it_and_the_log_store_contains_it() -> None:
    logs = root_of("/srv/replctl/logs")
    assert overlap(root_of("/srv/replctl/logs/bk"), logs) is Overlap.INSIDE
    assert overlap(root_of("/srv/replctl"), logs) is Overlap.CONTAINS
    assert overlap(root_of("/"), logs) is Overlap.CONTAINS
    assert overlap(root_of("/srv/replctl/logs"), logs) is Overlap.SAME


def test_a_sibling_whose_name_starts_like_the_log_store_is_apart_from_it() -> None:
    logs = root_of("/srv/replctl/logs")
    assert overlap(root_of("/srv/replctl/logs2"), logs) is None
    assert overlap(root_of("/srv/replctl/backups"), logs) is None
    assert overlap(root_of("/srv/replctl/log"), logs) is None


@pytest.mark.parametrize(
    "text",
    [
        "/srv/replctl/logs/",
        "/srv/replctl/logs//",
        "/srv/replctl/./logs",
        "/srv/replctl/x/../logs",
        "file:///srv/replctl/logs",
        "file:///srv/replctl/logs/",
        "FILE:///srv/replctl/logs",
        "file://localhost/srv/replctl/logs",
        "file:///srv/replctl/%6Cogs",
    ],
)
def test_a_local_root_is_the_same_however_it_is_written(text: str) -> None:
    assert root_of(text) == root_of("/srv/replctl/logs")
    assert str(root_of(text)) == "/srv/replctl/logs"


def test_a_relative_root_is_taken_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert (
        overlap(root_of(".replctl/logs/bk"), root_of(str(tmp_path / ".replctl" / "logs"))) is Overlap.INSIDE
    )
    assert overlap(root_of("."), root_of(f"file://{tmp_path}/.replctl/logs/")) is Overlap.CONTAINS


def test_a_root_under_home_is_expanded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert root_of("~/logs") == root_of(str(tmp_path / "logs"))


def test_a_link_into_the_log_store_is_inside_it(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (tmp_path / "link").symlink_to(logs)
    assert overlap(root_of(str(tmp_path / "link" / "bk")), root_of(str(logs))) is Overlap.INSIDE
    assert overlap(root_of((tmp_path / "link").as_uri()), root_of(str(logs))) is Overlap.SAME


def test_remote_roots_compare_scheme_authority_and_path_as_text() -> None:
    logs = root_of("s3a://bucket/replctl/logs")
    assert overlap(root_of("s3a://bucket/replctl/logs/bk/"), logs) is Overlap.INSIDE
    assert overlap(root_of("S3A://bucket/replctl"), logs) is Overlap.CONTAINS
    assert overlap(root_of("s3a://bucket"), logs) is Overlap.CONTAINS
    assert overlap(root_of("s3a://other/replctl/logs"), logs) is None
    assert overlap(root_of("hdfs://bucket/replctl/logs"), logs) is None
    assert overlap(root_of("s3a://bucket/replctl/logs2"), logs) is None
    # Another name of the same place is not guessed at: another port, another scheme.
    assert overlap(root_of("hdfs://nn:8020/logs"), root_of("hdfs://nn/logs")) is None
    assert str(root_of("s3a://bucket/replctl/logs/")) == "s3a://bucket/replctl/logs"


def test_a_local_root_and_a_remote_one_never_overlap() -> None:
    assert overlap(root_of("/bucket/logs"), root_of("s3a://bucket/logs")) is None
    assert overlap(root_of("hdfs:///srv/logs"), root_of("/srv/logs")) is None


def test_the_folder_apart_from_the_log_store_is_its_sibling_backups() -> None:
    assert apart_from(root_of("/srv/replctl/logs")) == root_of("/srv/replctl/backups")
    assert apart_from(root_of("s3a://bucket/logs")) == root_of("s3a://bucket/backups")
    assert apart_from(root_of("/srv/backups")) == root_of("/srv/backups-backups")
    assert apart_from(root_of("/")) is None
    assert apart_from(root_of("s3a://bucket")) is None


@LAWS
@given(roots, roots)
def test_overlap_reads_the_same_both_ways(a: StoreRoot, b: StoreRoot) -> None:
    assert overlap(b, a) is MIRROR[overlap(a, b)]


@LAWS
@given(roots, st.lists(names, min_size=1, max_size=3))
def test_every_folder_below_a_root_is_inside_it(root: StoreRoot, below: list[str]) -> None:
    inner = root
    for name in below:
        inner = inner.child(name)
    assert overlap(inner, root) is Overlap.INSIDE
    assert overlap(root, inner) is Overlap.CONTAINS
    assert overlap(inner, inner) is Overlap.SAME


@LAWS
@given(roots, roots)
def test_roots_that_overlap_share_one_chain_of_parents(a: StoreRoot, b: StoreRoot) -> None:
    # Overlapping means one root is the other or one of its parents: nothing else counts as overlapping.
    def chain(root: StoreRoot) -> list[StoreRoot]:
        found = [root]
        while (up := found[-1].parent) is not None:
            found.append(up)
        return found

    assert (overlap(a, b) is not None) == (a in chain(b) or b in chain(a))


@LAWS
@given(roots, st.sampled_from(["backups", "logs", "bk"]))
def test_the_folder_apart_from_a_root_is_apart_from_it(root: StoreRoot, name: str) -> None:
    beside = apart_from(root, name)
    assert (beside is None) == (root.parent is None)
    assert beside is None or overlap(beside, root) is None


@LAWS
@given(roots, st.integers(min_value=0, max_value=3))
def test_normalising_a_written_root_again_changes_nothing(root: StoreRoot, slashes: int) -> None:
    written = str(root) + "/" * slashes
    if root.scheme == "file":
        # A local root is resolved through the file system: one under a folder that cannot be a link.
        written = "file:///nonexistent-replctl-test" + str(root) + "/" * slashes
        root = StoreRoot("file", "", ("nonexistent-replctl-test", *root.segments))
    assert root_of(written) == root
    assert root_of(str(root_of(written))) == root_of(written)


@pytest.mark.parametrize(
    "text",
    ["/srv/logs", "logs", "file:///srv/logs", "file://localhost/srv/logs", "FILE:///x", "hdfs://nn/logs"],
)
def test_roots_the_stores_read_as_written_pass_the_text_check(text: str) -> None:
    check_root_text(text, "--store")


@pytest.mark.parametrize("text", ["", "  ", "file:logs", "file://srv/logs", "file://nn:8020/x"])
def test_roots_the_stores_would_read_otherwise_than_written_are_refused(text: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        check_root_text(text, "--store")
    assert refused.value.code == "bad-option"
