"""Keeping an operation's leases alive while it runs (issue 15 item 6).

A lease expires `LEASE_TTL_SECONDS` after it was last granted or renewed; a job that outlives that (a long
Spark pass) would let another operator take the lease over and find out only when its own commit failed the
fencing check. The keeper renews every lease the operation holds, from a thread of its own, a few times per
time to live, until the operation ends. A renewal that finds the lease lost (taken over) stops renewing it:
the fencing check at the next commit then refuses the operation, as before. One that finds the catalog busy or
unreachable tries again at the next tick.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from replctl.errors import LockHeld, ReplctlError
from replctl.services.ports import Catalog

# Renewals per time to live: one missed renewal (a slow catalog) still leaves the lease alive.
RENEWALS_PER_TTL = 3


class LeaseKeeper:
    """Renews the leases in `tokens` (resource → fencing token) every `ttl / RENEWALS_PER_TTL` seconds."""

    def __init__(self, catalog: Catalog, tokens: dict[str, int], ttl_seconds: float) -> None:
        """Prepare the keeper; nothing runs until `start`. `tokens` is read at each renewal (it may grow)."""
        self._catalog = catalog
        self._tokens = tokens
        self._ttl = ttl_seconds
        self._stop = threading.Event()
        self._lost: set[str] = set()
        self._thread = threading.Thread(target=self._run, name="replctl-lease-keeper", daemon=True)

    def start(self) -> None:
        """Start renewing in the background."""
        self._thread.start()

    def stop(self) -> None:
        """Stop renewing and wait for a renewal under way to end."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        # Its own engine (a pooled SQLite connection may not move between threads), opened only when the first
        # renewal is due: most operations end before that, and opening one took each of them ~2 ms of CPU,
        # spent beside the operation's own work (issue 16).
        if self._stop.wait(self._ttl / RENEWALS_PER_TTL):
            return
        with self._catalog.reopen() as catalog:
            self.renew(catalog)
            while not self._stop.wait(self._ttl / RENEWALS_PER_TTL):
                self.renew(catalog)

    def renew(self, catalog: Catalog, *, on_lost: Callable[[str], None] | None = None) -> None:
        """Renew every lease still held, each in its own transaction; one found lost is left alone after."""
        for resource, token in list(self._tokens.items()):
            if resource in self._lost:
                continue
            try:
                with catalog.transaction() as tx:
                    tx.renew_lease(resource, token, self._ttl)
            except LockHeld:
                # Taken over: the fencing check at the next commit refuses the operation; a lost lease is
                # not renewed again.
                self._lost.add(resource)
                if on_lost is not None:
                    on_lost(resource)
            except ReplctlError:
                # The catalog busy (another writer past the busy timeout) or unreachable for now: the lease
                # is still ours until it expires, so the next tick tries again; giving up here would let it
                # run out under a live operation.
                continue
