"""Which phones a command acts on: --device, --all, or the only phone there is."""

from __future__ import annotations

import pytest

from farm.android.devices import FoundPhone, select, servers
from farm.android.health import battery, free_mb
from farm.config import AdbServer, FarmConfig
from farm.errors import FarmError

LOCAL = AdbServer()


def _phones(*serials: str) -> list[FoundPhone]:
    return [FoundPhone(s, LOCAL, "device", None) for s in serials]  # type: ignore[arg-type]


def test_the_only_phone_is_used_without_a_flag() -> None:
    assert [p.serial for p in select(_phones("A"), [], False)] == ["A"]


def test_several_phones_need_a_flag() -> None:
    with pytest.raises(FarmError, match="--device SERIAL"):
        select(_phones("A", "B"), [], False)
    assert [p.serial for p in select(_phones("A", "B"), [], True)] == ["A", "B"]
    assert [p.serial for p in select(_phones("A", "B"), ["B"], False)] == ["B"]


def test_no_phone_and_unknown_serial_are_errors() -> None:
    with pytest.raises(FarmError, match="farm sim up"):
        select([], [], False)
    with pytest.raises(FarmError, match="--device C: no such phone"):
        select(_phones("A"), ["C"], False)


def test_local_server_honours_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANDROID_ADB_SERVER_PORT", "5999")
    cfg = FarmConfig(adb_servers=[AdbServer(host="10.0.0.2", port=5037), AdbServer(port=5999)])
    assert [s.address() for s in servers(cfg)] == ["127.0.0.1:5999", "10.0.0.2:5037"]


def test_battery_and_storage_parsing() -> None:
    text = "  AC powered: false\n  USB powered: true\n  status: 2\n  level: 15\n"
    assert battery(text) == (15, True)
    assert battery("  AC powered: false\n  status: 3\n  level: 80\n") == (80, False)
    df = "Filesystem 1K-blocks Used Available Use% Mounted on\n/dev/fuse 114688000 65536000 49152000 58% /storage\n"
    assert free_mb(df) == 48000


def test_df_line_wrapped_after_a_long_device_name() -> None:
    df = (
        "Filesystem 1K-blocks Used Available Use% Mounted on\n"
        "/dev/block/dm-very-long-name\n 1000000 400000 600000 40% /data\n"
    )
    assert free_mb(df) == 585
    assert free_mb("df: /sdcard: No such file or directory\n") is None
