"""Backups' pure decisions (rules.md BK1, BK3): manifests, pruning, recoverability."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from replctl.core.backups import (
    BackupSegment,
    CatalogIdentity,
    Manifest,
    copy_damage,
    foreign_reason,
    holds_seqs,
    newest,
    of_catalog,
    prune,
    recoverability,
    recoverability_all,
)
from replctl.core.model import (
    Change,
    ChangeKind,
    Connection,
    ConnectionState,
    Location,
    LocationState,
    SegmentFile,
)
from replctl.core.topology import TopologyState, fold
from replctl.core.vectortime import VectorTime

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def seg(path: str, lo: int, hi: int) -> BackupSegment:
    return BackupSegment(path, lo, hi, hi - lo + 1, VectorTime({"B": hi}), 100, f"sha-{path}")


def manifest(
    id_: str, location: str, at: datetime, cvv: dict[str, int], *segments: BackupSegment
) -> Manifest:
    return Manifest(
        id=id_,
        location=location,
        catalog_version=1,
        seq=max([0, *(s.seq_hi for s in segments)]),
        cvv=VectorTime(cvv),
        dvv=VectorTime(),
        deleted_upto=0,
        logical_deleted_upto=0,
        segments=segments,
        replctl_version="0",
        created_at=at.isoformat(),
        who="op",
    )


def both_ways(*pairs: tuple[str, str], filtered: tuple[str, str] | None = None) -> TopologyState:
    changes = []
    for s, t in pairs:
        for a, b in ((s, t), (t, s)):
            f = "key = 'x'" if filtered == (a, b) else None
            changes.append(Change(ChangeKind.CONNECTION_ADDED, source=a, target=b, filter=f))
    return fold(changes)


def conns(*pairs: tuple[str, str]) -> dict[tuple[str, str], Connection]:
    out = {}
    for s, t in pairs:
        out[(s, t)] = Connection(s, t, ConnectionState.ACTIVE)
        out[(t, s)] = Connection(t, s, ConnectionState.ACTIVE)
    return out


def test_bk1_a_manifest_reads_back_as_written() -> None:
    m = manifest("B-1", "B", T0, {"A": 2, "B": 3}, seg("B/seg-1", 1, 2), seg("B/seg-2", 3, 3))
    assert Manifest.from_json(m.to_json()) == m
    assert m.summary() == {
        "id": "B-1",
        "location": "B",
        "created_at": T0.isoformat(),
        "seq": 3,
        "events": 3,
        "segments": 2,
        "segments_reused": 0,
        "bytes": 200,
        "cvv": {"A": 2, "B": 3},
    }


def test_prune_keeps_every_file_a_kept_backup_still_lists() -> None:
    old = manifest("B-1", "B", T0, {}, seg("B/s1", 1, 2))
    mid = manifest("B-2", "B", T0 + timedelta(days=1), {}, seg("B/s1", 1, 2), seg("B/s2", 3, 4))
    new = manifest("B-3", "B", T0 + timedelta(days=2), {}, seg("B/s2", 3, 4), seg("B/s3", 5, 5))
    other = manifest("A-1", "A", T0, {}, seg("A/s1", 1, 1))
    decision = prune([new, old, other, mid], location="B", keep_last=1, older_than=None, now=T0)
    assert [m.id for m in decision.removed] == ["B-1", "B-2"]
    assert [m.id for m in decision.kept] == ["A-1", "B-3"]
    assert decision.files == ("B/s1",)  # B/s2 stays: B-3 lists it
    aged = prune(
        [new, old, mid], location=None, keep_last=None, older_than=timedelta(hours=35), now=new_time()
    )
    assert [m.id for m in aged.removed] == ["B-1", "B-2"] and aged.files == ("B/s1",)


def test_two_backups_in_one_second_are_ordered_by_the_catalog_version_not_the_random_suffix() -> None:
    # The ids' suffixes sort the later backup first; the catalog version it was taken at says it is newer.
    first = replace(manifest("B-20260101T000000Z-ffffff", "B", T0, {}, seg("B/s1", 1, 1)), catalog_version=4)
    later = replace(
        manifest("B-20260101T000000Z-000000", "B", T0, {}, seg("B/s1", 1, 1), seg("B/s2", 2, 2)),
        catalog_version=5,
    )
    assert newest([later, first], "B") == later
    decision = prune([later, first], location="B", keep_last=1, older_than=None, now=T0)
    assert [m.id for m in decision.removed] == [first.id]


def new_time() -> datetime:
    return T0 + timedelta(days=2, hours=12)


def test_bk3_a_location_whose_neighbour_deleted_its_events_is_recoverable_only_with_a_backup() -> None:
    state = both_ways(("A", "B"))
    a = Location("A", seq=5, cvv=VectorTime({"A": 5}), dvv=VectorTime({"A": 2}))  # b1 has not reached A
    b = Location("B", seq=3, cvv=VectorTime({"A": 4, "B": 1}))
    locations = {"A": a, "B": b}
    # A deleted A:1..2, so B could not recover from A (DR4) and B holds nothing A lacks: only B's own log has b1.
    bare = recoverability(state, b, conns(("A", "B")), locations, None)
    assert (bare.state, bare.backup, bare.shortfall) == ("no", None, {"A": (1, 4), "B": (1, 1)})
    backup = manifest("B-1", "B", T0, {"A": 2, "B": 1})
    fixed = recoverability(state, b, conns(("A", "B")), locations, backup)
    assert (fixed.state, fixed.backup, fixed.shortfall) == ("yes", "B-1", {})
    # A backup too old leaves the part after it that no source holds: B's own event b1 is still lost.
    stale = manifest("B-0", "B", T0, {"A": 2})
    assert recoverability(state, b, conns(("A", "B")), locations, stale).to_json() == {
        "state": "no",
        "backup": "B-0",
        "shortfall": {"B": [1, 1]},
    }


def test_bk3_rounds_a_second_source_counts_once_the_first_covers_its_deletions() -> None:
    state = both_ways(("A", "B"), ("A", "C"))
    a = Location("A", cvv=VectorTime({"A": 3, "B": 2, "C": 2}))
    b = Location("B", cvv=VectorTime({"A": 3, "B": 2}))
    c = Location("C", cvv=VectorTime({"A": 3, "B": 2, "C": 2}), dvv=VectorTime({"B": 2}))
    got = recoverability(state, a, conns(("A", "B"), ("A", "C")), {"A": a, "B": b, "C": c}, None)
    assert got.state == "yes"  # round 1: B (nothing deleted); round 2: C, whose DVV B's events now cover


def test_bk3_a_filtered_terminal_source_makes_the_answer_unknown() -> None:
    state = both_ways(("A", "B"), filtered=("B", "A"))
    a = Location("A", cvv=VectorTime({"A": 1}))
    b = Location("B", cvv=VectorTime({"A": 1}))
    connections = conns(("A", "B"))
    connections[("B", "A")] = Connection(
        "B", "A", ConnectionState.ACTIVE, filter="key = 'x'", ever_filtered=True
    )
    got = recoverability(state, a, connections, {"A": a, "B": b}, None)
    assert (got.state, got.shortfall) == ("unknown", {})


def test_bk3_own_events_behind_a_filtered_connection_out_make_the_answer_unknown_until_backed_up() -> None:
    # A terminal, A→B filtered once (cleared since): B's CVV covers A:1 through A:2's vt, yet A:1 may be one
    # the filter left out.
    state = both_ways(("A", "B"), filtered=("A", "B"))
    a = Location("A", seq=2, cvv=VectorTime({"A": 2}))
    b = Location("B", cvv=VectorTime({"A": 2}))
    locations = {"A": a, "B": b}
    bare = recoverability(state, a, conns(("A", "B")), locations, None)
    assert (bare.state, bare.shortfall) == ("unknown", {})
    stale = recoverability(state, a, conns(("A", "B")), locations, manifest("A-0", "A", T0, {"A": 1}))
    assert (stale.state, stale.backup) == ("unknown", "A-0")
    # A backup holding every own event leaves nothing that depends on the filter: B brings the rest.
    fixed = recoverability(state, a, conns(("A", "B")), locations, manifest("A-1", "A", T0, {"A": 2}))
    assert (fixed.state, fixed.backup, fixed.shortfall) == ("yes", "A-1", {})
    # B's side is unaffected: A→B now passes everything, and A stores every event B holds.
    b_side = recoverability(state, b, conns(("A", "B")), locations, None)
    assert b_side.state == "yes"


def test_bk3_own_events_a_filtered_terminal_source_lacks_make_the_answer_no_not_unknown() -> None:
    # A's only connection is B→A, filtered: a1, a2 never left A, whatever the filter passes of B's events.
    state = fold([Change(ChangeKind.CONNECTION_ADDED, source="B", target="A", filter="key = 'k'")])
    connections = {
        ("B", "A"): Connection("B", "A", ConnectionState.ACTIVE, filter="key = 'k'", ever_filtered=True)
    }
    a = Location("A", seq=3, cvv=VectorTime({"A": 3, "B": 1}))
    b = Location("B", seq=1, cvv=VectorTime({"B": 1}))
    locations = {"A": a, "B": b}
    bare = recoverability(state, a, connections, locations, None)
    assert (bare.state, bare.shortfall) == ("no", {"A": (1, 3)})
    # Once a backup holds every own event, only B's part is left, and that depends on the filter.
    held = recoverability(state, a, connections, locations, manifest("A-1", "A", T0, {"A": 3}))
    assert (held.state, held.backup, held.shortfall) == ("unknown", "A-1", {})


def test_bk3_for_every_active_location_from_its_newest_backup() -> None:
    state = both_ways(("A", "B"))
    a = Location("A", cvv=VectorTime({"A": 2}), dvv=VectorTime({"A": 2}))
    b = Location("B", cvv=VectorTime({"A": 2}))
    gone = Location("C", state=LocationState.RETIRED)
    older = manifest("B-1", "B", T0, {})
    newer = manifest("B-2", "B", T0 + timedelta(days=1), {"A": 2})
    assert newest([newer, older], "B") == newer
    every = recoverability_all(
        state, [a, b, gone], conns(("A", "B")).values(), [older, newer], lambda x: not x.retired
    )
    assert {k: (v.state, v.backup) for k, v in every.items()} == {"A": ("yes", None), "B": ("yes", "B-2")}


def test_a_backup_is_this_catalogs_when_it_names_it_or_names_none_and_its_journal_made_it() -> None:
    # BK1/BK2/M3: another catalog's backup in the same store describes another world's events.
    catalog = CatalogIdentity("cat-1", frozenset({"b3"}))
    ours = replace(manifest("b1", "B", T0, {}), catalog_id="cat-1")
    theirs = replace(manifest("b2", "B", T0, {}), catalog_id="cat-2")
    journaled = manifest("b3", "B", T0, {})  # no id: written before manifests named their catalog
    unknown = manifest("b4", "B", T0, {})
    assert foreign_reason(ours, catalog) is None
    assert (
        foreign_reason(theirs, catalog)
        == "it was made by another catalog (id cat-2; this catalog's is cat-1)"
    )
    assert foreign_reason(journaled, catalog) is None
    assert foreign_reason(unknown, catalog) == (
        "it names no catalog, and this catalog's journal has no record of making it: another catalog's"
    )
    assert of_catalog([ours, theirs, journaled, unknown], catalog) == [ours, journaled]
    # The id survives the manifest's JSON; an unnamed manifest stays unnamed.
    assert Manifest.from_json(ours.to_json()) == ours
    assert "catalog_id" not in journaled.to_json()


def test_prune_never_removes_a_file_another_catalogs_backup_lists() -> None:
    shared, own = seg("B/s1", 1, 2), seg("B/s2", 3, 4)
    ours = [manifest("b1", "B", T0, {}, shared, own), manifest("b2", "B", T0 + timedelta(days=1), {})]
    theirs = manifest("x1", "B", T0, {}, shared)
    decision = prune(ours, location=None, keep_last=1, older_than=None, now=T0, others=[theirs])
    assert ([m.id for m in decision.removed], decision.files) == (["b1"], ("B/s2",))


def test_a_copy_is_whole_by_size_only_when_every_file_its_entry_implies_is_there_with_its_bytes_bk1() -> None:
    # BK1: `backup create` reuses a copy only after this check (a listing, no byte read); verify and a restore
    # say "missing" for a lost file rather than that the digest differs.
    entry = seg("B/seg-1", 1, 3)  # 100 bytes
    row = (SegmentFile("part-0.parquet", 60), SegmentFile("part-1.parquet", 40))
    whole = {"part-0.parquet": 60, "part-1.parquet": 40}
    assert copy_damage(entry, whole, row) is None
    assert copy_damage(entry, whole) is None
    assert copy_damage(entry, None, row) == "missing"
    assert copy_damage(entry, {}, row) == "missing"  # the folder is there, its files are not
    assert copy_damage(entry, {"part-0.parquet": 60}, row) == "missing part-1.parquet"
    assert copy_damage(entry, {"part-0.parquet": 60}) == (
        "missing files: the copy holds 60 of the 100 bytes the manifest records"
    )
    assert (
        copy_damage(entry, {**whole, "part-1.parquet": 7}, row)
        == "part-1.parquet holds 7 bytes, its catalog row 40"
    )
    assert copy_damage(entry, {**whole, "stray": 1}) == "the copy holds 101 bytes, the manifest records 100"


def test_a_backup_holds_a_run_of_seqs_only_when_its_segments_cover_every_one_bk2() -> None:
    # `backup verify` names a backup holding the seqs of a changed live file whole (services.backup_repair).
    held = manifest("b1", "A", T0, {"A": 9}, seg("A/s4", 4, 6), seg("A/s1", 1, 3), seg("A/s8", 8, 9))
    assert holds_seqs(held, [(1, 6)]) and holds_seqs(held, [(2, 5), (8, 8)])
    assert not holds_seqs(held, [(5, 8)])  # seq 7 is in no segment
    assert not holds_seqs(held, [(9, 10)])
    assert holds_seqs(held, [])
