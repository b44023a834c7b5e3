"""Radios and stream volumes as the shell switches them: `svc wifi|bluetooth`, `cmd connectivity airplane-mode`,
`cmd media_session volume`. They write the same settings the Settings app writes (farm.sim.apps.settings), so a
setup action, the app and `settings get` always agree.

Settings.Global.WIFI_ON is 0 off, 1 on, 2 on although airplane mode is on, 3 off because airplane mode is on;
BLUETOOTH_ON is 0 off, 1 on, 2 on before airplane mode turned it off. Turning airplane mode on switches each radio
that is on off and remembers it; turning it off restores them (WifiSettingsStore, BluetoothManagerService).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from farm.sim import audio
from farm.sim.shell_core import Shell, cmd_service, command

if TYPE_CHECKING:
    from farm.sim.phone import PhoneState

_AIRPLANE_ON = {"wifi_on": {"1": "3"}, "bluetooth_on": {"1": "2"}}
_AIRPLANE_OFF = {"wifi_on": {"3": "1", "2": "1"}, "bluetooth_on": {"2": "1"}}
_SVC_USAGE = {
    "wifi": "Control the Wi-Fi manager\n\nusage: svc wifi [enable|disable]\n         Turn Wi-Fi on or off.\n\n",
    "bluetooth": "Control Bluetooth service\n\nusage: svc bluetooth [enable|disable]\n"
                 "         Turn Bluetooth on or off.\n\n",
}


def _global(phone: PhoneState) -> dict[str, str]:
    return phone.settings.setdefault("global", {})


def airplane_on(phone: PhoneState) -> bool:
    """Whether airplane mode is on."""
    return _global(phone).get("airplane_mode_on") == "1"


def set_airplane(phone: PhoneState, on: bool) -> None:
    """Airplane mode on or off, with what it does to the radios' persisted states (nothing when unchanged)."""
    radios = _global(phone)
    if airplane_on(phone) == on:
        return
    radios["airplane_mode_on"] = "1" if on else "0"
    for radio, change in (_AIRPLANE_ON if on else _AIRPLANE_OFF).items():
        current = radios.get(radio, "0")
        radios[radio] = change.get(current, current)


def set_wifi(phone: PhoneState, on: bool) -> None:
    """Wi-Fi on (2 while airplane mode is on) or off."""
    _global(phone)["wifi_on"] = ("2" if airplane_on(phone) else "1") if on else "0"


def set_bluetooth(phone: PhoneState, on: bool) -> None:
    """Bluetooth on or off."""
    _global(phone)["bluetooth_on"] = "1" if on else "0"


@command("svc")
def _svc(sh: Shell, args: list[str]) -> int:
    # `svc` prints its usage and exits 0 for anything it does not understand, as the real one does.
    if len(args) == 2 and args[0] in ("wifi", "bluetooth") and args[1] in ("enable", "disable"):
        (set_wifi if args[0] == "wifi" else set_bluetooth)(sh.phone, args[1] == "enable")
        return 0
    sh.out(_SVC_USAGE.get(args[0], "") if args else "Available commands:\n    bluetooth\n    wifi\n")
    return 0


@cmd_service("connectivity")
def _connectivity(sh: Shell, args: list[str]) -> int:
    if args[:1] == ["airplane-mode"]:
        if len(args) == 1:
            sh.out("enabled\n" if airplane_on(sh.phone) else "disabled\n")
            return 0
        if len(args) == 2 and args[1] in ("enable", "disable"):
            set_airplane(sh.phone, args[1] == "enable")
            return 0
        sh.err(f"Unsupported argument: {args[1]}\n")
        return 255
    sh.out("Connectivity service commands:\n  help\n    Print this help text.\n  airplane-mode [enable|disable]\n"
           "    Turn airplane mode on or off.\n  airplane-mode\n    Get airplane mode.\n")
    return 255 if args and args[0] not in ("help", "-h") else 0


@cmd_service("media_session")
def _media_session(sh: Shell, args: list[str]) -> int:
    # MediaShellCommand's `volume --stream N --set INDEX` (VolumeCtrl): the index is clamped to the stream's range.
    if args[:1] != ["volume"]:
        sh.err("Error: unknown command '" + (args[0] if args else "") + "'\n")
        return 255
    opts = dict(zip(args[1::2], args[2::2], strict=False))
    try:
        number, value = int(opts["--stream"]), int(opts["--set"])
        name = audio.stream_by_number(number).name
    except (KeyError, ValueError, LookupError):
        sh.err("Error: volume --stream STREAM --set INDEX needs a known stream number and an integer index\n")
        return 255
    audio.set_index(sh.phone, name, value)
    return 0
