"""The options the data-plane commands (`log`, `replicate`, `delete`, `recover`, `drill`) share."""

from __future__ import annotations

from typing import Annotated

import typer

DryRun = Annotated[bool, typer.Option("--dry-run", help="Show what would happen; change nothing.")]
