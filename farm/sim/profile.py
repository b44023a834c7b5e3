"""Per-phone profile (YAML): identity, locale, battery, installed apps, intents, faults."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from farm.errors import FarmError
from farm.sim.features import GLES_VERSION, PIXEL_FEATURES
from farm.yaml_strict import strict_load

DEFAULT_PROFILE_PATH = Path(__file__).parent / "profiles" / "default.yaml"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class IntentFilter(_Model):
    """One intent an app's activity handles (what `cmd package query-activities` matches)."""

    action: str
    """Intent action, e.g. `android.intent.action.MAIN` or `android.intent.action.SET_ALARM`."""
    categories: list[str] = Field(default_factory=list)
    """Categories the filter declares, e.g. `android.intent.category.APP_CALCULATOR`."""
    activity: str
    """Fully qualified or `.`-relative activity class that handles it."""


class PackageInfo(_Model):
    """One installed package."""

    name: str
    """Package name, e.g. `com.android.calculator2`."""
    version_name: str = "1.0"
    """`versionName=` of `dumpsys package`."""
    version_code: int = 1
    """`versionCode=` of `dumpsys package`."""
    third_party: bool = False
    """Listed by `pm list packages -3` (installed under /data/app rather than /system)."""
    label: str = ""
    """Human label shown by the launcher."""
    launcher_activity: str | None = None
    """Activity started by `monkey -p PKG -c LAUNCHER 1`; None = no launcher icon."""
    intents: list[IntentFilter] = Field(default_factory=list)
    """Intent filters beyond the launcher's MAIN/LAUNCHER one."""

    def full_activity(self, activity: str) -> str:
        """`.Foo` → `pkg.Foo`; a fully qualified name is returned unchanged."""
        return self.name + activity if activity.startswith(".") else activity

    def apk_path(self) -> str:
        """Where `pm path` says the APK lives."""
        if self.third_party:
            return f"/data/app/~~{_b64ish(self.name)}==/{self.name}-{_b64ish(self.name[::-1])}==/base.apk"
        return f"/system/app/{self.name.rsplit('.', 1)[-1].capitalize()}/{self.name.rsplit('.', 1)[-1]}.apk"


def _b64ish(text: str) -> str:
    import base64
    import hashlib

    return base64.urlsafe_b64encode(hashlib.sha1(text.encode()).digest())[:22].decode()


class ScreenSpec(_Model):
    """Display geometry (`wm size`, `wm density`)."""

    width: int = 1080
    """Physical width in pixels."""
    height: int = 2400
    """Physical height in pixels."""
    density: int = 420
    """Density in dpi."""


class AgentProfile(_Model):
    """The on-device agent app and its instrumentation (the EvalRunTest contract)."""

    package: str = "dev.agentfarm.simagent"
    """Agent app package; eval output goes to its external files dir."""
    test_package: str = "dev.agentfarm.simagent.test"
    """Instrumentation (test) package."""
    runner: str = "androidx.test.runner.AndroidJUnitRunner"
    """Instrumentation runner class."""
    eval_class: str = "dev.agentfarm.simagent.eval.EvalRunTest"
    """Test class that runs the task set."""
    version_name: str = "0.9.0"
    """Agent app version name."""
    seed: int = 7
    """Seed of the simulated agent's outcomes."""
    pass_rate: float = Field(default=0.7, ge=0.0, le=1.0)
    """Probability that the simulated agent passes a task."""
    time_scale: float = Field(default=1000.0, gt=0)
    """Seconds of simulated agent time per real second."""
    task_seconds: float = Field(default=30.0, ge=0)
    """Simulated seconds one task takes."""


class FaultSpec(_Model):
    """Injected faults; the transport honours the link ones, the apps the instrument ones."""

    disconnect_after_s: float | None = None
    """Drop the adb connection this many seconds after the handshake."""
    disconnect_after_bytes: int | None = None
    """Drop the adb connection after sending this many payload bytes."""
    stall_after_bytes: int | None = None
    """Stop sending stream data (but keep the link up) after this many payload bytes."""
    slow_link_bps: int | None = None
    """Throttle what the phone sends to this many bytes per second."""
    state: Literal["device", "offline", "unauthorized"] = "device"
    """What the adb server sees: a device, an offline one (no CNXN answer) or an unauthorized one."""
    instrument_crash_after_tasks: int | None = None
    """The agent's instrumentation crashes after this many tasks."""
    instrument_stop_after_tasks: int | None = None
    """The agent's instrumentation stops (no output) after this many tasks."""
    hostile_eval_tree: bool = False
    """The agent app writes hostile file names into its eval tree."""


class FsLimits(_Model):
    """Caps on what one file operation of the phone may write to the host's disk."""

    copy_max_bytes: int = Field(default=512 * 1024 * 1024, ge=0)
    """Bytes one `cp` command may copy in total (512 MiB); over it the command fails and its copy is undone."""
    copy_max_seconds: float = Field(default=60.0, gt=0)
    """Wall time one `cp` command may spend copying (60 s); over it the command fails and its copy is undone."""
    push_max_bytes: int = Field(default=512 * 1024 * 1024, ge=0)
    """Bytes one sync SEND (`adb push` of one file) may write (512 MiB); over it the push fails, nothing is kept."""


Feature = Annotated[str, StringConstraints(pattern=r"^[A-Za-z][A-Za-z0-9_.]*(=[1-9][0-9]{0,9})?$", max_length=200)]
"""A system feature as `pm list features` prints it after `feature:`: a name, `=VERSION` when above 0."""


class PhoneProfile(_Model):
    """Everything that makes one virtual phone what it is."""

    brand: str = "google"
    """`ro.product.brand`."""
    manufacturer: str = "Google"
    """`ro.product.manufacturer`."""
    model: str = "Pixel 7"
    """`ro.product.model`."""
    device: str = "panther"
    """`ro.product.device`."""
    name: str = "panther"
    """`ro.product.name`."""
    android_release: str = "14"
    """`ro.build.version.release`."""
    sdk: int = 34
    """`ro.build.version.sdk`."""
    locale: str = "en-US"
    """`persist.sys.locale` (BCP 47)."""
    timezone: str = "UTC"
    """`persist.sys.timezone` (IANA name); `date` honours it."""
    battery_level: int = Field(default=80, ge=0, le=100)
    """Battery percentage (`dumpsys battery` level)."""
    charging: bool = False
    """Whether the phone is on USB power."""
    screen: ScreenSpec = Field(default_factory=ScreenSpec)
    """Display geometry."""
    storage_free_mb: int = 48000
    """Free space `df` reports for /data and /sdcard."""
    storage_total_mb: int = 112000
    """Total size `df` reports for /data and /sdcard."""
    packages: list[PackageInfo] = Field(default_factory=list)
    """Installed packages."""
    signed_in: list[str] = Field(default_factory=list)
    """Packages or sites with a signed-in account."""
    agent: AgentProfile = Field(default_factory=AgentProfile)
    """The on-device agent app."""
    chrome_devtools: str | None = None
    """`host:port` that `localabstract:chrome_devtools_remote` is bridged to; None refuses it."""
    faults: FaultSpec = Field(default_factory=FaultSpec)
    """Injected faults."""
    limits: FsLimits = Field(default_factory=FsLimits)
    """Caps on copies and pushes (`limits: {copy_max_bytes, copy_max_seconds, push_max_bytes}` in YAML)."""
    features: list[Feature] = Field(default_factory=lambda: list(PIXEL_FEATURES))
    """System features (`pm list features`, `cmd package has-feature`); the default is a Pixel 7's on Android 14."""
    gles_version: Annotated[str, StringConstraints(pattern=r"^0x[0-9a-f]{1,8}$")] = GLES_VERSION
    """OpenGL ES version PackageManager reports (`feature:reqGlEsVersion=0x30002` = 3.2)."""
    refused_providers: list[str] = Field(default_factory=list)
    """Content-provider authorities the shell may not open (`sms`, `call_log`, `com.android.contacts`,
    `com.android.calendar`, `settings`): `content query` on them prints the phone's `Permission Denial`, as on
    a phone whose shell lacks READ_SMS / READ_CALL_LOG / READ_CONTACTS / READ_CALENDAR."""

    def package(self, name: str) -> PackageInfo | None:
        """The installed package called `name`, if any."""
        return next((p for p in self.packages if p.name == name), None)


def load_profile(path: Path | None = None) -> PhoneProfile:
    """Read a profile YAML (default: the bundled Pixel-like phone); FarmError on a bad file."""
    path = path or DEFAULT_PROFILE_PATH
    try:
        data = strict_load(path.read_text(encoding="utf-8"), path)
    except OSError as exc:
        raise FarmError(f"{path}: cannot read profile ({exc.strerror})", hint="pass an existing YAML file") from exc
    except yaml.YAMLError as exc:
        raise FarmError(f"{path}: not valid YAML ({exc})", hint="fix the YAML syntax") from exc
    try:
        return PhoneProfile.model_validate(data or {})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise FarmError(f"{path}: {where}: {first['msg']}", hint="see farm/sim/profiles/default.yaml") from exc


def default_profile() -> PhoneProfile:
    """A fresh copy of the bundled default profile."""
    return load_profile(DEFAULT_PROFILE_PATH)
