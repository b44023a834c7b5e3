"""Pixels of the virtual phone: the node tree drawn with Pillow (boxes and text) as PNG or JPEG."""

from __future__ import annotations

import io
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from PIL import Image, ImageDraw, ImageFont

from farm.sim.apps.base import Node

if TYPE_CHECKING:
    from farm.sim.ui import UiDevice

Font = ImageFont.FreeTypeFont | ImageFont.ImageFont

# Fonts with CJK glyphs first; any TrueType font next; Pillow's built-in font last.
_FONT_CANDIDATES = (
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/noto-cjk/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/truetype/noto/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
    "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",
    "/usr/share/fonts/truetype/arphic/uming.ttc",
    "/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf",
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
)


def _font_path() -> str | None:
    for path in _FONT_CANDIDATES:
        if Path(path).is_file():
            return path
    for pattern in ("*CJK*.tt[cf]", "*wqy*.tt[cf]", "*.ttf"):
        for found in sorted(Path("/usr/share/fonts").rglob(pattern)) if Path("/usr/share/fonts").is_dir() else []:
            return str(found)
    return None


@lru_cache(maxsize=32)
def font(size: int) -> Font:
    """A font of `size` px: CJK-capable when the system has one, never failing."""
    path = _font_path()
    if path is not None:
        try:
            return ImageFont.truetype(path, size)
        except OSError:
            pass
    try:
        return ImageFont.load_default(size)
    except (TypeError, OSError):
        return ImageFont.load_default()


BG = (250, 250, 250)
INK = (32, 33, 36)
MUTED = (95, 99, 104)
ACCENT = (26, 115, 232)
BUTTON = (232, 240, 254)
SURFACE = (255, 255, 255)


def _fit(draw: ImageDraw.ImageDraw, text: str, fnt: Font, width: int) -> str:
    """`text` cut to fit `width` pixels (with an ellipsis)."""
    text = text.replace("\n", " ")
    if width <= 0 or draw.textlength(text, font=fnt) <= width:
        return text
    while text and draw.textlength(text + "…", font=fnt) > width:
        text = text[:-1]
    return text + "…"


def _draw_node(draw: ImageDraw.ImageDraw, node: Node, scale: float) -> None:
    left, top, right, bottom = (round(v * scale) for v in node.bounds)
    if right <= left or bottom <= top:
        return
    height = bottom - top
    if node.cls.endswith("Button") or (node.cls.endswith("Switch")):
        radius = max(2, min(height // 3, round(24 * scale)))
        draw.rounded_rectangle((left + 4, top + 4, right - 4, bottom - 4), radius=radius,
                               fill=BUTTON if node.enabled else (230, 230, 230))
    elif node.cls.endswith("EditText"):
        draw.rectangle((left + 4, top + 4, right - 4, bottom - 4), fill=SURFACE)
        draw.line((left + 8, bottom - 6, right - 8, bottom - 6), fill=ACCENT if node.focused else MUTED,
                  width=max(1, round(3 * scale)))
    elif node.clickable and node.children and not node.text:
        draw.line((left, bottom - 1, right, bottom - 1), fill=(225, 225, 225), width=1)
    if node.cls.endswith("Switch"):
        knob_r = max(3, height // 5)
        cx, cy = right - knob_r * 3, (top + bottom) // 2
        draw.rounded_rectangle((cx - knob_r * 2, cy - knob_r, cx + knob_r * 2, cy + knob_r), radius=knob_r,
                               fill=ACCENT if node.checked else (189, 193, 198))
        kx = cx + knob_r if node.checked else cx - knob_r
        draw.ellipse((kx - knob_r, cy - knob_r, kx + knob_r, cy + knob_r), fill=SURFACE)
    if node.rid.endswith(":id/icon"):
        _draw_icon(draw, node, (left, top, right, bottom))
        return
    text = node.text or (node.desc if node.cls.endswith("ImageButton") else "")
    if text:
        size = max(8, min(round(height * 0.42), round(48 * scale)))
        fnt = font(size)
        colour = MUTED if node.cls.endswith("EditText") and text == node.hint else INK
        shown = _fit(draw, text, fnt, right - left - 16)
        if node.cls.endswith(("Button", "ImageButton")) or node.selected:
            tw = draw.textlength(shown, font=fnt)
            x = left + max(4, (right - left - tw) / 2)
        else:
            x = left + 8
        draw.text((x, top + (height - size) / 2), shown, fill=colour, font=fnt)


def _draw_icon(draw: ImageDraw.ImageDraw, node: Node, box: tuple[int, int, int, int]) -> None:
    """A launcher icon: a coloured disc with the label's first letter, the label below."""
    left, top, right, bottom = box
    r = min(right - left, bottom - top) // 4
    cx, cy = (left + right) // 2, top + (bottom - top) * 2 // 5
    hue = sum(map(ord, node.text)) % 6
    colour = [(66, 133, 244), (219, 68, 55), (244, 180, 0), (15, 157, 88), (171, 71, 188), (0, 172, 193)][hue]
    draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=colour)
    fnt = font(max(8, r))
    initial = node.text[:1].upper()
    draw.text((cx - draw.textlength(initial, font=fnt) / 2, cy - r / 2), initial, fill=SURFACE, font=fnt)
    size = max(8, (bottom - top) // 7)
    small = font(size)
    shown = _fit(draw, node.text, small, right - left - 8)
    draw.text((cx - draw.textlength(shown, font=small) / 2, cy + r + size // 2), shown, fill=INK, font=small)


def render(ui: UiDevice, fmt: Literal["PNG", "JPEG"], quality: int = 80, scale: float = 1.0) -> bytes:
    """The current screen as image bytes (black when the screen is off); unchanged screens come from a cache."""
    key = (fmt, int(quality), float(scale), bool(ui.phone.screen_on), ui.hierarchy_xml() if ui.phone.screen_on else "")
    cached = ui.screen_cache.get(key)
    if cached is not None:
        return cached
    data = _render(ui, fmt, quality, scale)
    if len(ui.screen_cache) >= 4:
        ui.screen_cache.pop(next(iter(ui.screen_cache)))
    ui.screen_cache[key] = data
    return data


def _render(ui: UiDevice, fmt: Literal["PNG", "JPEG"], quality: int, scale: float) -> bytes:
    width, height = round(ui.width * scale), round(ui.height * scale)
    if not ui.phone.screen_on:
        img = Image.new("RGB", (width, height), (0, 0, 0))
    else:
        roots = ui.roots()
        img = Image.new("RGB", (width, height), BG)
        draw = ImageDraw.Draw(img)
        window, status = roots[0], roots[-1]
        sl, st, sr, sb = (round(v * scale) for v in status.bounds)
        draw.rectangle((sl, st, sr, sb), fill=(230, 230, 230))
        for root in (window, status):
            for node in root.walk():
                if node.modal:
                    # A dialog's scrim: dim what is below it.
                    overlay = Image.new("RGBA", img.size, (0, 0, 0, 96))
                    img.paste(overlay, (0, 0), overlay)
                    draw = ImageDraw.Draw(img)
                    for child in node.children:
                        cl, ct, cr, cb = (round(v * scale) for v in child.bounds)
                        draw.rectangle((cl, ct, cr, cb), fill=SURFACE)
                _draw_node(draw, node, scale)
    buf = io.BytesIO()
    if fmt == "JPEG":
        img.save(buf, "JPEG", quality=max(1, min(int(quality), 100)))
    else:
        img.save(buf, "PNG", optimize=False, compress_level=1)
    return buf.getvalue()
