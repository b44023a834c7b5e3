"""`root:`, `unroot:`, `remount:`: answered as adbd on a user (production) build answers them.

A user build's adbd runs as the shell user and may not restart as root (`ro.debuggable=0`): each service
writes adbd's one-line message and closes, so `adb root` prints it instead of an error about a closed stream.
"""

from __future__ import annotations

from farm.sim.adbd import Stream
from farm.sim.phone import PhoneState

ROOT_REFUSED = "adbd cannot run as root in production builds\n"
"""daemon/restart_service.cpp, restart_root_service: `__android_log_is_debuggable()` is false."""
NOT_ROOT = "adbd not running as root\n"
"""restart_unroot_service: adbd is not root, so there is nothing to undo."""
REMOUNT_NOT_ROOT = 'Not running as root. Try "adb root" first.\n'
"""remount (adbd's remount service, later /system/bin/remount): the first check is for uid 0."""


async def serve_root(phone: PhoneState, stream: Stream) -> None:
    """`root:` on a production build: refused with adbd's message (a debuggable build is not simulated)."""
    await stream.accept()
    await stream.write(ROOT_REFUSED.encode())


async def serve_unroot(phone: PhoneState, stream: Stream) -> None:
    """`unroot:`: adbd already runs as the shell user."""
    await stream.accept()
    await stream.write(NOT_ROOT.encode())


async def serve_remount(phone: PhoneState, stream: Stream) -> None:
    """`remount:[ARGS]`: needs root, which a user build's adbd never has."""
    await stream.accept()
    await stream.write(REMOUNT_NOT_ROOT.encode())
