"""`ip addr show [dev IF]` and `ifconfig [IF]`: the phone's interfaces as toybox and iproute2 print them.

Clients read the Wi-Fi address from them (adbutils' and uiautomator2's `wlan_ip`). wlan0 has an address only
while Wi-Fi is on (`settings global wifi_on` 1 or 2, what the Settings app and `svc wifi` write); each phone
has its own, derived from its android_id, on a /24 home network.
"""

from __future__ import annotations

import zlib

from farm.sim.phone import PhoneState
from farm.sim.shell_core import Shell, command

_INTERFACES = ("lo", "wlan0")


def wlan_address(phone: PhoneState) -> str | None:
    """wlan0's IPv4 address, None while Wi-Fi is off."""
    if phone.settings.get("global", {}).get("wifi_on", "1") not in ("1", "2"):
        return None
    host = 20 + zlib.crc32(phone.settings["secure"].get("android_id", "").encode()) % 200
    return f"192.168.1.{host}"


def _mac(phone: PhoneState) -> str:
    raw = zlib.crc32(phone.props.get("ro.serialno", "").encode()).to_bytes(4, "big")
    return "02:00:" + ":".join(f"{b:02x}" for b in raw)


def _ip_block(phone: PhoneState, name: str) -> str:
    if name == "lo":
        return (
            "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN group default qlen 1000\n"
            "    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00\n"
            "    inet 127.0.0.1/8 scope host lo\n       valid_lft forever preferred_lft forever\n"
        )
    address = wlan_address(phone)
    state = "UP" if address else "DOWN"
    flags = "BROADCAST,MULTICAST,UP,LOWER_UP" if address else "BROADCAST,MULTICAST"
    text = (
        f"30: wlan0: <{flags}> mtu 1500 qdisc mq state {state} group default qlen 3000\n"
        f"    link/ether {_mac(phone)} brd ff:ff:ff:ff:ff:ff\n"
    )
    if address:
        text += f"    inet {address}/24 brd 192.168.1.255 scope global wlan0\n"
        text += "       valid_lft forever preferred_lft forever\n"
    return text


def _ifconfig_block(phone: PhoneState, name: str) -> str:
    if name == "lo":
        return (
            "lo        Link encap:Local Loopback  \n          inet addr:127.0.0.1  Mask:255.0.0.0 \n"
            "          UP LOOPBACK RUNNING  MTU:65536  Metric:1\n\n"
        )
    address = wlan_address(phone)
    text = f"wlan0     Link encap:Ethernet  HWaddr {_mac(phone)}\n"
    if address:
        text += f"          inet addr:{address}  Bcast:192.168.1.255  Mask:255.255.255.0 \n"
        text += "          UP BROADCAST RUNNING MULTICAST  MTU:1500  Metric:1\n\n"
    else:
        text += "          BROADCAST MULTICAST  MTU:1500  Metric:1\n\n"
    return text


@command("ip")
def _ip(sh: Shell, args: list[str]) -> int:
    words = [a for a in args if a not in ("-4", "-6")]
    if not words or words[0] not in ("a", "addr", "address"):
        return sh.fail("ip: only `ip addr show [dev IF]` is simulated", 1) if words else sh.fail(
            "Usage: ip [ OPTIONS ] OBJECT { COMMAND | help }", 255)
    rest = [w for w in words[1:] if w not in ("show", "list", "dev")]
    names = rest or list(_INTERFACES)
    for name in names:
        if name not in _INTERFACES:
            return sh.fail(f'Device "{name}" does not exist.', 1)
        sh.out(_ip_block(sh.phone, name))
    return 0


@command("ifconfig")
def _ifconfig(sh: Shell, args: list[str]) -> int:
    names = [a for a in args if not a.startswith("-")] or list(_INTERFACES)
    for name in names:
        if name not in _INTERFACES:
            return sh.fail(f"ifconfig: {name}: No such device", 1)
        sh.out(_ifconfig_block(sh.phone, name))
    return 0
