"""Taking over the lease of a dead holder (adapters/catalog/leases.py), on SQLite and PostgreSQL.

A lease is taken over before it expires only when its holder is provably dead: this host, this pid
namespace, and the pid no longer runs. Everything else (another host, a live process, a holder string of an
older replctl) keeps the lease until it expires, as before.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from replctl.adapters.catalog import migrate
from replctl.adapters.catalog.leases import holder_is_dead, holder_name
from replctl.adapters.catalog.repository import Catalog
from replctl.errors import LockHeld


@pytest.fixture
def catalog(catalog_url: str) -> Iterator[Catalog]:
    migrate.upgrade(catalog_url)
    with Catalog(catalog_url) as opened:
        yield opened


def dead_pid() -> int:
    """The pid of a process that ran on this host and has exited (and was reaped)."""
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], check=True, capture_output=True, text=True
    )
    return int(done.stdout)


def holder_with_pid(pid: int) -> str:
    return holder_name("alice").replace(f" pid {os.getpid()}", f" pid {pid}")


def test_this_process_is_alive_and_an_exited_one_on_this_host_is_dead() -> None:
    assert not holder_is_dead(holder_name("alice"))
    assert holder_is_dead(holder_with_pid(dead_pid()))


@pytest.mark.parametrize(
    "holder",
    [
        "alice@h1",  # an older replctl's holder: no pid, nothing provable
        f"alice@not-{socket.gethostname()} pid 999999",  # another host: its pids are not ours to judge
        f"alice@{socket.gethostname()} pid 999999 pidns 1",  # another pid namespace on this host (a container)
        f"alice@{socket.gethostname()} pid {os.getppid()}",  # a live process
    ],
)
def test_a_holder_not_provably_dead_keeps_its_lease_until_it_expires(catalog: Catalog, holder: str) -> None:
    with catalog.transaction() as tx:
        tx.begin_operation("x", {}, None, None, None)
        tx.acquire_lease("location:A", holder, "op-1", 300)
    with catalog.transaction(readonly=True) as tx:
        held = tx.lease_held("location:A")  # a dry run is refused as its run (below) is
    assert held is not None
    with pytest.raises(LockHeld, match="is held by") as caught, catalog.transaction() as tx:
        tx.acquire_lease("location:A", holder_name("bob"), "op-2", 300)
    assert held.to_json() == caught.value.to_json()


def test_a_dead_holders_lease_is_taken_over_with_a_higher_token_and_its_operation_marked_failed(
    catalog: Catalog,
) -> None:
    with catalog.transaction() as tx:
        dead_op = tx.begin_operation("log append", {"location": "A"}, "alice", socket.gethostname(), None)
        old = tx.acquire_lease("location:A", holder_with_pid(dead_pid()), dead_op, 300)
    with catalog.transaction(readonly=True) as tx:
        assert tx.lease_held("location:A") is None  # a dry run plans, as its run takes the lease over
    with catalog.transaction() as tx:
        new_op = tx.begin_operation("log append", {"location": "A"}, "bob", socket.gethostname(), None)
        new = tx.acquire_lease("location:A", holder_name("bob"), new_op, 300)
    assert new > old
    # Fencing: the dead holder could never commit again.
    with pytest.raises(LockHeld, match="taken over"), catalog.transaction() as tx:
        tx.check_lease("location:A", old)
    with catalog.transaction() as tx:
        dead = tx.operation(dead_op)
    assert dead is not None
    assert dead.outcome == "failed"
    assert dead.error is not None
    assert dead.error["code"] == "holder-died"
    assert new_op in dead.error["message"]
