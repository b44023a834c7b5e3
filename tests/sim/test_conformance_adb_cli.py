"""The adb CLI drives the phone as it drives a real one: stdin both ways (shell v2 and exec-in), exec-out,
logcat, forward, jdwp-free refusals, push/pull of a large tree, a user build's answers."""

from __future__ import annotations

import hashlib
import subprocess
import time
from pathlib import Path

import pytest
from PIL import Image

from farm.sim.launcher import SimPhone, adb_binary, free_port
from tests.sim.clients import adb, wait_until


def test_exec_in_and_exec_out(virtual_phone: SimPhone, tmp_path: Path) -> None:
    blob = hashlib.sha512(b"x").digest() * 5000
    assert adb(virtual_phone, "exec-in", "cat > /data/local/tmp/blob", stdin=blob).returncode == 0
    # exec-in returns once stdin is sent, as with a real phone: the file is there once the command has run.
    stored = virtual_phone.root / "data/local/tmp/blob"
    for _ in range(200):
        if stored.exists() and stored.stat().st_size == len(blob):
            break
        time.sleep(0.05)
    assert stored.read_bytes() == blob
    out = adb(virtual_phone, "exec-out", "cat /data/local/tmp/blob")
    assert out.stdout == blob
    png = adb(virtual_phone, "exec-out", "screencap -p").stdout
    (tmp_path / "s.png").write_bytes(png)
    with Image.open(tmp_path / "s.png") as img:
        assert img.size == (virtual_phone.profile.screen.width, virtual_phone.profile.screen.height)


def test_shell_exit_status_and_stderr(virtual_phone: SimPhone) -> None:
    done = adb(virtual_phone, "shell", "echo out; echo err >&2; exit 42")
    assert (done.returncode, done.stdout, done.stderr) == (42, b"out\n", b"err\n")
    piped = adb(virtual_phone, "shell", "md5sum", stdin=b"abc")
    assert piped.stdout == b"900150983cd24fb0d6963f7d28e17f72  -\n"


def test_logcat_dump_ends(virtual_phone: SimPhone) -> None:
    adb(virtual_phone, "shell", "log -t Cli before")
    assert b"I Cli     : before\n" in adb(virtual_phone, "logcat", "-d").stdout
    assert adb(virtual_phone, "logcat", "-c").returncode == 0
    assert adb(virtual_phone, "logcat", "-d").stdout == b""
    assert adb(virtual_phone, "logcat", "-d", "-b", "crash").returncode == 0


def test_logcat_streams_until_the_client_gives_up(virtual_phone: SimPhone) -> None:
    adb(virtual_phone, "shell", "log -t Cli first")
    cmd = [adb_binary(), "-P", str(virtual_phone.adb_port), "-s", virtual_phone.serial, "logcat", "-v", "raw",
           "-s", "Cli"]
    # Without -d logcat never ends by itself: the client's timeout ends it (and kills the adb client).
    with pytest.raises(subprocess.TimeoutExpired) as stopped:
        subprocess.run(cmd, capture_output=True, timeout=5, check=False)
    assert stopped.value.stdout == b"--------- beginning of main\nfirst\n"
    wait_until(lambda: not virtual_phone.state.logs.waiters, "the phone to end the abandoned logcat")


def test_forward_list_and_remove(virtual_phone: SimPhone) -> None:
    local = f"tcp:{free_port()}"
    assert adb(virtual_phone, "forward", local, "tcp:9008").returncode == 0
    assert f"{virtual_phone.serial} {local} tcp:9008" in adb(virtual_phone, "forward", "--list").stdout.decode()
    assert adb(virtual_phone, "forward", "--remove", local).returncode == 0
    assert local not in adb(virtual_phone, "forward", "--list").stdout.decode()


def test_push_and_pull_a_large_tree(virtual_phone: SimPhone, tmp_path: Path) -> None:
    src = tmp_path / "tree"
    for i in range(600):
        path = src / f"d{i % 7}" / f"f{i:04d}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(f"file {i}\n".encode() * (i % 13))
    assert adb(virtual_phone, "push", str(src), "/sdcard/tree").returncode == 0
    assert adb(virtual_phone, "pull", "/sdcard/tree", str(tmp_path / "back")).returncode == 0
    for path in src.rglob("*.txt"):
        assert (tmp_path / "back" / path.relative_to(src)).read_bytes() == path.read_bytes()
    listing = adb(virtual_phone, "shell", "ls /sdcard/tree/d0 | wc -l").stdout
    assert int(listing) == len(list((src / "d0").iterdir()))


def test_user_build_answers(virtual_phone: SimPhone) -> None:
    assert adb(virtual_phone, "root").stdout == b"adbd cannot run as root in production builds\n"
    assert adb(virtual_phone, "shell", "getprop ro.debuggable").stdout == b"0\n"
    assert b"feature:android.hardware.wifi\n" in adb(virtual_phone, "shell", "pm list features").stdout
