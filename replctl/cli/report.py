"""`replctl report --html PATH`: the topology, version vectors, lag, pending work and journal in one HTML file."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from replctl.cli.boundary import run
from replctl.cli.context import AppContext
from replctl.cli.output import emit_json, stdout
from replctl.errors import InvalidInput


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

    def action(app: AppContext) -> dict[str, Any]:
        from replctl.services import report as report_service

        if str(html) == "-":
            # `-` is stdout, as for most tools that write a file (issue 18), never a file named "-".
            if app.json:
                raise InvalidInput(
                    "--html - writes the page on stdout, where --json writes its document",
                    code="bad-option",
                    hint="give --html FILE with --json, or drop --json",
                )
            from replctl.report.page import render_page

            doc = report_service.collect(
                app.catalog(), app.engine().store, recent=recent, manifests=app.manifests()
            )
            return {"page": render_page(doc)}
        return report_service.write_html(
            app.catalog(),
            html,
            app.engine().store,
            recent=recent,
            mode=app.settings.file_mode,
            manifests=app.manifests(),
        )

    def render(app: AppContext, out: dict[str, Any]) -> None:
        if "page" in out:
            sys.stdout.write(out["page"])
            sys.stdout.flush()
            return
        if app.json:
            emit_json({"ok": True, **out})
            return
        counts = ", ".join(
            _count(out[key], noun)
            for key, noun in (
                ("locations", "location"),
                ("connections", "connection"),
                ("operations", "operation"),
            )
        )
        stdout().print(f"report written: {out['path']} ({counts})", markup=False)

    run(ctx, action, render)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def register(app: typer.Typer) -> None:
    """Attach `report` to the root app."""
    app.command("report")(report)
