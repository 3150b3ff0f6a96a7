"""Laws of vector time (rules.md VT1–VT6): properties, and the vectors of the Eventuate documentation."""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from replctl.core.vectortime import EMPTY, VectorTime, happened_before, lub

LAWS = settings(max_examples=25, deadline=None)

vectors = st.dictionaries(st.sampled_from("abcd"), st.integers(min_value=0, max_value=4), max_size=4).map(
    VectorTime
)


@LAWS
@given(vectors)
def test_precedes_or_equals_is_reflexive(v: VectorTime) -> None:
    same = VectorTime(v)  # an equal copy: the law is about values
    assert v <= same


@LAWS
@given(vectors, vectors)
def test_precedes_or_equals_is_antisymmetric(v: VectorTime, x: VectorTime) -> None:
    # Built so that v ≤ w always holds (random pairs would rarely be ordered): w ≤ v then only if w = v.
    w = v.merge(x)
    assert v <= w
    assert (w <= v) == (w == v)


@LAWS
@given(vectors, vectors, vectors)
def test_precedes_or_equals_is_transitive(u: VectorTime, x: VectorTime, y: VectorTime) -> None:
    # Built so that u ≤ v ≤ w always holds; random triples would rarely be ordered.
    v = u.merge(x)
    w = v.merge(y)
    assert u <= v <= w
    assert u <= w


@LAWS
@given(vectors, vectors, vectors)
def test_a_chain_with_one_strict_step_has_strictly_ordered_ends(
    u: VectorTime, x: VectorTime, y: VectorTime
) -> None:
    # Built so that u ≤ v ≤ w; the second step strict (assumed: y must raise some entry of v).
    v = u.merge(x)
    w = v.merge(y)
    assume(w != v)
    assert u <= v < w
    assert u < w


@LAWS
@given(vectors, vectors)
def test_concurrent_means_neither_precedes_the_other(v: VectorTime, w: VectorTime) -> None:
    assert v.concurrent(w) == (not v <= w and not w <= v)
    assert v.concurrent(w) == w.concurrent(v)


@LAWS
@given(vectors, vectors)
def test_strictly_precedes_is_precedes_and_differs(v: VectorTime, w: VectorTime) -> None:
    assert (v < w) == (v <= w and v != w)
    assert happened_before(v, w) == (v < w)


@LAWS
@given(vectors, vectors)
def test_merge_is_commutative(v: VectorTime, w: VectorTime) -> None:
    assert v.merge(w) == w.merge(v)


@LAWS
@given(vectors, vectors, vectors)
def test_merge_is_associative(u: VectorTime, v: VectorTime, w: VectorTime) -> None:
    assert u.merge(v).merge(w) == u.merge(v.merge(w))


@LAWS
@given(vectors)
def test_merge_is_idempotent(v: VectorTime) -> None:
    assert v.merge(v) == v


@LAWS
@given(vectors, vectors, vectors)
def test_merge_is_the_least_upper_bound(v: VectorTime, w: VectorTime, x: VectorTime) -> None:
    joined = v.merge(w)
    assert v <= joined
    assert w <= joined
    upper = joined.merge(x)  # an arbitrary upper bound of v and w
    assert joined <= upper
    for key in set(v) | set(w):
        assert joined[key] == max(v[key], w[key])


@LAWS
@given(vectors, vectors)
def test_merge_of_ordered_vectors_is_the_larger(v: VectorTime, x: VectorTime) -> None:
    w = v.merge(x)  # v ≤ w by construction
    assert v.merge(w) == w


@LAWS
@given(vectors, vectors)
def test_merging_gives_the_second_vector_exactly_when_the_first_precedes_it(
    v: VectorTime, w: VectorTime
) -> None:
    assert (v.merge(w) == w) == (v <= w)


def test_zero_entry_equals_missing_entry_vt1() -> None:
    assert VectorTime({"C": 0}) == VectorTime({})
    assert VectorTime({"C": 0}) == {}
    assert hash(VectorTime({"C": 0})) == hash(EMPTY)
    assert VectorTime({"C": 0})["C"] == 0
    assert VectorTime({"a": 1, "c": 0}) == VectorTime({"a": 1})


def test_lub_of_nothing_is_the_empty_vector_vt4() -> None:
    assert lub([]) == EMPTY


def test_eventuate_vectors_with_swapped_entries_are_concurrent() -> None:
    v, w = VectorTime({"a": 1, "b": 2}), VectorTime({"a": 2, "b": 1})
    assert v.concurrent(w)
    assert not v <= w
    assert not w <= v


def test_eventuate_vector_with_zero_entry_strictly_precedes() -> None:
    assert VectorTime({"a": 1, "c": 0}) < VectorTime({"a": 1, "b": 2})
    assert not VectorTime({"a": 1, "b": 2}) <= VectorTime({"a": 1, "c": 0})


def test_eventuate_merge_takes_the_entrywise_maximum() -> None:
    merged = VectorTime({"a": 1, "b": 2, "c": 2}).merge(VectorTime({"a": 4, "c": 1}))
    assert merged == VectorTime({"a": 4, "b": 2, "c": 2})
    assert lub([{"a": 1, "b": 2, "c": 2}, {"a": 4, "c": 1}]) == {"a": 4, "b": 2, "c": 2}


def test_projection_keeps_only_the_given_keys_vt5() -> None:
    assert VectorTime({"a": 1, "b": 2, "c": 3}).project({"a", "c", "z"}) == {"a": 1, "c": 3}
