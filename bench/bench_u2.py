"""uiautomator2 round trips against the virtual phone, measured side by side in one run.

    .venv/bin/python bench/bench_u2.py [--n 30]

Prints medians of: dumpWindowHierarchy through uiautomator2 → real adb server → virtual adbd,
the same hierarchy built in-process, a bare /ping round trip, takeScreenshot, `adb shell
uiautomator dump`, and a 100-task simulated `am instrument` run; then the ratios between them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def median_ms(fn: Callable[[], object], n: int) -> float:
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=30)
    args = parser.parse_args()

    from farm.sim.launcher import free_port, kill_adb_server, start_phones

    port = free_port()
    os.environ["ANDROID_ADB_SERVER_PORT"] = str(port)
    farm = start_phones(1, adb_port=port)
    try:
        import adbutils
        import uiautomator2 as u2
        from uiautomator2.core import _http_request

        phone = farm.phones[0]
        dev = adbutils.AdbClient(port=port).device(phone.serial)
        d = u2.connect(dev)
        d.app_start("dev.agentfarm.shop")
        d.info  # noqa: B018 - warm up
        ui = phone.state.ui
        results = {
            "raw tcp:9008 dump, one write": median_ms(lambda: _raw_dump(dev), args.n),
            "u2 dumpWindowHierarchy": median_ms(d.dump_hierarchy, args.n),
            "in-process hierarchy_xml": median_ms(lambda: ui.hierarchy_xml("jar"), args.n),
            "u2 /ping round trip": median_ms(lambda: _http_request(dev, 9008, "GET", "/ping"), args.n),
            "u2 deviceInfo (small reply)": median_ms(lambda: d.info, args.n),
            "u2 takeScreenshot": median_ms(d.screenshot, max(5, args.n // 3)),
            "adb shell uiautomator dump": median_ms(
                lambda: dev.shell("uiautomator dump /sdcard/window_dump.xml"), max(5, args.n // 3)),
        }
        run_s = _instrument_100(dev, phone.profile.agent.package)
    finally:
        farm.stop()
        kill_adb_server(port)

    width = max(len(k) for k in results)
    for name, ms in results.items():
        print(f"{name:<{width}}  median {ms:8.2f} ms")
    base = results["in-process hierarchy_xml"]
    ping = results["u2 /ping round trip"]
    dump = results["u2 dumpWindowHierarchy"]
    print(f"ratio u2 dump / in-process build      {dump / base:8.1f}x")
    print(f"ratio u2 dump / bare ping round trip  {dump / ping:8.1f}x")
    print(f"ratio u2 dump / one-write raw dump    {dump / results['raw tcp:9008 dump, one write']:8.1f}x")
    print(f"ratio u2 dump / small-reply RPC       {dump / results['u2 deviceInfo (small reply)']:8.1f}x")
    print(f"100-task simulated am instrument run  {run_s:8.2f} s wall (profile time_scale)")


def _raw_dump(dev: object) -> bytes:
    """The same RPC written in one send: shows what uiautomator2's split header/body write costs (Nagle)."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "dumpWindowHierarchy", "params": [False, 50]}).encode()
    head = b"POST /jsonrpc/0 HTTP/1.1\r\nHost: localhost\r\nContent-Length: %d\r\n\r\n" % len(body)
    import adbutils

    sock = dev.create_connection(adbutils.Network.TCP, 9008)  # type: ignore[attr-defined]
    try:
        sock.sendall(head + body)
        data = b""
        while True:
            chunk = sock.recv(65536)
            data += chunk
            end = data.find(b"\r\n\r\n")
            if end >= 0:
                length = int(data[:end].lower().split(b"content-length:")[1].split(b"\r\n")[0])
                if len(data) >= end + 4 + length:
                    return data
            if not chunk:
                return data
    finally:
        sock.close()


def _instrument_100(dev: object, agent_pkg: str) -> float:
    tasks = [{"id": f"bench-{i:03d}", "category": "read/system", "partition": "tune", "expect": "succeeded",
              "checks": []} for i in range(100)]
    with tempfile.TemporaryDirectory() as tmp:
        bundle = Path(tmp) / "bundle.json"
        bundle.write_text(json.dumps({"bundleVersion": 1, "run": "BENCH", "tasks": tasks}))
        dev.sync.push(str(bundle), "/data/local/tmp/bench-tasks.json")  # type: ignore[attr-defined]
    cmd = ("am instrument -w -r -e class dev.agentfarm.simagent.eval.EvalRunTest -e evalRun BENCH "
           "-e evalTasks /data/local/tmp/bench-tasks.json "
           "dev.agentfarm.simagent.test/androidx.test.runner.AndroidJUnitRunner")
    t = time.perf_counter()
    out = dev.shell(cmd, timeout=600)  # type: ignore[attr-defined]
    took = time.perf_counter() - t
    assert "INSTRUMENTATION_CODE: -1" in out, out[-500:]
    return took


if __name__ == "__main__":
    main()
