"""`replctl engine start|status|stop`: the managed Spark engine (a local Spark Connect server)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from replctl.cli.boundary import run
from replctl.cli.context import AppContext
from replctl.cli.output import stdout

if TYPE_CHECKING:
    from replctl.services.managed_engine import EngineStarted, EngineStatus, EngineStopped

app = typer.Typer(
    help="A warm local Spark engine (Spark Connect) that later commands use.", no_args_is_help=True
)


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

    def action(app: AppContext) -> EngineStarted:
        from replctl.config import parse_conf
        from replctl.services import managed_engine

        return managed_engine.start(
            app.managed_engine(), master=master, port=port, conf=parse_conf(conf or [])
        )

    def render(_app: AppContext, out: EngineStarted) -> None:
        verb = "started" if out.started else "already up"
        running = out.engine
        stdout().print(
            f"engine {verb} at {running.address} (Spark {running.version}, pid {running.pid}); "
            f"log: {running.log}",
            markup=False,
        )

    run(ctx, action, render)


@app.command("status")
def status(ctx: typer.Context) -> None:
    """Whether the engine is up, its address, uptime, Spark version and log."""

    def action(app: AppContext) -> EngineStatus:
        from replctl.services import managed_engine

        return managed_engine.status(app.managed_engine())

    def render(_app: AppContext, out: EngineStatus) -> None:
        running = out.engine
        if out.up and running is not None:
            stdout().print(
                f"up at {running.address}, Spark {running.version}, for {running.uptime_s} s, "
                f"pid {running.pid}; log: {running.log}",
                markup=False,
            )
        elif running is not None:
            stdout().print(
                f"down: the engine recorded at {running.address} does not answer; log: {running.log}\n"
                "hint: replctl engine start",
                markup=False,
            )
        else:
            stdout().print("down: no engine started\nhint: replctl engine start", markup=False)

    run(ctx, action, render)


@app.command("stop")
def stop(ctx: typer.Context) -> None:
    """Stop the engine; later commands run on local Spark."""

    def action(app: AppContext) -> EngineStopped:
        from replctl.services import managed_engine

        return managed_engine.stop(app.managed_engine())

    def render(_app: AppContext, out: EngineStopped) -> None:
        stdout().print(f"engine at {out.address} stopped" if out.stopped else "no engine was up")

    run(ctx, action, render)


def register(root: typer.Typer) -> None:
    """Attach `engine` to the root app."""
    root.add_typer(app, name="engine")
