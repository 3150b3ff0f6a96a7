"""What every command gets: resolved settings and lazily opened adapters (the CLI's wiring)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from replctl.config import Settings

if TYPE_CHECKING:
    from replctl.adapters.catalog.repository import Catalog
    from replctl.adapters.dataplane import Engine, SparkChoice, SparkChooser
    from replctl.adapters.installer import Installer as FileInstaller
    from replctl.adapters.logbackups import LogBackups
    from replctl.adapters.logstore import LogStore
    from replctl.core.backups import Manifest
    from replctl.outputpaths import OwnPlaces
    from replctl.services.plans import AppliedPlan, Plan
    from replctl.services.ports import EventFiles, ManagedEngine
    from replctl.services.store_identity import StoreCheck


@dataclass
class AppContext:
    """Per-invocation state; adapters are built on first use so `--help` and pure commands stay light."""

    settings: Settings
    yes: bool = False
    quiet: bool = False  # -q: text output off, errors and refusals still on stderr
    verbose: bool = False  # -v: each journalled operation's id and the command's time on stderr
    reason: str | None = None
    progress: bool | None = (
        None  # --progress / --no-progress; None: on when stderr is a terminal, off with --json
    )
    # --plan-out FILE: a mutating command only plans (a dry run) and writes the plan there (boundary.run).
    plan_out: Path | None = None
    # `replctl apply` planning the recorded command again: the plan is kept in `planned`, not written.
    capture_plan: bool = False
    planned: Plan | None = field(default=None, repr=False)
    # `replctl apply` executing a plan: the catalog version it expects, checked under the leases.
    applied: AppliedPlan | None = None
    # A destructive command making its dry run to show before asking for confirmation (cli.confirm).
    previewing: bool = False
    # The command's one instant, read once as the context is made: what `--older-than` counts back from in the
    # dry run, the plan, the confirmation preview and the run alike, however long the run waits for its leases
    # (`replctl apply` passes its own to both runs it makes, so the run cuts where the checked plan said).
    now: datetime = field(default_factory=lambda: datetime.now(UTC))
    # The backup store the command names itself (`backup create --to`): guarded from output files as the
    # configured one is (`own_places`).
    named_backup_store: str | None = None
    _catalog: Any = field(default=None, repr=False)
    _engine: Any = field(default=None, repr=False)
    _spark: Any = field(default=None, repr=False)
    # The store and its marker as checked (`services.store_identity`): `close` raises the marker.
    _checked: Any = field(default=None, repr=False)

    @property
    def json(self) -> bool:
        """True under --json / --output json."""
        return self.settings.json

    @property
    def planning(self) -> bool:
        """True when a mutating command must only plan: a dry run, whatever --dry-run says."""
        return self.plan_out is not None or self.capture_plan or self.previewing

    def catalog(self, *, check: bool = True) -> Catalog:
        """The catalog; `check` refuses one that is missing or at an older revision (exit 6).

        Only `init` creates a catalog: a SQLite file that is not there is refused before SQLite would
        create an empty one.
        """
        if self._catalog is None:
            from replctl.adapters.catalog.engine import check_exists
            from replctl.adapters.catalog.repository import Catalog

            check_exists(self.settings.db)
            self._catalog = Catalog(self.settings.db)
        if check:
            from replctl.adapters.catalog.migrate import ensure_current

            ensure_current(self._catalog.engine)
        catalog: Catalog = self._catalog
        return catalog

    def own_places(self) -> OwnPlaces:
        """Where this command's catalog, stores and config file are: what no output file may land on
        (`replctl.outputpaths`). A database URL that does not parse names no file here; the command refuses
        it where it opens the catalog (`demo` never opens this one)."""
        from replctl.adapters.catalog.engine import parse_url, sqlite_path
        from replctl.errors import InvalidInput
        from replctl.outputpaths import OwnPlaces

        try:
            catalog = sqlite_path(parse_url(self.settings.db))
        except InvalidInput:
            catalog = None
        return OwnPlaces(
            catalog=catalog,
            log_store=self.settings.store,
            backup_store=self.settings.backup_store,
            config=self.settings.config_path,
            named_backup_store=self.named_backup_store,
        )

    def check_output(self, path: Path, option: str, what: str) -> None:
        """Refuse (exit 2, `output-overlap`) an output path on the catalog, a store or the config file."""
        from replctl.outputpaths import check_output

        check_output(path, option, what, self.own_places())

    def check_output_folder(self, path: Path, option: str, what: str) -> None:
        """`check_output` for a folder an output fills, which must not hold the catalog, a store or the
        config file either (exit 2, `output-overlap`)."""
        from replctl.outputpaths import check_output_folder

        check_output_folder(path, option, what, self.own_places())

    def store(self) -> LogStore:
        """The log store at the configured root, which must exist (only `init` creates it; exit 6)."""
        from replctl.adapters.logstore import LogStore

        store = LogStore(self.settings.store)
        store.check_root()
        return store

    def backups(self, root: str | None = None) -> LogBackups:
        """The backup store at `root` (default: the configured one, rules.md BK1), bound to the log store it
        backs up; its copies are read by a data plane of their own (`backup verify`, a restore's dry run)."""
        from replctl.adapters.backupstore import BackupStore
        from replctl.adapters.dataplane import Engine
        from replctl.adapters.logbackups import LogBackups
        from replctl.adapters.logstore import LogStore

        def reader(copies: LogStore) -> Engine:
            return Engine(copies, self.settings, chooser=self.spark_chooser())

        # The log store unchecked: `backup list|show|verify|prune` read no live log, and the commands that do
        # (`backup create`, a restore) check it themselves first (`store()`, `engine()`).
        live = LogStore(self.settings.store)
        return LogBackups(BackupStore(self.settings.backup_store if root is None else root), live, reader)

    def _record_reach(self, store: LogStore, seen: StoreCheck) -> None:
        from contextlib import suppress

        from replctl.errors import ReplctlError
        from replctl.services.store_identity import record_reach

        # The command's outcome stands, and is what it reports (a lost catalog was said already): a marker left
        # behind only refuses less (`record_reach`).
        with suppress(ReplctlError):
            record_reach(self.catalog(check=False), store, seen)

    def installer(self) -> FileInstaller:
        """What `init` and `db upgrade|current` do to the configured catalog and store before opening them."""
        from replctl.adapters import installer

        return installer.Installer(self.settings)

    def spark_chooser(self) -> SparkChooser:
        """The command's Spark, chosen once for all its data planes (the live log's, a backup's copies'), so
        that a managed engine that is down is one warning, not one per data plane."""
        from replctl.adapters.dataplane import SparkChooser

        if self._spark is None:
            self._spark = SparkChooser(self.settings)
        chooser: SparkChooser = self._spark
        return chooser

    def spark_choice(self) -> SparkChoice:
        """Which Spark a command would use and why (`config show`; exit 6 for a mismatched managed engine)."""
        from replctl.adapters.dataplane import choose_spark

        return choose_spark(self.settings)

    def event_files(self) -> EventFiles:
        """The checks of an operator's event files (`adapters.eventfile`, a module that is the port)."""
        from replctl.adapters import eventfile

        return eventfile

    def managed_engine(self) -> ManagedEngine:
        """The managed Spark engine of the replctl home (`replctl engine`); nothing is started or read yet."""
        from replctl.adapters.spark.server import ManagedServer

        return ManagedServer(self.settings.home)

    def cancel_spark_jobs(self) -> None:
        """Cancel the Spark jobs an interrupted call left running (only if this process started Spark; the
        session is process-wide, so this holds whichever context started it)."""
        from replctl.adapters.spark.session import cancel_running_jobs

        cancel_running_jobs()

    def manifests(self) -> list[Manifest] | None:
        """This catalog's backups in the backup store, None when it cannot be read (BK3 then says `unknown`)."""
        # The adapter directly, not through services.backups: `status` calls this, and that module pulls in the
        # log and Spark-result modules that a light command must not import (issue 17).
        from replctl.adapters.backupstore import BackupStore
        from replctl.errors import EnvironmentFailure

        try:
            every = BackupStore(self.settings.backup_store).manifests()
        except EnvironmentFailure:
            return None
        # Only this catalog's: another catalog's backups in the same store describe other locations (BK3).
        from replctl.core.backups import of_catalog
        from replctl.services.store_identity import backup_owner

        return of_catalog(every, backup_owner(self.catalog(), every))

    def checked_store(self) -> LogStore:
        """The log store, checked against the catalog first (`services.store_identity`, exit 6 as `engine()`):
        for commands that only list segment files, without importing the data plane (issue 17)."""
        from replctl.services.store_identity import check_store

        store = self.store()
        self._checked = (store, check_store(self.catalog(), store))
        return store

    def engine(self) -> Engine:
        """The data plane: log store plus a (lazily started, process-wide) Spark session.

        The store is checked against the catalog first (`services.store_identity`): a missing store or another
        catalog's exits 6 before anything reads it as a log.
        """
        from replctl.adapters.dataplane import Engine
        from replctl.services.store_identity import check_store

        if self._engine is None:
            store = self.store()
            self._checked = (store, check_store(self.catalog(), store))
            shown = self.progress if self.progress is not None else (not self.json and sys.stderr.isatty())
            self._engine = Engine(self.store(), self.settings, progress=shown, chooser=self.spark_chooser())
        engine: Engine = self._engine
        return engine

    def close(self) -> None:
        """Raise the store's marker to how far the catalog got (when the command used the store), then release
        the catalog's connections (the Spark session stays for reuse in-process)."""
        if self._checked is not None:
            self._record_reach(*self._checked)
            self._checked = None
        if self._engine is not None:
            self._engine.close()
            self._engine = None
        if self._catalog is not None:
            self._catalog.close()
            self._catalog = None
