"""The health gate: boot completed, battery, storage, screen woken and keyguard dismissed."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from farm.android.devices import FoundPhone, shell
from farm.config import HealthThresholds, InstrumentProfile
from farm.phone_name import caption, phone_names

if TYPE_CHECKING:
    from adbutils import AdbDevice


@dataclass
class PhoneHealth:
    """What the gate found on one phone."""

    serial: str
    server: str
    state: str
    ok: bool = False
    reason: str | None = None
    """Why the phone is left out (first failing condition)."""
    model: str | None = None
    android: str | None = None
    battery: int | None = None
    charging: bool | None = None
    free_mb: int | None = None
    agent_version: str | None = None
    name: str | None = None
    """Its stable name (`name_phones`), shown with the serial and adb server wherever a person reads phones."""


def battery(text: str) -> tuple[int | None, bool]:
    """(level, charging) from `dumpsys battery`."""
    level = re.search(r"^\s*level:\s*(\d+)", text, re.MULTILINE)
    powered = re.findall(r"^\s*(?:AC|USB|Wireless|Dock) powered:\s*(true|false)", text, re.MULTILINE)
    status = re.search(r"^\s*status:\s*(\d+)", text, re.MULTILINE)
    charging = "true" in powered or (status is not None and status.group(1) in ("2", "5"))
    return (int(level.group(1)) if level else None), charging


def free_mb(df_output: str) -> int | None:
    """Available MB from `df -k <path>` (1K blocks; the data line may wrap after a long device name)."""
    tokens = " ".join(df_output.strip().splitlines()[1:]).split()
    for i in range(len(tokens) - 2):
        if all(t.isdigit() for t in tokens[i : i + 3]):
            return int(tokens[i + 2]) // 1024
    return None


def version_name(device: AdbDevice, package: str) -> str | None:
    """versionName of an installed package, or None when it is not installed."""
    out = shell(device, ["dumpsys", "package", package])
    m = re.search(r"versionName=(\S+)", out)
    return m.group(1) if m else None


def check(phone: FoundPhone, limits: HealthThresholds, profile: InstrumentProfile | None) -> PhoneHealth:
    """Run the gate on one phone, waking it and dismissing the keyguard on the way."""
    from adbutils import AdbError

    h = PhoneHealth(phone.serial, phone.server.address(), phone.state)
    if phone.state != "device":
        h.reason = f"adb state is {phone.state}" + (
            " (accept the USB debugging prompt on the phone)" if phone.state == "unauthorized" else ""
        )
        return h
    device = phone.device()
    try:
        h.model = shell(device, ["getprop", "ro.product.model"]).strip() or None
        h.android = shell(device, ["getprop", "ro.build.version.release"]).strip() or None
        if shell(device, ["getprop", "sys.boot_completed"]).strip() != "1":
            h.reason = "boot not completed"
            return h
        h.battery, h.charging = battery(shell(device, ["dumpsys", "battery"]))
        if h.battery is not None and h.battery < limits.min_battery_pct and not h.charging:
            h.reason = f"battery {h.battery}% < {limits.min_battery_pct}% and not charging"
            return h
        h.free_mb = free_mb(shell(device, ["df", "-k", "/sdcard"]))
        if h.free_mb is not None and h.free_mb < limits.min_free_storage_mb:
            h.reason = f"free storage {h.free_mb} MB < {limits.min_free_storage_mb} MB"
            return h
        if limits.require_unlocked:
            shell(device, ["input", "keyevent", "KEYCODE_WAKEUP"])
            shell(device, ["wm", "dismiss-keyguard"])
            power = shell(device, ["dumpsys", "power"])
            if re.search(r"mWakefulness=(Asleep|Dozing)", power):
                h.reason = "screen did not wake"
                return h
            window = shell(device, ["dumpsys", "window"])
            if re.search(r"(mShowingLockscreen|isStatusBarKeyguard|mKeyguardShowing)=true", window):
                h.reason = "keyguard still showing (a secure lock screen must be unlocked by hand)"
                return h
        if profile is not None:
            h.agent_version = version_name(device, profile.package)
            if h.agent_version is None:
                h.reason = f"agent app {profile.package} not installed"
                return h
    except (AdbError, OSError) as exc:
        h.reason = f"adb error during health check: {' '.join(str(exc).split())[:160]}"
        return h
    h.ok = True
    return h


def left_out(h: PhoneHealth) -> str:
    """`left out <name> (<serial> on <adb server>): <reason>`: the one line `farm run`, `farm sweep` and their
    refusal when no phone is healthy give a phone the gate refused (its stable name, then where it is)."""
    return f"left out {caption(h.name or h.serial, h.serial, h.server)}: {h.reason}"


def name_phones(healths: list[PhoneHealth], labels: Mapping[str, str]) -> None:
    """Give each phone its stable name (`farm.phone_name`: the farm.yaml label, else `<model> · <short serial>`),
    distinct over `healths`."""
    names = phone_names(((h.serial, h.model) for h in healths), labels)
    for h in healths:
        h.name = names[h.serial]
