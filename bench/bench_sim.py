"""Virtual phone benchmark: pull throughput (adbutils vs adb CLI), memory per idle phone, u2 latency.

Runs against a private adb server on a free port; prints figures and ratios measured side by side.
"""

from __future__ import annotations

import os
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import adbutils

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from farm.sim.launcher import adb_binary, free_port, kill_adb_server, start_adb_server, start_phones  # noqa: E402

FILES = 500
TOTAL_BYTES = 50 * 1024 * 1024
IDLE_PHONES = 50
ROUNDS = 5


def rss_kib() -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def make_tree(root: Path) -> int:
    size = TOTAL_BYTES // FILES
    total = 0
    for index in range(FILES):
        sub = root / f"d{index % 10}"
        sub.mkdir(parents=True, exist_ok=True)
        data = os.urandom(size)
        (sub / f"f{index:03d}.bin").write_bytes(data)
        total += len(data)
    return total


def pull_tree_one_session(device: adbutils.AdbDevice, src: str, dst: Path) -> int:
    """Pull a tree over ONE sync session with pipelined RECVs, as `adb pull` does, on adbutils' connection."""
    total = 0
    with device.open_transport() as conn:
        conn.send_command("sync:")
        conn.check_okay()
        sock = conn.conn
        reader = sock.makefile("rb", buffering=1 << 20)

        def request(ident: bytes, path: str) -> None:
            raw = path.encode()
            sock.sendall(ident + struct.pack("<I", len(raw)) + raw)

        def walk(remote: str, local: Path) -> None:
            nonlocal total
            local.mkdir(parents=True, exist_ok=True)
            request(b"LIST", remote)
            entries = []
            while True:
                ident, mode, _size, _mtime, namelen = struct.unpack("<4sIIII", reader.read(20))
                if ident == b"DONE":
                    break
                name = reader.read(namelen).decode()
                if name not in (".", ".."):
                    entries.append((name, mode))
            files = [name for name, mode in entries if not stat.S_ISDIR(mode)]
            for name in files:  # pipelined: every RECV of the directory goes out before the replies are read
                request(b"RECV", f"{remote}/{name}")
            for name in files:
                with open(local / name, "wb") as out:
                    while True:
                        ident, length = struct.unpack("<4sI", reader.read(8))
                        if ident == b"DONE":
                            break
                        if ident != b"DATA":
                            raise RuntimeError(reader.read(length).decode(errors="replace"))
                        out.write(reader.read(length))
                        total += length
            for name, mode in entries:
                if stat.S_ISDIR(mode):
                    walk(f"{remote}/{name}", local / name)

        walk(src, dst)
        request(b"QUIT", "")
    return total


def best_of(rounds: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> int:
    port = free_port()
    os.environ["ANDROID_ADB_SERVER_PORT"] = str(port)
    start_adb_server(port)
    work = Path(tempfile.mkdtemp(prefix="bench-sim-"))
    try:
        # Memory first, before big transfers leave freed buffers behind.
        farm = start_phones(1, adb_port=port, start_server=False)
        time.sleep(0.3)
        before = rss_kib()
        farm.add(IDLE_PHONES)
        time.sleep(0.5)
        after = rss_kib()
        print(f"memory: {(after - before) / IDLE_PHONES:.0f} KiB RSS per idle phone ({IDLE_PHONES} phones, attached)")
        phone = farm.phones[0]
        total = make_tree(phone.root / "sdcard" / "bench")
        device = adbutils.AdbClient(port=port).device(phone.serial)

        def cli_pull() -> None:
            dst = work / "cli"
            shutil.rmtree(dst, ignore_errors=True)
            dst.mkdir()
            subprocess.run([adb_binary(), "-P", str(port), "-s", phone.serial, "pull", "/sdcard/bench", str(dst)],
                           check=True, capture_output=True)

        def adbutils_pull() -> None:
            dst = work / "adbutils"
            shutil.rmtree(dst, ignore_errors=True)
            device.sync.pull_dir("/sdcard/bench", dst)

        def session_pull() -> None:
            dst = work / "session"
            shutil.rmtree(dst, ignore_errors=True)
            assert pull_tree_one_session(device, "/sdcard/bench", dst) == total

        def farm_pull() -> None:
            from farm.android.pull import pull_tree
            from farm.config import PullLimits

            dst = work / "farm"
            shutil.rmtree(dst, ignore_errors=True)
            assert pull_tree(device, "/sdcard/bench", dst, PullLimits()).bytes == total

        # Interleaved rounds so all see the same machine load; best of each.
        cli_s = one_s = lane_s = float("inf")
        for _ in range(ROUNDS * 2):
            cli_s = min(cli_s, best_of(1, cli_pull))
            one_s = min(one_s, best_of(1, session_pull))
            try:
                lane_s = min(lane_s, best_of(1, farm_pull))
            except (ImportError, AttributeError, TypeError):
                pass
        py_s = best_of(2, adbutils_pull)
        mib = total / 1024 / 1024
        print(f"pull {FILES} files / {mib:.0f} MiB (best of {ROUNDS * 2} interleaved rounds; pull_dir best of 2):")
        print(f"  adb pull CLI                  {cli_s:6.2f} s  {mib / cli_s:7.1f} MiB/s")
        print(f"  adbutils sync.pull_dir        {py_s:6.2f} s  {mib / py_s:7.1f} MiB/s  ({cli_s / py_s:.2f}x CLI)")
        print(f"  adbutils, one sync session    {one_s:6.2f} s  {mib / one_s:7.1f} MiB/s  ({cli_s / one_s:.2f}x CLI)")
        if lane_s != float("inf"):
            print(f"  farm.android.pull.pull_tree   {lane_s:6.2f} s  {mib / lane_s:7.1f} MiB/s  "
                  f"({cli_s / lane_s:.2f}x CLI)")
        print("  (goal >= 0.9x. pull_dir opens two adb-server connections per file and adbutils'")
        print("   AdbConnection.close() sleeps 10 ms each: a >= 20 ms/file floor on the client side.")
        print("   One sync session with pipelined RECVs over adbutils' own connection avoids it.)")

        big = phone.root / "sdcard" / "big.bin"
        big.write_bytes(os.urandom(TOTAL_BYTES))
        one_cli = best_of(ROUNDS, lambda: subprocess.run(
            [adb_binary(), "-P", str(port), "-s", phone.serial, "pull", "/sdcard/big.bin", str(work / "big-cli")],
            check=True, capture_output=True))
        one_py = best_of(ROUNDS, lambda: device.sync.pull("/sdcard/big.bin", work / "big-py"))
        print(f"pull one {mib:.0f} MiB file: CLI {mib / one_cli:.1f} MiB/s, adbutils {mib / one_py:.1f} MiB/s, "
              f"ratio {one_cli / one_py:.2f}x")


        try:
            import uiautomator2 as u2

            d = u2.connect(device)
            d.dump_hierarchy()
            n = 20
            started = time.perf_counter()
            for _ in range(n):
                d.dump_hierarchy()
            rpc_ms = (time.perf_counter() - started) / n * 1000
            started = time.perf_counter()
            for _ in range(n):
                device.shell("uiautomator dump /sdcard/window_dump.xml")
            shell_ms = (time.perf_counter() - started) / n * 1000
            print(f"uiautomator2 dump_hierarchy: {rpc_ms:.1f} ms/call; "
                  f"`uiautomator dump` shell: {shell_ms:.1f} ms/call")
        except Exception as exc:  # noqa: BLE001 - the figure is optional, the bench is not
            print(f"uiautomator2 latency: unavailable ({exc})")
        farm.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
        kill_adb_server(port)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
