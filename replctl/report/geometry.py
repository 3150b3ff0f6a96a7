"""Where the topology drawing of the report puts things: pure geometry, numbers in and coordinates out.

Locations sit on a circle, in the order the catalog lists them, laid out with plain trigonometry: networkx's
layouts need numpy/scipy, and a layout that depends only on the names keeps two reports of the same topology
comparable side by side. Nothing here knows about markup or colours (`replctl.report.page` and the templates
do); text enters only as a count of characters, to size boxes and labels.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

# Node boxes: a rounded rectangle around the name and the role (SVG user units, about pixels at 100%).
NODE_H = 46.0
NODE_MIN_W = 76.0
CHAR_W = 7.6  # average advance of the 13px sans-serif name; only sizes the box, so an estimate is enough
SUB_CHAR_W = 6.0  # the same for the 10.5px role line
LABEL_CHAR_W = 6.4  # the 11px bold label
# A→B and B→A run side by side, this far from the centre line, instead of on top of each other.
PAIR_OFFSET = 7.0
MARGIN = 70.0
# A label sits this far beside the middle of its line.
LABEL_GAP = 16.0


@dataclass(frozen=True)
class Box:
    """A location's box: centre (x, y) and size (w, h)."""

    x: float
    y: float
    w: float
    h: float

    @property
    def extent(self) -> tuple[float, float, float, float]:
        """(left, top, right, bottom)."""
        return (self.x - self.w / 2, self.y - self.h / 2, self.x + self.w / 2, self.y + self.h / 2)


@dataclass(frozen=True)
class Line:
    """A connection's arrow from (x1, y1) to (x2, y2); (nx, ny) is the unit normal on its right."""

    x1: float
    y1: float
    x2: float
    y2: float
    nx: float
    ny: float


@dataclass(frozen=True)
class LabelPlace:
    """Where a line's label goes: its anchor point, SVG text-anchor, and its estimated extent."""

    x: float
    y: float
    anchor: str  # "start", "middle" or "end"
    extent: tuple[float, float, float, float]  # so the view box never cuts a label off


def node_width(name_chars: int, sub_chars: int) -> float:
    """The width of a box whose name has `name_chars` characters and whose role line `sub_chars`."""
    return max(NODE_MIN_W, CHAR_W * name_chars + 26, SUB_CHAR_W * sub_chars + 20)


def layout(names: Sequence[str], spacing: float = 150.0) -> dict[str, tuple[float, float]]:
    """Centres of the locations on a circle around (0, 0), first at the top (two: left and right), clockwise.

    The radius grows with the count so neighbouring centres stay `spacing` apart (the caller passes the widest
    box plus a gap); it never drops below 210, so a small topology still has room for its connections' labels.
    """
    n = len(names)
    if n == 0:
        return {}
    if n == 1:
        return {names[0]: (0.0, 0.0)}
    radius = max(210.0, spacing / (2 * math.sin(math.pi / n)))
    start = math.pi if n == 2 else -math.pi / 2
    return {
        name: (radius * math.cos(start + 2 * math.pi * i / n), radius * math.sin(start + 2 * math.pi * i / n))
        for i, name in enumerate(names)
    }


def place_boxes(widths: Mapping[str, float]) -> dict[str, Box]:
    """A box per name, in the given order on the circle, spaced by the widest box plus a gap."""
    names = list(widths)
    centres = layout(names, spacing=max([150.0, *(w + 60 for w in widths.values())]))
    return {name: Box(*centres[name], widths[name], NODE_H) for name in names}


def _box_exit(box: Box, dx: float, dy: float) -> float:
    """How far from the centre of `box` a ray with unit direction (dx, dy) leaves it."""
    limits = []
    if abs(dx) > 1e-9:
        limits.append(box.w / 2 / abs(dx))
    if abs(dy) > 1e-9:
        limits.append(box.h / 2 / abs(dy))
    return min(limits) if limits else 0.0


def arrow(a: Box, b: Box, *, paired: bool) -> Line:
    """The arrow from box `a` to box `b`, from edge to edge; `paired` (B→A exists too) moves it to its right."""
    length = math.hypot(b.x - a.x, b.y - a.y) or 1.0
    dx, dy = (b.x - a.x) / length, (b.y - a.y) / length
    # The normal on the right of the direction of travel: A→B and B→A end up on opposite sides.
    nx, ny = -dy, dx
    offset = PAIR_OFFSET if paired else 0.0
    start = _box_exit(a, dx, dy) + 2
    end = length - _box_exit(b, dx, dy) - 3
    return Line(
        a.x + dx * start + nx * offset,
        a.y + dy * start + ny * offset,
        a.x + dx * end + nx * offset,
        a.y + dy * end + ny * offset,
        nx,
        ny,
    )


def label_place(line: Line, chars: int) -> LabelPlace:
    """A label of `chars` characters beside the middle of `line`, on its own side, so the two directions of a
    pair do not collide; the text grows away from the line."""
    mx = (line.x1 + line.x2) / 2 + line.nx * LABEL_GAP
    my = (line.y1 + line.y2) / 2 + line.ny * LABEL_GAP
    anchor = "middle" if abs(line.nx) < 0.35 else ("start" if line.nx > 0 else "end")
    span = LABEL_CHAR_W * chars
    left = {"middle": mx - span / 2, "start": mx, "end": mx - span}[anchor]
    return LabelPlace(mx, my, anchor, (left, my - 8, left + span, my + 8))


def view_box(extents: Iterable[tuple[float, float, float, float]]) -> tuple[float, float, float, float]:
    """(min x, min y, width, height) holding every extent with a margin; a fixed box when there is none."""
    boxes = list(extents)
    if not boxes:
        return (-200.0, -60.0, 400.0, 120.0)
    min_x = min(b[0] for b in boxes) - MARGIN
    min_y = min(b[1] for b in boxes) - MARGIN
    max_x = max(b[2] for b in boxes) + MARGIN
    max_y = max(b[3] for b in boxes) + MARGIN
    return (min_x, min_y, max_x - min_x, max_y - min_y)


def coord(value: float) -> str:
    """A coordinate with at most one decimal: stable output, small files."""
    return f"{value:.1f}".rstrip("0").rstrip(".")
