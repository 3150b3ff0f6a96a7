"""`replctl engine start|status|stop`: the managed Spark engine (a local Spark Connect server)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from replctl.cli.boundary import run
from replctl.cli.context import AppContext
from replctl.cli.output import emit_json, stdout

app = typer.Typer(
    help="A warm local Spark engine (Spark Connect) that later commands use.", no_args_is_help=True
)


def _record_json(record: Any) -> dict[str, Any]:
    started = datetime.fromisoformat(record.started_at)
    return {
        "address": record.address,
        "pid": record.pid,
        "version": record.version,
        "master": record.master,
        "started_at": record.started_at,
        "uptime_s": int((datetime.now(UTC) - started).total_seconds()),
        "log": record.log,
    }


@app.command("start")
def start(
    ctx: typer.Context,
    master: Annotated[str, typer.Option("--master", metavar="URL", help="The engine's Spark master.")] = (
        "local[*]"
    ),
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="Its Spark Connect port.")] = 15002,
    conf: Annotated[
        list[str] | None, typer.Option("--conf", metavar="KEY=VALUE", help="Spark setting, repeatable.")
    ] = None,
) -> None:
    """Start the engine in the background and wait until it answers; nothing to do when it is up."""

    def action(app: AppContext) -> dict[str, Any]:
        from replctl.adapters.spark import server
        from replctl.config import parse_conf

        record, started = server.start(
            app.settings.home, master=master, port=port, conf=parse_conf(conf or [])
        )
        return {"started": started, **_record_json(record)}

    def render(app: AppContext, out: dict[str, Any]) -> None:
        if app.json:
            emit_json({"ok": True, **out})
            return
        verb = "started" if out["started"] else "already up"
        stdout().print(
            f"engine {verb} at {out['address']} (Spark {out['version']}, pid {out['pid']}); log: {out['log']}",
            markup=False,
        )

    run(ctx, action, render)


@app.command("status")
def status(ctx: typer.Context) -> None:
    """Whether the engine is up, its address, uptime, Spark version and log."""

    def action(app: AppContext) -> dict[str, Any]:
        from replctl.adapters.spark import server

        found = server.state(app.settings.home)
        doc: dict[str, Any] = {"state": "up" if found.up else "down", "recorded": found.record is not None}
        if found.record is not None:
            doc.update(_record_json(found.record))
        else:
            doc["log"] = str(app.settings.home / server.LOG)
        return doc

    def render(app: AppContext, out: dict[str, Any]) -> None:
        if app.json:
            emit_json({"ok": True, **out})
            return
        if out["state"] == "up":
            stdout().print(
                f"up at {out['address']}, Spark {out['version']}, for {out['uptime_s']} s, pid {out['pid']}; "
                f"log: {out['log']}",
                markup=False,
            )
        elif out["recorded"]:
            stdout().print(
                f"down: the engine recorded at {out['address']} does not answer; log: {out['log']}\n"
                "hint: replctl engine start",
                markup=False,
            )
        else:
            stdout().print("down: no engine started\nhint: replctl engine start", markup=False)

    run(ctx, action, render)


@app.command("stop")
def stop(ctx: typer.Context) -> None:
    """Stop the engine; later commands run on local Spark."""

    def action(app: AppContext) -> dict[str, Any]:
        from replctl.adapters.spark import server

        record = server.stop(app.settings.home)
        return {"stopped": record is not None, "address": record.address if record else None}

    def render(app: AppContext, out: dict[str, Any]) -> None:
        if app.json:
            emit_json({"ok": True, **out})
            return
        stdout().print(f"engine at {out['address']} stopped" if out["stopped"] else "no engine was up")

    run(ctx, action, render)
