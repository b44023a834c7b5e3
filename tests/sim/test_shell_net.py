"""`ip addr` / `ifconfig` (what clients read the Wi-Fi address from) and the brightness settings clients toggle."""

from __future__ import annotations

import adbutils

from farm.sim.launcher import SimPhone
from tests.helpers.phones import FarmFactory


def device(phone: SimPhone) -> adbutils.AdbDevice:
    return adbutils.AdbClient(port=phone.adb_port).device(phone.serial)


def test_wlan_ip_follows_wifi(virtual_farm: FarmFactory) -> None:
    first = device(virtual_farm(1)[0])
    ip = first.wlan_ip()
    assert ip.startswith("192.168.1.") and ip in first.shell("ifconfig wlan0")
    assert f"inet {ip}/24" in first.shell("ip addr show dev wlan0")
    first.shell("settings put global wifi_on 0")
    assert "inet" not in first.shell("ip addr show dev wlan0")
    assert "state DOWN" in first.shell("ip addr show dev wlan0")
    assert "127.0.0.1" in first.shell("ifconfig lo")


def test_unknown_interfaces_and_objects_fail_as_on_a_phone(virtual_phone: SimPhone) -> None:
    d = device(virtual_phone)
    missing = d.shell2("ip addr show dev eth9")
    assert (missing.returncode, missing.output) == (1, 'Device "eth9" does not exist.\n')
    assert d.shell2("ifconfig eth9").output == "ifconfig: eth9: No such device\n"
    assert d.shell2("ip route").returncode == 1


def test_brightness_value_and_mode(virtual_phone: SimPhone) -> None:
    d = device(virtual_phone)
    assert d.brightness_mode == adbutils.BrightnessMode.AUTO
    d.brightness_mode = adbutils.BrightnessMode.MANUAL
    d.brightness_value = 100
    assert (d.brightness_mode, d.brightness_value) == (adbutils.BrightnessMode.MANUAL, 100)
