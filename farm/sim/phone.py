"""The state of one virtual phone: profile, file system, properties, settings, screen."""

from __future__ import annotations

import posixpath
import secrets
import shutil
import tempfile
import zlib
from pathlib import Path
from typing import TYPE_CHECKING

from farm.sim.profile import PhoneProfile, default_profile

if TYPE_CHECKING:
    from farm.sim.ui import UiDevice

# Every alias of the primary external storage maps to one host directory.
_STORAGE_ALIASES = (
    "/storage/emulated/0",
    "/storage/self/primary",
    "/mnt/sdcard",
    "/mnt/user/0/primary",
    "/data/media/0",
    "/sdcard",
)
_STORAGE = "/sdcard"
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


class PathEscapeError(ValueError):
    """A device path that would resolve outside the phone's root."""


class PhoneState:
    """One virtual phone. Shared by the transport (shell, sync) and the simulated apps."""

    def __init__(self, profile: PhoneProfile | None = None, root: Path | None = None) -> None:
        self.profile: PhoneProfile = profile or default_profile()
        self._owns_root = root is None
        self.root: Path = (root or Path(tempfile.mkdtemp(prefix="farm-sim-phone-"))).resolve()
        self.props: dict[str, str] = build_props(self.profile)
        self.settings: dict[str, dict[str, str]] = build_settings(self.profile)
        # Every phone has its own hardware serial and android_id, even with the same profile.
        unique = secrets.token_hex(8)
        self.props["ro.serialno"] = self.props["ro.boot.serialno"] = f"SIM{unique[:10].upper()}"
        self.settings["secure"]["android_id"] = unique
        self.screen_on: bool = True
        self.locked: bool = False
        self.reverse_forwards: list[str] = []
        self.link_drops = 0
        """How many times a disconnect fault dropped the link (each fires once; reconnects are healthy)."""
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

    def external_files_dir(self, package: str) -> str:
        """`/sdcard/Android/data/<pkg>/files` — where apps write their own files."""
        return f"{_STORAGE}/Android/data/{package}/files"

    def canonical(self, device_path: str, cwd: str = "/") -> str:
        """Normalised absolute device path with storage aliases folded into `/sdcard`."""
        path = posixpath.normpath(posixpath.join(cwd, device_path or "."))
        if path.startswith("//"):
            path = "/" + path.lstrip("/")
        for alias in _STORAGE_ALIASES:
            if path == alias or path.startswith(alias + "/"):
                return _STORAGE + path[len(alias):]
        return path

    def host_path(self, device_path: str, cwd: str = "/") -> Path:
        """Host path backing `device_path`; raises PathEscapeError when it would leave the root."""
        rel = self.canonical(device_path, cwd).lstrip("/")
        host = self.root / rel if rel else self.root
        resolved = host.resolve()
        if resolved != self.root and self.root not in resolved.parents:
            raise PathEscapeError(device_path)
        return host

    def close(self) -> None:
        """Remove the temp file system if this phone created it."""
        if self._owns_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def _make_skeleton(self) -> None:
        for rel in _SKELETON:
            (self.root / rel).mkdir(parents=True, exist_ok=True)
        storage = self.root / _STORAGE.lstrip("/")
        for rel in _STORAGE_DIRS:
            (storage / rel).mkdir(parents=True, exist_ok=True)
        for pkg in self.profile.packages:
            (self.root / "data" / "data" / pkg.name).mkdir(exist_ok=True)
            if pkg.third_party:
                (storage / "Android" / "data" / pkg.name / "files").mkdir(parents=True, exist_ok=True)


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
            "screen_off_timeout": "60000",
            "time_12_24": "24",
            "font_scale": "1.0",
            "accelerometer_rotation": "0",
        },
        "secure": {
            "android_id": f"{zlib.crc32(profile.device.encode()):08x}{zlib.crc32(profile.name.encode()):08x}",
            "default_input_method": "com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME",
            "location_mode": "3",
            "enabled_accessibility_services": "",
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
