"""The state of one virtual phone: profile, file system, properties, settings, screen."""

from __future__ import annotations

import secrets
import shutil
import tempfile
import time
import zlib
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from farm.sim import rootfs
from farm.sim.audio import default_volumes
from farm.sim.logbuf import LogBuffer
from farm.sim.profile import PhoneProfile, default_profile
from farm.sim.rootfs import STORAGE, PathEscapeError, canonical, resolve

if TYPE_CHECKING:
    from farm.sim.ui import UiDevice

__all__ = ["OWNER_MARKER", "ROOT_PREFIX", "PathEscapeError", "PhoneState", "build_props", "build_settings"]

ROOT_PREFIX = "farm-sim-phone-"
"""Name prefix of the temp directory holding a phone's file system (`<dir>/fs`) and its owner marker."""
OWNER_MARKER = ".farm-sim-owner"
"""File beside `fs/` whose content is the phone's owner token: `farm sim down` removes only what carries it."""
_STORAGE_DIRS = ("DCIM", "Download", "Pictures", "Music", "Documents", "Movies", "Alarms", "Android/data")
_SKELETON = (
    "data/local/tmp",
    "data/app",
    "data/data",
    "system/bin",
    "system/app",
    "system/priv-app",
    "vendor",
    "proc",
    "dev",
    "etc",
    "mnt",
    "storage/emulated",
    "storage/self",
    "acct",
    "cache",
    "config",
)


class PhoneState:
    """One virtual phone. Shared by the transport (shell, sync) and the simulated apps."""

    def __init__(self, profile: PhoneProfile | None = None, root: Path | None = None) -> None:
        self.profile: PhoneProfile = profile or default_profile()
        self.owner_token = secrets.token_hex(16)
        """Written beside a root this phone created, so a cleanup can tell it from anything else."""
        self.box: Path | None = None
        """The temp directory this phone created around its root (None when given a root)."""
        if root is None:
            self.box = Path(tempfile.mkdtemp(prefix=ROOT_PREFIX)).resolve()
            (self.box / OWNER_MARKER).write_text(self.owner_token + "\n", encoding="utf-8")
            root = self.box / "fs"
            root.mkdir()
        # The marker sits outside the root, where nothing the phone does can reach it.
        self.root: Path = root.resolve()
        self.props: dict[str, str] = build_props(self.profile)
        self.settings: dict[str, dict[str, str]] = build_settings(self.profile)
        # Every phone has its own hardware serial and android_id, even with the same profile.
        unique = secrets.token_hex(8)
        self.props["ro.serialno"] = self.props["ro.boot.serialno"] = f"SIM{unique[:10].upper()}"
        self.settings["secure"]["android_id"] = unique
        self.screen_on: bool = True
        self.locked: bool = False
        self.booted_at: float = time.time()
        """Wall-clock second the phone booted: `SystemClock.elapsedRealtime()` counts from here."""
        self.muted_streams: set[str] = set()
        """Audio streams muted with KEYCODE_VOLUME_MUTE (`STREAM_MUSIC`); Android keeps this in memory only."""
        self.reverse_forwards: list[str] = []
        self.link_drops = 0
        """How many times a disconnect fault dropped the link (each fires once; reconnects are healthy)."""
        self.logs = LogBuffer()
        """The phone's log (logd's rings): `log` and the system write it, `logcat` reads it."""
        self.u2_server_streams = 0
        """Open `app_process … com.wetest.uia2.Main` shells; tcp:9008 answers only while > 0."""
        self.serial: str = ""
        """`127.0.0.1:PORT` once the transport is listening."""
        self._ui: UiDevice | None = None
        self._make_skeleton()

    @property
    def ui(self) -> UiDevice:
        """The simulated UI (created on first use so the transport works without it)."""
        if self._ui is None:
            from farm.sim.ui import UiDevice

            self._ui = UiDevice(self)
        return self._ui

    @property
    def ui_started(self) -> bool:
        """Whether the UI has been created (so dumps need not create it)."""
        return self._ui is not None

    def now(self) -> datetime:
        """Wall-clock time in the phone's time zone (the profile's; UTC when the name is unknown)."""
        try:
            return datetime.now(ZoneInfo(self.profile.timezone))
        except (ZoneInfoNotFoundError, ValueError):
            return datetime.now(ZoneInfo("UTC"))

    def elapsed_ms(self, wall: float | None = None) -> int:
        """`SystemClock.elapsedRealtime()` at wall-clock second `wall` (now by default), in milliseconds."""
        return round(((time.time() if wall is None else wall) - self.booted_at) * 1000)

    def external_files_dir(self, package: str) -> str:
        """`/sdcard/Android/data/<pkg>/files` — where apps write their own files."""
        return f"{STORAGE}/Android/data/{package}/files"

    def canonical(self, device_path: str, cwd: str = "/") -> str:
        """Normalised absolute device path with storage aliases folded into `/sdcard` (lexical only)."""
        return canonical(device_path, cwd)

    def host_path(self, device_path: str, cwd: str = "/", *, follow: bool = True) -> Path:
        """Host path backing `device_path`, strictly inside the root (`farm.sim.rootfs.resolve`).

        Raises PathEscapeError (also a ValueError) for a link leading out, OSError for a loop or a
        missing directory on the way; `follow=False` leaves a final symlink unfollowed.
        """
        return resolve(self.root, device_path, cwd, follow=follow)

    def read_bytes(self, device_path: str, limit: int | None = None) -> bytes:
        """A regular file's content, read through the resolver (never a FIFO, never out of the root)."""
        return rootfs.read_bytes(self.root, device_path, limit)

    def read_text(self, device_path: str) -> str:
        """A regular file's content as UTF-8 text."""
        return self.read_bytes(device_path).decode("utf-8")

    def write_atomic(self, device_path: str, data: bytes | str) -> None:
        """Replace a file (parents created), never writing through a symlink."""
        rootfs.write_atomic(self.root, device_path, data.encode("utf-8") if isinstance(data, str) else data)

    def append(self, device_path: str, data: bytes | str) -> None:
        """Append to a file (created when missing)."""
        rootfs.append_bytes(self.root, device_path, data.encode("utf-8") if isinstance(data, str) else data)

    def makedirs(self, device_path: str) -> Path:
        """`mkdir -p` inside the phone; the resolved host directory."""
        return rootfs.makedirs(self.root, device_path)

    def close(self) -> None:
        """Remove the temp directory (file system and marker) if this phone created it."""
        if self.box is not None:
            shutil.rmtree(self.box, ignore_errors=True)

    def _make_skeleton(self) -> None:
        for rel in _SKELETON:
            (self.root / rel).mkdir(parents=True, exist_ok=True)
        storage = self.root / STORAGE.lstrip("/")
        for rel in _STORAGE_DIRS:
            (storage / rel).mkdir(parents=True, exist_ok=True)
        for pkg in self.profile.packages:
            (self.root / "data" / "data" / pkg.name).mkdir(exist_ok=True)
            if pkg.third_party:
                (storage / "Android" / "data" / pkg.name / "files").mkdir(parents=True, exist_ok=True)
        from farm.sim.apps.notes_store import PACKAGE as NOTES
        from farm.sim.apps.notes_store import seed_samples

        if self.profile.package(NOTES) is not None:
            seed_samples(self)


def build_props(profile: PhoneProfile) -> dict[str, str]:
    """System properties `getprop` reports for this profile."""
    fingerprint = (
        f"{profile.brand}/{profile.name}/{profile.device}:{profile.android_release}/"
        f"UQ1A.240105.004/11206848:user/release-keys"
    )
    props = {
        "ro.product.brand": profile.brand,
        "ro.product.manufacturer": profile.manufacturer,
        "ro.product.model": profile.model,
        "ro.product.device": profile.device,
        "ro.product.name": profile.name,
        "ro.product.board": profile.device,
        "ro.product.cpu.abi": "arm64-v8a",
        "ro.product.cpu.abilist": "arm64-v8a,armeabi-v7a,armeabi",
        "ro.product.locale": profile.locale,
        "ro.build.version.release": profile.android_release,
        "ro.build.version.sdk": str(profile.sdk),
        "ro.build.version.security_patch": "2024-01-05",
        "ro.build.id": "UQ1A.240105.004",
        "ro.build.type": "user",
        "ro.build.tags": "release-keys",
        "ro.build.fingerprint": fingerprint,
        "ro.build.characteristics": "nosdcard",
        "ro.serialno": f"SIM{zlib.crc32(profile.model.encode()) % 10**8:08d}",
        "ro.boot.serialno": f"SIM{zlib.crc32(profile.model.encode()) % 10**8:08d}",
        "ro.sf.lcd_density": str(profile.screen.density),
        "ro.adb.secure": "0",
        "ro.debuggable": "0",
        "ro.secure": "1",
        "ro.kernel.qemu": "0",
        "persist.sys.locale": profile.locale,
        "persist.sys.timezone": profile.timezone,
        "persist.sys.usb.config": "adb",
        "sys.boot_completed": "1",
        "dev.bootcomplete": "1",
        "init.svc.adbd": "running",
        "service.adb.root": "0",
        "gsm.sim.state": "READY",
        "gsm.operator.alpha": "Sim Mobile",
        "wifi.interface": "wlan0",
    }
    return props


def build_settings(profile: PhoneProfile) -> dict[str, dict[str, str]]:
    """Initial `settings` namespaces (system / secure / global)."""
    return {
        "system": {
            "screen_brightness": "128",
            "screen_brightness_mode": "1",  # adaptive brightness, on by default on a Pixel
            "screen_off_timeout": "60000",
            "time_12_24": "24",
            "font_scale": "1.0",
            "accelerometer_rotation": "0",
            **default_volumes(),
        },
        "secure": {
            "android_id": f"{zlib.crc32(profile.device.encode()):08x}{zlib.crc32(profile.name.encode()):08x}",
            "default_input_method": "com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME",
            "location_mode": "3",
            "enabled_accessibility_services": "",
            # UiModeManager.MODE_NIGHT_NO: the Settings app's 深色主题 and `cmd uimode night` read and write it.
            "ui_night_mode": "1",
        },
        "global": {
            "adb_enabled": "1",
            "airplane_mode_on": "0",
            "auto_time": "1",
            "auto_time_zone": "1",
            "bluetooth_on": "0",
            "wifi_on": "1",
            "mobile_data": "1",
            "stay_on_while_plugged_in": "0",
            "device_name": profile.model,
            "development_settings_enabled": "1",
        },
    }
