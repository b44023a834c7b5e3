"""The phone answers as AOSP adbd on a user build: sync and root on a direct transport, `framebuffer:`, stdin of
a shell v2 command, root/unroot/remount, system features, refusals, the banner."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import adbutils
import pytest
from adb_shell.adb_device import AdbDeviceTcp
from adb_shell.auth.sign_pythonrsa import PythonRSASigner
from PIL import Image

from farm.errors import FarmError
from farm.sim.adbd import device_banner
from farm.sim.launcher import SimPhone
from farm.sim.profile import PhoneProfile, default_profile
from farm.sim.shell_stdin import ID_CLOSE_STDIN, ID_EXIT, ID_STDIN, ID_STDOUT, ID_WINDOW, V2_HEADER
from tests.helpers.phones import FarmFactory
from tests.sim.clients import (
    A_CLSE,
    A_OKAY,
    A_OPEN,
    A_WRTE,
    adb,
    connect_direct,
    packet,
    raw_host,
    read_packet,
)


def server_device(phone: SimPhone) -> adbutils.AdbDevice:
    return adbutils.AdbClient(port=phone.adb_port).device(phone.serial)


# -- 1. sync and root on a direct device transport --
def test_direct_sync_stat_list_push_pull(direct: AdbDeviceTcp, virtual_phone: SimPhone, tmp_path: Path) -> None:
    (virtual_phone.root / "sdcard/Download/a.txt").write_bytes(b"alpha\n")
    mode, size, _mtime = direct.stat("/sdcard/Download/a.txt")
    assert (mode & 0o170000, size) == (0o100000, 6)
    names = {bytes(entry.filename).decode() for entry in direct.list("/sdcard/Download")}
    assert names == {".", "..", "a.txt"}
    payload = bytes(range(256)) * 1000
    (tmp_path / "up.bin").write_bytes(payload)
    direct.push(str(tmp_path / "up.bin"), "/sdcard/Download/up.bin")
    assert (virtual_phone.root / "sdcard/Download/up.bin").read_bytes() == payload
    direct.pull("/sdcard/Download/up.bin", str(tmp_path / "down.bin"))
    assert (tmp_path / "down.bin").read_bytes() == payload


def test_direct_host_close_is_answered_with_close(virtual_phone: SimPhone) -> None:
    # adbd's local socket shuts its peer down when the host closes: the host sees CLSE for its stream.
    sock = raw_host(virtual_phone)
    sock.sendall(packet(A_OPEN, 5, 0, b"sync:\0"))
    command, device_id, host_id, _ = read_packet(sock)
    assert (command, host_id) == (A_OKAY, 5)
    sock.sendall(packet(A_CLSE, 5, device_id))
    assert read_packet(sock)[:3] == (A_CLSE, device_id, 5)
    sock.close()


def test_direct_root_gets_the_production_answer(direct: AdbDeviceTcp) -> None:
    # adb-shell's root() drops the text; its generic service call returns it.
    answer = direct._service(b"root", b"", read_timeout_s=5)
    assert answer == "adbd cannot run as root in production builds\n"


def test_several_direct_transports_and_the_server_at_once(virtual_phone: SimPhone, adb_key: PythonRSASigner) -> None:
    first, second = connect_direct(virtual_phone, adb_key), connect_direct(virtual_phone, adb_key)
    try:
        assert first.stat("/sdcard")[0] & 0o040000
        assert second.shell("echo two") == "two\n"
        assert server_device(virtual_phone).shell("echo server") == "server"
        assert first.shell("echo one") == "one\n"
        assert second.list("/sdcard")
    finally:
        first.close()
        second.close()


# -- 2. framebuffer: --
def _framebuffer(phone: SimPhone) -> tuple[tuple[int, ...], bytes]:
    conn = server_device(phone).open_transport()
    try:
        conn.send_command("framebuffer:")
        conn.check_okay()
        header = struct.unpack("<14I", conn.read_exact(56))
        return header, conn.read_exact(header[3])
    finally:
        conn.close()


def test_framebuffer_sends_header_and_current_pixels(virtual_phone: SimPhone) -> None:
    header, pixels = _framebuffer(virtual_phone)
    width, height = virtual_phone.profile.screen.width, virtual_phone.profile.screen.height
    # version 2: version, bpp, colorSpace, size, width, height, red, blue, green, alpha (offset, length)
    assert header == (2, 32, 1, width * height * 4, width, height, 0, 8, 16, 8, 8, 8, 24, 8)
    png = Image.open(io.BytesIO(server_device(virtual_phone).shell("screencap -p", encoding=None)))
    assert pixels == png.convert("RGBA").tobytes()


def test_framebuffer_follows_the_screen(virtual_phone: SimPhone) -> None:
    on = _framebuffer(virtual_phone)[1]
    server_device(virtual_phone).shell("input keyevent POWER")
    off = _framebuffer(virtual_phone)[1]
    assert off != on and set(off[:4096]) == {0, 255}  # black, opaque


# -- 3. stdin of a shell v2 command --
def test_piped_stdin_reaches_cat(virtual_phone: SimPhone) -> None:
    done = adb(virtual_phone, "shell", "cat", stdin=b"abc")
    assert (done.returncode, done.stdout) == (0, b"abc")


def test_stdin_into_a_file_and_a_script(virtual_phone: SimPhone) -> None:
    assert adb(virtual_phone, "shell", "cat > /sdcard/in.txt", stdin=b"line one\n").returncode == 0
    assert (virtual_phone.root / "sdcard/in.txt").read_bytes() == b"line one\n"
    done = adb(virtual_phone, "shell", "sh", stdin=b"echo a\ncat /sdcard/in.txt; exit 4\necho never\n")
    assert (done.returncode, done.stdout) == (4, b"a\nline one\n")
    assert adb(virtual_phone, "shell", "wc -l", stdin=b"1\n2\n3\n").stdout == b"3\n"
    assert adb(virtual_phone, "shell", "grep b", stdin=b"a\nb\nc\n").stdout == b"b\n"


def _v2_session(phone: SimPhone, command: str, packets: bytes) -> tuple[bytes, int | None]:
    conn = server_device(phone).open_transport()
    conn.send_command(f"shell,v2,raw:{command}")
    conn.check_okay()
    conn.conn.sendall(packets)
    stdout, status, buf = b"", None, b""
    while status is None:
        chunk = conn.conn.recv(65536)
        if not chunk:
            break
        buf += chunk
        while len(buf) >= 5 and len(buf) >= 5 + V2_HEADER.unpack_from(buf)[1]:
            ident, length = V2_HEADER.unpack_from(buf)
            body, buf = buf[5 : 5 + length], buf[5 + length :]
            if ident == ID_STDOUT:
                stdout += body
            elif ident == ID_EXIT:
                status = body[0]
    conn.close()
    return stdout, status


def v2(ident: int, body: bytes = b"") -> bytes:
    return V2_HEADER.pack(ident, len(body)) + body


def test_v2_stdin_window_size_and_close_stdin(virtual_phone: SimPhone) -> None:
    packets = v2(ID_STDIN, b"ab") + v2(ID_WINDOW, b"24x80,0x0\0") + v2(ID_STDIN, b"c\n") + v2(ID_CLOSE_STDIN)
    assert _v2_session(virtual_phone, "cat; exit 7", packets) == (b"abc\n", 7)
    # Stdin after close-stdin is not stdin; a command that reads none answers without waiting for it.
    late = v2(ID_STDIN, b"x") + v2(ID_CLOSE_STDIN) + v2(ID_STDIN, b"late")
    assert _v2_session(virtual_phone, "cat", late) == (b"x", 0)
    assert _v2_session(virtual_phone, "echo no-stdin-needed", b"") == (b"no-stdin-needed\n", 0)


def test_stdin_over_the_copy_cap_is_refused(virtual_farm: FarmFactory) -> None:
    profile = default_profile()
    profile.limits.copy_max_bytes = 1000
    phone = virtual_farm(1, profile=profile)[0]
    done = adb(phone, "shell", "cat > /sdcard/big.txt", stdin=b"x" * 5000)
    assert done.returncode == 1 and b"File too large" in done.stderr
    assert not (phone.root / "sdcard/big.txt").exists()


# -- 4. a user build's answers, features, refusals, banner --
def test_root_unroot_remount_answer_as_a_user_build(virtual_phone: SimPhone) -> None:
    assert adb(virtual_phone, "root").stdout == b"adbd cannot run as root in production builds\n"
    assert adb(virtual_phone, "unroot").stdout == b"adbd not running as root\n"
    assert adb(virtual_phone, "remount").stdout == b'Not running as root. Try "adb root" first.\n'
    assert server_device(virtual_phone).shell("getprop ro.build.type") == "user"


def test_pm_list_features_from_the_profile(virtual_farm: FarmFactory) -> None:
    phone = virtual_farm(1)[0]
    d = server_device(phone)
    lines = d.shell("pm list features").splitlines()
    assert lines[0] == "feature:reqGlEsVersion=0x30002"
    assert "feature:android.hardware.touchscreen" in lines and "feature:android.hardware.camera" in lines
    assert "feature:android.hardware.vulkan.level=1" in lines
    assert lines[1:] == sorted(lines[1:], key=lambda line: line.split("=")[0])
    assert d.shell("cmd package list features").splitlines() == lines
    assert d.shell2("cmd package has-feature android.hardware.wifi").output == "true\n"
    missing = d.shell2("cmd package has-feature android.hardware.type.watch")
    assert (missing.returncode, missing.output) == (1, "false\n")
    assert d.shell2("cmd package has-feature android.hardware.vulkan.level 2").output == "false\n"

    tablet = default_profile()
    tablet.features = ["android.hardware.wifi", "android.hardware.type.pc=2"]
    other = server_device(virtual_farm(1, profile=tablet)[0])
    assert other.shell("pm list features").splitlines() == [
        "feature:reqGlEsVersion=0x30002", "feature:android.hardware.type.pc=2", "feature:android.hardware.wifi"]


@pytest.mark.parametrize("bad", ["", "feature:x", "a b", "android.hardware.x=0", "android.x=-1", "x=1;rm"])
def test_profile_refuses_malformed_features(tmp_path: Path, bad: str) -> None:
    from farm.sim.profile import load_profile

    path = tmp_path / "p.yaml"
    path.write_text(f"features: [{bad!r}]\n")
    with pytest.raises(FarmError, match="features"):
        load_profile(path)


def test_services_not_offered_are_refused_at_once(virtual_phone: SimPhone) -> None:
    # adbd refuses with CLSE(0, host id); the server turns it into FAIL "closed" for its client.
    for service in (b"reboot:\0", b"abb:package\0", b"no-such-service\0", b"tcp:4444\0", b"localabstract:x\0"):
        sock = raw_host(virtual_phone)
        sock.sendall(packet(A_OPEN, 9, 0, service))
        assert read_packet(sock)[:3] == (A_CLSE, 0, 9), service
        sock.close()
    done = adb(virtual_phone, "reboot")
    assert done.returncode == 1 and b"closed" in done.stderr


def test_banner_advertises_exactly_what_is_implemented(virtual_phone: SimPhone) -> None:
    banner = device_banner(virtual_phone.state)
    features = set(banner.rsplit("features=", 1)[1].split(","))
    assert features == {"shell_v2", "cmd", "stat_v2", "ls_v2", "fixed_push_mkdir"}
    assert set(server_device(virtual_phone).get_features().split(",")) >= features


def test_a_direct_stream_still_works_after_refusals(virtual_phone: SimPhone) -> None:
    sock = raw_host(virtual_phone)
    sock.sendall(packet(A_OPEN, 1, 0, b"nope:\0") + packet(A_OPEN, 2, 0, b"shell:echo ok\0"))
    got = [read_packet(sock) for _ in range(3)]
    assert got[0][:3] == (A_CLSE, 0, 1)
    assert got[1][0] == A_OKAY and got[2][0] == A_WRTE and got[2][3] == b"ok\n"
    sock.close()


def test_profile_model_default_features_are_a_pixels() -> None:
    features = PhoneProfile().features
    assert "android.hardware.telephony" in features and "com.google.android.feature.PIXEL_EXPERIENCE" in features
    assert all(not f.startswith("feature:") for f in features)
