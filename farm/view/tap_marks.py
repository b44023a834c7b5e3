"""Where a step's action touched the screen, to draw over the step's screenshot (DESIGN: "screenshot with the
tap drawn").

A `tap` or `long_press` at `x`/`y` is a point; a `swipe` from `x1`/`y1` to `x2`/`y2` is a line, and a swipe in a
`direction` is drawn where the host executor swipes for it (`host_agent.actions`: from the centre, 30 % of the
height or 35 % of the width each way). The mark is an inline SVG laid over the image, in the image's own pixels
(its size read from the file's header here): the page needs no script, and the mark scales with the image.

Coordinates are taken as the screenshot's pixels. That holds for the host executor, whose screenshots are the
whole screen at scale 1; the contract (docs/agent-app.md) records no screen size, so a point of an app that
scales its screenshots down cannot be placed exactly, and a point outside the image is not drawn (named instead):
a mark clamped to the edge would show a touch where none happened. A call by `ref` names no position (the
screen text carries no bounds): the page shows the screen line the ref names instead.
"""

from __future__ import annotations

import math
import struct
from pathlib import Path
from typing import IO, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict

MAX_SIDE = 100_000
"""A side longer than this (pixels) is not believed: the header is damaged or hostile."""
MAX_JPEG_SCAN = 4 * 1024 * 1024
"""Bytes of a JPEG read at most looking for its frame header (EXIF and ICC segments come first)."""
MARK_RADIUS = 0.04
"""Radius of a tap's ring as a share of the screenshot's shorter side (about 12 px as the page shows a phone screen)."""
POINT_TOOLS = frozenset({"tap", "long_press"})
"""Tools whose `x`/`y` is a touch point."""
# Where the host executor swipes for a direction: (from x, from y, to x, to y) as shares of width and height.
_DIRECTIONS: dict[str, tuple[float, float, float, float]] = {
    "up": (0.5, 0.8, 0.5, 0.2), "down": (0.5, 0.2, 0.5, 0.8),
    "left": (0.85, 0.5, 0.15, 0.5), "right": (0.15, 0.5, 0.85, 0.5),
}
# JPEG start-of-frame markers (baseline, progressive, lossless…): every 0xC0–0xCF but DHT, JPG and DAC.
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


class ImageSize(NamedTuple):
    """A picture's width and height in pixels."""

    width: int
    height: int


class Mark(BaseModel):
    """A touch to draw over a screenshot, in the screenshot's pixels."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["tap", "swipe"]
    """A point (tap, long press) or a line (swipe)."""
    x: float
    """The point, or where the swipe starts."""
    y: float
    x2: float | None = None
    """Where a swipe ends."""
    y2: float | None = None
    radius: float
    """Radius of the ring drawn at the point (or the swipe's start)."""
    head: str = ""
    """A swipe's arrow head: SVG polyline points at its end."""
    label: str
    """The mark in words (`tap at (540, 1200)`), shown under the screenshot and read by screen readers."""


def image_size(path: Path) -> ImageSize | None:
    """The size a PNG, JPEG, GIF or WebP file's header gives; None when the file is none of those or cannot be
    read (the page then shows the image without a mark)."""
    try:
        size: ImageSize | None
        with path.open("rb") as handle:
            head = handle.read(32)
            if head.startswith(b"\x89PNG\r\n\x1a\n") and head[12:16] == b"IHDR":
                size = ImageSize(*struct.unpack(">II", head[16:24]))
            elif head[:6] in (b"GIF87a", b"GIF89a"):
                size = ImageSize(*struct.unpack("<HH", head[6:10]))
            elif head[:4] == b"RIFF" and head[8:12] == b"WEBP":
                size = _webp(head)
            elif head[:2] == b"\xff\xd8":
                handle.seek(2)
                size = _jpeg(handle)
            else:
                return None
    except (OSError, struct.error):
        return None
    if size is None or not (0 < size.width <= MAX_SIDE and 0 < size.height <= MAX_SIDE):
        return None
    return size


def _webp(head: bytes) -> ImageSize | None:
    chunk = head[12:16]
    if chunk == b"VP8 " and head[23:26] == b"\x9d\x01\x2a":
        width, height = struct.unpack("<HH", head[26:30])
        return ImageSize(width & 0x3FFF, height & 0x3FFF)
    if chunk == b"VP8L" and head[20] == 0x2F:
        bits = int.from_bytes(head[21:25], "little")
        return ImageSize((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
    if chunk == b"VP8X":
        return ImageSize(int.from_bytes(head[24:27], "little") + 1, int.from_bytes(head[27:30], "little") + 1)
    return None


def _jpeg(handle: IO[bytes]) -> ImageSize | None:
    """The frame header's size, walking the segments after SOI (never reading a segment's body but the frame's)."""
    while handle.tell() < MAX_JPEG_SCAN:
        byte = handle.read(1)
        if not byte:
            return None
        if byte != b"\xff":
            continue  # Not at a marker (entropy-coded data, a damaged file): look on.
        marker = handle.read(1)
        while marker == b"\xff":  # Fill bytes before a marker.
            marker = handle.read(1)
        if not marker:
            return None
        code = marker[0]
        if code == 0xD9 or code == 0xDA:  # End of image, or the scan began without a frame header.
            return None
        if code == 0x01 or 0xD0 <= code <= 0xD8 or code == 0x00:  # Markers without a length.
            continue
        length_bytes = handle.read(2)
        if len(length_bytes) < 2:
            return None
        length = struct.unpack(">H", length_bytes)[0]
        if length < 2:
            return None
        if code in _SOF:
            body = handle.read(5)
            if len(body) < 5:
                return None
            height, width = struct.unpack(">HH", body[1:5])
            return ImageSize(width, height)
        handle.seek(length - 2, 1)
    return None


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _inside(x: float, y: float, size: ImageSize) -> bool:
    return 0 <= x < size.width and 0 <= y < size.height


def _show(value: float) -> str:
    return f"{value:.0f}" if value == int(value) else f"{value:.1f}"


def _head(x1: float, y1: float, x2: float, y2: float, length: float) -> str:
    """An arrow head at (x2, y2) pointing away from (x1, y1): the points of a `<polyline>`."""
    angle = math.atan2(y2 - y1, x2 - x1)
    points = [(x2 - length * math.cos(angle + turn), y2 - length * math.sin(angle + turn)) for turn in (0.5, -0.5)]
    return f"{points[0][0]:.1f},{points[0][1]:.1f} {x2:.1f},{y2:.1f} {points[1][0]:.1f},{points[1][1]:.1f}"


def mark_for(tool: str | None, args: object, size: ImageSize | None) -> tuple[Mark | None, str | None]:
    """(the mark of a call over a screenshot of `size`, or why a position it gives is not drawn).

    Both are None when the call gives no position (a `ref`, `back`, `answer`…): nothing to draw, nothing to say.
    """
    if tool is None or not isinstance(args, dict):
        return None, None
    if tool in POINT_TOOLS and ("x" in args or "y" in args):
        x, y = _number(args.get("x")), _number(args.get("y"))
        if x is None or y is None:
            return None, f"{tool}: x and y are not both numbers, not drawn"
        where = f"({_show(x)}, {_show(y)})"
        if size is None:
            return None, f"{tool} at {where}: the screenshot's size is unreadable, not drawn"
        if not _inside(x, y, size):
            return None, f"{tool} at {where} is outside the {size.width}×{size.height} screenshot, not drawn"
        radius = MARK_RADIUS * min(size)
        return Mark(kind="tap", x=x, y=y, radius=radius, label=f"{tool.replace('_', ' ')} at {where}"), None
    if tool != "swipe":
        return None, None
    if any(k in args for k in ("x1", "y1", "x2", "y2")):
        points = [_number(args.get(k)) for k in ("x1", "y1", "x2", "y2")]
        if any(p is None for p in points):
            return None, "swipe: x1, y1, x2 and y2 are not all numbers, not drawn"
        x1, y1, x2, y2 = (p for p in points if p is not None)
        where = f"from ({_show(x1)}, {_show(y1)}) to ({_show(x2)}, {_show(y2)})"
        if size is None:
            return None, f"swipe {where}: the screenshot's size is unreadable, not drawn"
        if not (_inside(x1, y1, size) and _inside(x2, y2, size)):
            return None, f"swipe {where} leaves the {size.width}×{size.height} screenshot, not drawn"
        label = f"swipe {where}"
    else:
        direction = args.get("direction")
        if not isinstance(direction, str) or direction not in _DIRECTIONS or size is None:
            return None, None
        fx1, fy1, fx2, fy2 = _DIRECTIONS[direction]
        x1, y1, x2, y2 = fx1 * size.width, fy1 * size.height, fx2 * size.width, fy2 * size.height
        label = f"swipe {direction} (drawn where the host executor swipes)"
    radius = MARK_RADIUS * min(size)
    return Mark(kind="swipe", x=x1, y=y1, x2=x2, y2=y2, radius=radius,
                head=_head(x1, y1, x2, y2, 2.5 * radius), label=label), None
