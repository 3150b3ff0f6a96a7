"""`replctl report --html PATH`: the topology, version vectors, lag, pending work and journal in one HTML file."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from replctl.cli.boundary import run
from replctl.cli.context import AppContext
from replctl.cli.output import stdout
from replctl.errors import InvalidInput

if TYPE_CHECKING:
    from replctl.services.report import ReportPage, ReportWritten


def report(
    ctx: typer.Context,
    html: Annotated[
        Path,
        typer.Option(
            "--html",
            metavar="PATH",
            help="Write the report to this file (replaced atomically, never through a link; its folder must "
            "exist), or to stdout with -.",
        ),
    ],
    recent: Annotated[
        int, typer.Option("--operations", min=1, metavar="N", help="How many recent operations to list.")
    ] = 20,
) -> None:
    """One self-contained HTML page: topology graph, version-vector heat map, lag, pending work, recent operations.

    Reads what `status` reads and changes nothing; nothing in the page is fetched from the network.
    """

    def action(app: AppContext) -> ReportWritten | ReportPage:
        from replctl.services import report as report_service

        if str(html) == "-":
            # `-` is stdout, as for most tools that write a file (issue 18), never a file named "-".
            if app.json:
                raise InvalidInput(
                    "--html - writes the page on stdout, where --json writes its document",
                    code="bad-option",
                    hint="give --html FILE with --json, or drop --json",
                )
            return report_service.page(
                app.catalog(),
                app.engine().store,
                recent=recent,
                manifests=app.manifests(),
                require_recoverable=app.settings.require_recoverable,
            )
        # Before the catalog is read: the page must not replace the catalog, a store's file or the config.
        app.check_output(html, "--html", "the report")
        return report_service.write_html(
            app.catalog(),
            html,
            app.engine().store,
            recent=recent,
            mode=app.settings.file_mode,
            manifests=app.manifests(),
            require_recoverable=app.settings.require_recoverable,
        )

    def render(_app: AppContext, out: ReportWritten | ReportPage) -> None:
        from replctl.services.report import ReportPage

        if isinstance(out, ReportPage):
            sys.stdout.write(out.html)
            sys.stdout.flush()
            return
        counts = ", ".join(
            (
                _count(out.locations, "location"),
                _count(out.connections, "connection"),
                _count(out.operations, "operation"),
            )
        )
        stdout().print(f"report written: {out.path} ({counts})", markup=False)

    run(ctx, action, render)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def register(app: typer.Typer) -> None:
    """Attach `report` to the root app."""
    app.command("report")(report)
