"""Operation leases with fencing tokens (architecture.md, Concurrency and faults).

A lease row per resource ("location:A", "topology") names its holder, operation and expiry. Each grant adds
one to the row's `token`, and the row is never deleted, so tokens keep increasing across releases. An
operation checks its token inside every transaction it commits: once another operation has taken the lease
over (after expiry), the old token no longer matches and the late commit is refused.

Granting is one conditional UPDATE ("take it if it is free") or, for a resource never leased before, an
INSERT ... ON CONFLICT DO NOTHING. On PostgreSQL the primary key and the row lock of the UPDATE serialise
concurrent takers; on SQLite every transaction holds the database's write lock from BEGIN IMMEDIATE. Times
come from this process's clock: hosts sharing a catalog should keep their clocks in sync (NTP), as the
expiry is compared with it.

A killed process cannot release its leases, and waiting out the time to live would keep the operator from
re-running the command for minutes. So the holder names its process (`holder_name`: user, host, pid and pid
namespace), and a lease whose holder is provably dead (same host and pid namespace, and that pid no longer
runs) is taken over at once; the dead operation is then journalled as failed in the same transaction. Only
"provably" matters: a pid that runs again (reused) or a holder elsewhere keeps the lease until it expires,
and fencing makes even a wrong verdict safe, as the old holder's next commit fails.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeGuard

from sqlalchemy import or_, select
from sqlalchemy.engine import Connection, Row

from replctl.adapters.catalog.dialect import LEASES, OPERATIONS, insert
from replctl.core.journal import Outcome
from replctl.errors import LockHeld

# A conditional grant can lose a race twice at most (the row appears, then is freed in between); a third
# miss means something else is wrong, and the last reading is reported.
_GRANT_ATTEMPTS = 3


# "alice@db1 pid 4242 pidns 4026531836"; the namespace part is absent where /proc does not tell it.
_HOLDER = re.compile(r"^(?P<user>.*)@(?P<host>[^@ ]*) pid (?P<pid>[0-9]+)(?: pidns (?P<ns>[0-9]+))?$")


def _pid_namespace() -> str | None:
    # Containers sharing a host name (host networking) still have their own pid numbers; the namespace
    # inode tells them apart, so one never judges the other's pids.
    try:
        return str(Path("/proc/self/ns/pid").stat().st_ino)
    except OSError:
        return None


def holder_name(user: str) -> str:
    """The holder string of this process: who, on which host, which pid (and pid namespace)."""
    namespace = _pid_namespace()
    suffix = f" pidns {namespace}" if namespace else ""
    return f"{user}@{socket.gethostname()} pid {os.getpid()}{suffix}"


def _process_gone(pid: int) -> bool:
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # it runs, as another user
    try:
        # A killed child its parent has not reaped yet still answers kill(0); it runs no code any more.
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 :].startswith("Z")


def holder_is_dead(holder: str) -> bool:
    """True only when `holder` names a process of this host and pid namespace that no longer runs."""
    found = _HOLDER.match(holder)
    if found is None or found["host"] != socket.gethostname() or found["ns"] != _pid_namespace():
        return False
    return _process_gone(int(found["pid"]))


class LeaseQueries:
    """The `leases` table."""

    _conn: Connection
    _clock: Callable[[], datetime]

    def acquire_lease(self, resource: str, holder: str, operation_id: str, ttl_seconds: float) -> int:
        """Take the lease on `resource` for `ttl_seconds`; returns its fencing token.

        Raises `LockHeld` (exit 4) naming the holder, its operation and since when, unless the current
        lease was released, has expired, or its holder is provably dead (`holder_is_dead`), in which case
        it is taken over.
        """
        if ttl_seconds <= 0:
            raise ValueError(f"a lease needs a positive time to live, got {ttl_seconds}")
        now = self._clock()
        grant = {
            "holder": holder,
            "operation_id": operation_id,
            "acquired_at": now,
            "expires_at": now + timedelta(seconds=ttl_seconds),
            "released_at": None,
        }
        current: Row[Any] | None = None
        for _ in range(_GRANT_ATTEMPTS):
            taken = self._conn.execute(
                LEASES.update()
                .where(
                    LEASES.c.resource == resource,
                    or_(LEASES.c.released_at.is_not(None), LEASES.c.expires_at <= now),
                )
                .values(token=LEASES.c.token + 1, **grant)
                .returning(LEASES.c.token)
            ).scalar_one_or_none()
            if taken is not None:
                return int(taken)
            created = self._conn.execute(
                insert(self._conn, LEASES)
                .values(resource=resource, token=1, **grant)
                .on_conflict_do_nothing(index_elements=[LEASES.c.resource])
                .returning(LEASES.c.token)
            ).scalar_one_or_none()
            if created is not None:
                return int(created)
            current = self._read(resource)
            if _unexpired(current, now):
                if holder_is_dead(current.holder):
                    taken = self._take_over_dead(resource, current, grant)
                    if taken is not None:
                        return taken
                    continue  # someone else took it over first: read again
                raise _held(resource, current)
        raise _held(resource, current)

    def lease_held(self, resource: str) -> LockHeld | None:
        """The `LockHeld` that `acquire_lease` would raise for `resource` now, None when it would grant it.

        Reads only, locks nothing: for a dry run, which takes no lease but must be refused as its run would be
        (exit 4) while another operation holds one it needs. Held by the same rules as `acquire_lease`: not
        released, not expired, and its holder not provably dead.
        """
        current = self._read(resource)
        if not _unexpired(current, self._clock()) or holder_is_dead(current.holder):
            return None
        return _held(resource, current)

    def _take_over_dead(self, resource: str, dead: Row[Any], grant: dict[str, Any]) -> int | None:
        # Conditional on the very token judged dead, so that two operators doing this at once cannot both
        # win; the dead operation's journal row says what happened in the same transaction.
        taken = self._conn.execute(
            LEASES.update()
            .where(
                LEASES.c.resource == resource, LEASES.c.token == dead.token, LEASES.c.released_at.is_(None)
            )
            .values(token=LEASES.c.token + 1, **grant)
            .returning(LEASES.c.token)
        ).scalar_one_or_none()
        if taken is None:
            return None
        self._conn.execute(
            OPERATIONS.update()
            .where(OPERATIONS.c.id == dead.operation_id, OPERATIONS.c.outcome == Outcome.RUNNING.value)
            .values(
                outcome=Outcome.FAILED.value,
                error={
                    "code": "holder-died",
                    "message": f"{dead.holder} died while holding {resource}; operation "
                    f"{grant['operation_id']} took the lease over",
                    "hint": "its completed steps are journalled; re-running the command resumes it",
                },
                ended_at=grant["acquired_at"],
            )
        )
        return int(taken)

    def check_lease(self, resource: str, token: int) -> None:
        """Raise `LockHeld` unless `token` is still the current, unreleased lease on `resource`.

        The row is locked until the transaction ends, so no other operation can take the lease over between
        this check and the commit. An expired lease that nobody took over still passes: expiry lets others
        take it, it does not by itself invalidate the holder's work.
        """
        row = self._conn.execute(
            select(LEASES).where(LEASES.c.resource == resource).with_for_update()
        ).one_or_none()
        if row is None or row.token != token or row.released_at is not None:
            raise _lost(resource, token, row)

    def renew_lease(self, resource: str, token: int, ttl_seconds: float) -> None:
        """Extend the lease held with `token` to `ttl_seconds` from now; `LockHeld` if it was lost."""
        if ttl_seconds <= 0:
            raise ValueError(f"a lease needs a positive time to live, got {ttl_seconds}")
        renewed = self._conn.execute(
            LEASES.update()
            .where(LEASES.c.resource == resource, LEASES.c.token == token, LEASES.c.released_at.is_(None))
            .values(expires_at=self._clock() + timedelta(seconds=ttl_seconds))
        ).rowcount
        if renewed == 0:
            raise _lost(resource, token, self._read(resource))

    def release_lease(self, resource: str, token: int) -> bool:
        """Give the lease back; False (and nothing changes) when `token` is no longer the current one."""
        released = self._conn.execute(
            LEASES.update()
            .where(LEASES.c.resource == resource, LEASES.c.token == token, LEASES.c.released_at.is_(None))
            .values(released_at=self._clock())
        ).rowcount
        return released > 0

    def _read(self, resource: str) -> Row[Any] | None:
        return self._conn.execute(select(LEASES).where(LEASES.c.resource == resource)).one_or_none()


def _unexpired(row: Row[Any] | None, now: datetime) -> TypeGuard[Row[Any]]:
    # A lease that is still someone's: granted, not given back, not expired (its holder may still be dead).
    return row is not None and row.released_at is None and row.expires_at > now


def _when(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%SZ")


def _held(resource: str, row: Row[Any] | None) -> LockHeld:
    if row is None:
        return LockHeld(f"could not take the lease on {resource}; try again", hint="run the command again")
    return LockHeld(
        f"{resource} is held by {row.holder} (operation {row.operation_id}) since {_when(row.acquired_at)}, "
        f"until {_when(row.expires_at)} at the latest",
        hint=f"wait for it to finish, or see: replctl ops show {row.operation_id}",
        details={
            "resource": resource,
            "holder": row.holder,
            "operation_id": row.operation_id,
            "since": row.acquired_at.isoformat(),
            "expires_at": row.expires_at.isoformat(),
        },
    )


def _lost(resource: str, token: int, row: Row[Any] | None) -> LockHeld:
    if row is None or row.token == token:
        what = "was released" if row is not None else "does not exist"
        return LockHeld(
            f"the lease on {resource} (token {token}) {what}; this operation may no longer change it",
            hint="run the command again",
            details={"resource": resource, "token": token},
        )
    return LockHeld(
        f"the lease on {resource} (token {token}) was taken over by {row.holder} "
        f"(operation {row.operation_id}) at {_when(row.acquired_at)}; this operation may no longer change it",
        hint=f"see: replctl ops show {row.operation_id}",
        details={
            "resource": resource,
            "token": token,
            "holder": row.holder,
            "operation_id": row.operation_id,
            "since": row.acquired_at.isoformat(),
        },
    )
