"""Which passes of a full `replicate` its dry run can decide, round after round (REP1, REP2, issue 14).

The run takes every connection in order, round after round, until a round changes nothing; a pass sees what
every pass before it wrote, in its round or an earlier one. A dry run writes nothing, so a pass whose source
or target some earlier pass of the run may write to cannot be decided as the run decides it: the dry run lists
it as `depends`, naming that pass, and so, transitively, every pass that such a pass may feed.

A connection is listed at most twice: once decided, in round 1 as the run's round 1 makes it, and once as
`depends`, in the first round the run's pass over it may differ from what round 1 left; that entry stands for
the later rounds too, as only running tells how many there are. A connection decided in round 1 and never fed
since makes no other pass the run reports, except the same wait again (`wait`, `blocked`, `damaged`), which the
plan lists once; a wait no replication ends (`repeats`: a damaged log, DR0; a connection blocked for recovery,
DR5) is the same in every round, fed or not.
"""

from __future__ import annotations

from collections.abc import Iterable

Key = tuple[str, str]  # (source, target) of a connection


class PlannedRounds:
    """A dry run's account of the run's rounds: what each planned pass may write, and who must wait for it.

    Feeding is recorded when a pass is planned, so a pass earlier in the order learns of it in the next round,
    as the run's pass over that connection would.
    """

    def __init__(self, connections: Iterable[Key]) -> None:
        """`connections`: the current ones, as (source, target)."""
        self._connections = tuple(connections)
        # A connection → the first planned pass, since the connection's own, that may write to its source
        # (resp. target): the pass it waits for.
        self._source_fed: dict[Key, str] = {}
        self._target_fed: dict[Key, str] = {}
        # A decided connection → whether its pass reads its source's log to the end for sure (REP2): if so, a
        # change of its target alone leaves its next pass nothing new to read.
        self._decided: dict[Key, bool] = {}
        self._depends: set[Key] = set()
        self._repeats: set[Key] = set()  # a decided connection whose pass is the same in every round
        self._states: dict[Key, str] = {}  # a decided connection → the state its planned pass leaves it in

    def waits_for(self, key: Key) -> str | None:
        """The earlier pass the connection's next pass is decided by ("A→B"); None when the dry run decides
        it now or it is listed already (`listed`)."""
        if key in self._depends or key in self._repeats:
            return None
        by_source = self._source_fed.get(key)
        if key not in self._decided:
            return by_source or self._target_fed.get(key)
        if by_source is not None or self._decided[key]:
            return by_source
        return self._target_fed.get(key)

    def listed(self, key: Key) -> bool:
        """Whether the connection's passes are all in the plan already: decided, and fed by nothing since, or
        listed as `depends` (which stands for every later round)."""
        return key in self._depends or (key in self._decided and self.waits_for(key) is None)

    def state(self, key: Key, stored: str) -> str:
        """The connection's state before its next pass: as its decided pass leaves it, else as `stored`."""
        return self._states.get(key, stored)

    def decided(
        self, key: Key, *, writes: bool, reads_to_end: bool, state: str, repeats: bool = False
    ) -> None:
        """Record a pass the dry run decided as the run will: whether it may write to its target, whether it
        reads its source to the end for sure, the connection's `state` after it, and whether it is a wait
        that every later round repeats whatever earlier passes write (`repeats`)."""
        self._decided[key] = reads_to_end
        self._states[key] = state
        if repeats:
            self._repeats.add(key)
        if writes:
            self._feed(key)

    def depends(self, key: Key) -> None:
        """Record a pass listed as `depends`: it may write to its target in its round and any later one."""
        self._depends.add(key)
        self._feed(key)

    def _feed(self, key: Key) -> None:
        """Every other connection from or into `key`'s target waits for `key`'s pass from now on."""
        label = f"{key[0]}→{key[1]}"
        for other in self._connections:
            if other == key:
                continue
            if other[0] == key[1]:
                self._source_fed.setdefault(other, label)
            if other[1] == key[1]:
                self._target_fed.setdefault(other, label)
