"""`framebuffer:`: the current screen as adbd's framebuffer service sends it (fbinfo version 2, raw RGBA).

adbd runs `screencap` and rewrites its raw header into `struct fbinfo` (daemon/framebuffer_service.cpp):
fourteen little-endian u32 — version, bpp, colorSpace, size, width, height, then offset and length of red,
blue, green and alpha — followed by `size` bytes of pixels. Older farm tools and STF-style screen paths read it.
"""

from __future__ import annotations

import io
import struct

from farm.sim.adbd import Stream
from farm.sim.phone import PhoneState

FB_VERSION = 2
"""DDMS_RAWIMAGE_VERSION with the colorSpace field."""
COLORSPACE_SRGB = 1
"""screencap's dataspace for an sRGB display."""
FBINFO = struct.Struct("<14I")


def fbinfo(width: int, height: int) -> bytes:
    """The header of an RGBA_8888 frame (red at bit 0, green 8, blue 16, alpha 24)."""
    size = width * height * 4
    return FBINFO.pack(FB_VERSION, 32, COLORSPACE_SRGB, size, width, height, 0, 8, 16, 8, 8, 8, 24, 8)


def frame(phone: PhoneState) -> tuple[int, int, bytes]:
    """(width, height, RGBA pixels) of what the screen shows now."""
    from PIL import Image

    with Image.open(io.BytesIO(phone.ui.screenshot_png())) as img:
        rgba = img.convert("RGBA")
    return rgba.width, rgba.height, rgba.tobytes()


async def serve_framebuffer(phone: PhoneState, stream: Stream) -> None:
    """Header, then the pixels; closed without a byte when there is no display (as when screencap fails)."""
    try:
        width, height, pixels = frame(phone)
    except ImportError:
        return
    await stream.accept()
    # Clients such as ddmlib write a "nudge" byte after the header; the transport acknowledges and drops it.
    await stream.write(fbinfo(width, height))
    view = memoryview(pixels)
    step = stream.conn.max_payload
    for at in range(0, len(view), step):
        await stream.write(bytes(view[at : at + step]))
