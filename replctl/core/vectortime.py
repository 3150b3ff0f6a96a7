"""Vector time (rules.md §2, VT1–VT6).

A `VectorTime` maps location ids to non-negative integers; a missing key is 0 (VT1), so zero entries are
dropped on construction and `{C: 0}` equals `{}`. Instances are immutable and hashable.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any


class VectorTime(Mapping[str, int]):
    """An immutable vector timestamp (VT1)."""

    __slots__ = ("_entries", "_hash")

    def __init__(self, entries: Mapping[str, int] | Iterable[tuple[str, int]] = ()) -> None:
        items = entries.items() if isinstance(entries, Mapping) else entries
        clean: dict[str, int] = {}
        for key, value in items:
            number = int(value)
            if number < 0:
                raise ValueError(f"vector time entries are non-negative (VT1): {key}={number}")
            if number:
                clean[str(key)] = number
        self._entries = dict(sorted(clean.items()))
        self._hash: int | None = None

    # Mapping protocol: a missing key reads as 0 (VT1).
    def __getitem__(self, key: str) -> int:
        return self._entries.get(key, 0)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, VectorTime):
            return self._entries == other._entries
        if isinstance(other, Mapping):
            return self._entries == VectorTime(other)._entries
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(tuple(self._entries.items()))
        return self._hash

    def __repr__(self) -> str:
        return f"VectorTime({self._entries!r})"

    def __str__(self) -> str:
        return "{" + ",".join(f"{k}:{v}" for k, v in self._entries.items()) + "}"

    # VT2: v ≤ w iff v[k] ≤ w[k] for every key; only v's non-zero keys can break it.
    def __le__(self, other: Mapping[str, int]) -> bool:
        return all(value <= other.get(key, 0) for key, value in self._entries.items())

    def __lt__(self, other: Mapping[str, int]) -> bool:
        return self <= other and self != other

    def __ge__(self, other: Mapping[str, int]) -> bool:
        return VectorTime(other) <= self

    def __gt__(self, other: Mapping[str, int]) -> bool:
        return VectorTime(other) < self

    def concurrent(self, other: Mapping[str, int]) -> bool:
        """VT3: neither precedes the other."""
        return not self <= other and not VectorTime(other) <= self

    def merge(self, *others: Mapping[str, int]) -> VectorTime:
        """VT4: the least upper bound, entry-wise maximum."""
        merged = dict(self._entries)
        for other in others:
            for key, value in other.items():
                if value > merged.get(key, 0):
                    merged[key] = value
        return VectorTime(merged)

    __or__ = merge

    def project(self, keys: Iterable[str]) -> VectorTime:
        """VT5: keep only the given keys."""
        wanted = set(keys)
        return VectorTime({k: v for k, v in self._entries.items() if k in wanted})

    def without(self, keys: Iterable[str]) -> VectorTime:
        """Drop the given keys (clock pruning, RET2)."""
        dropped = set(keys)
        return VectorTime({k: v for k, v in self._entries.items() if k not in dropped})

    def foreign_to(self, other: Mapping[str, int]) -> VectorTime:
        """The entries whose keys do not occur in `other` (ADD3's "foreign" entries)."""
        return VectorTime({k: v for k, v in self._entries.items() if other.get(k, 0) == 0})

    def missing_from(self, other: Mapping[str, int]) -> dict[str, tuple[int, int]]:
        """Entries where self exceeds other: {key: (self[key], other[key])}; empty iff self ≤ other."""
        return {k: (v, other.get(k, 0)) for k, v in self._entries.items() if v > other.get(k, 0)}

    def to_dict(self) -> dict[str, int]:
        """A plain dict, for JSON and the catalog."""
        return dict(self._entries)

    @classmethod
    def parse(cls, value: Any) -> VectorTime:
        """From a JSON-decoded mapping (or None, the empty vector)."""
        if value is None:
            return cls()
        if not isinstance(value, Mapping):
            raise ValueError(f"a vector time is a JSON object, got {type(value).__name__}")
        return cls(value)


EMPTY = VectorTime()


def lub(vectors: Iterable[Mapping[str, int]]) -> VectorTime:
    """VT4 over many: the LUB of nothing is `{}`."""
    return EMPTY.merge(*vectors)


def happened_before(v: Mapping[str, int], w: Mapping[str, int]) -> bool:
    """VT6: e1 → e2 iff vt(e1) < vt(e2)."""
    return VectorTime(v) < VectorTime(w)


def covers(vector: Mapping[str, int], origin: str, origin_time: int) -> bool:
    """RET4: `vector` covers the event (origin, origin_time) iff vector[origin] ≥ origin_time.

    Asked through the identity (M3), never through the event's vt, because clock pruning (RET2) removes the
    retired id from vts while the identity stays. Before any pruning it equals `vt(e) ≤ vector`.
    """
    return vector.get(origin, 0) >= origin_time


def with_identity(vt: Mapping[str, int], origin: str, origin_time: int) -> VectorTime:
    """RET4: `vt(e) ⊔ {origin(e): origin_time(e)}`, what an event adds to a CVV or DVV and what causal order
    checks (EM3, I1) compare. Equal to `vt(e)` for an event whose vt was never pruned."""
    return VectorTime(vt).merge({origin: origin_time})
