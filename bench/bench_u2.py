"""uiautomator2 round trips against the virtual phone, measured side by side in one run.

    .venv/bin/python bench/bench_u2.py [--n 30]

Prints medians of: dumpWindowHierarchy through uiautomator2 → real adb server → virtual adbd,
the same hierarchy built in-process, a bare /ping round trip, takeScreenshot, `adb shell
uiautomator dump`, and a 100-task simulated `am instrument` run; then the ratios between them.

Then the goal: the harness's own dump path (`host_agent.phone.Phone`: a kept-alive stream, Nagle
off) against the best raw path the phone offers — one hand-written request per dump on a fresh
stream or on a kept-alive one, and `adb shell uiautomator dump` — each over connections without
adbutils' idle waits (`farm.android.adb_link`), in interleaved rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


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
        paths = dump_paths(dev, args.n * 3)
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
    print_dump_goal(paths)


GOAL_RATIO = 1.2
"""The harness's dump path at most this many times the best raw path."""


def dump_paths(dev: object, rounds: int) -> dict[str, float]:
    """Median ms of each way to get the hierarchy, in interleaved rounds (a neighbour's load hits all alike)."""
    from farm.android.adb_link import fast_device
    from host_agent.phone import Phone

    fast = fast_device(dev)  # type: ignore[arg-type]
    phone = Phone.connect(dev)  # type: ignore[arg-type]
    kept = RawStream(fast)
    try:
        ways: dict[str, Callable[[], object]] = {
            "harness dump (Phone, kept-alive stream)": phone.dump,
            "raw: one write, fresh stream": lambda: _xml(_raw_dump(fast)),
            "raw: one write, kept-alive stream": kept.dump,
            "raw: adb shell uiautomator dump /dev/tty": lambda: fast.shell(["uiautomator", "dump", "/dev/tty"]),
        }
        for fn in ways.values():
            fn()
        before = median_ms(_u2_plain(dev).dump_hierarchy, 10)  # ~50 ms a call: kept out of the rounds
        times: dict[str, list[float]] = {name: [] for name in ways}
        for _ in range(rounds):
            for name, fn in ways.items():
                t = time.perf_counter()
                fn()
                times[name].append((time.perf_counter() - t) * 1000)
    finally:
        kept.close()
        phone.close()
    return {**{name: statistics.median(values) for name, values in times.items()}, PLAIN: before}


PLAIN = "before: uiautomator2 dump_hierarchy, plain adbutils"


_U2: dict[int, object] = {}


def _u2_plain(dev: object) -> Any:
    """uiautomator2 on the device as adbutils gives it (what the harness used before its own link)."""
    import uiautomator2 as u2

    if id(dev) not in _U2:
        _U2[id(dev)] = u2.connect(dev)
    return _U2[id(dev)]


def print_dump_goal(paths: dict[str, float]) -> None:
    from goals import goal

    width = max(len(k) for k in paths)
    print(f"hierarchy dump paths (median of interleaved rounds; goal: harness ≤ {GOAL_RATIO}× the best raw path):")
    for name, ms in paths.items():
        print(f"  {name:<{width}}  median {ms:7.2f} ms")
    harness = paths["harness dump (Phone, kept-alive stream)"]
    raw = {k: v for k, v in paths.items() if k.startswith("raw:")}
    best_name = min(raw, key=lambda k: raw[k])
    ratio = harness / raw[best_name]
    print(f"  best raw path: {best_name.removeprefix('raw: ')}; harness / best raw {ratio:.2f}×; "
          f"before / best raw {paths[PLAIN] / raw[best_name]:.2f}×")
    goal("u2 dump path vs best raw dump path", f"{harness:.2f} vs {raw[best_name]:.2f} ms = {ratio:.2f}×",
         f"≤ {GOAL_RATIO}×", ratio <= GOAL_RATIO, f"{ratio:.2f}× > {GOAL_RATIO}×")


class RawStream:
    """One stream to tcp:9008 kept open: each dump is one hand-written request and its reply."""

    def __init__(self, dev: object) -> None:
        import adbutils

        self.sock = dev.create_connection(adbutils.Network.TCP, 9008)  # type: ignore[attr-defined]

    def dump(self) -> str:
        self.sock.sendall(_DUMP_REQUEST)
        return _xml(_read_reply(self.sock))

    def close(self) -> None:
        self.sock.close()


_BODY = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "dumpWindowHierarchy", "params": [False, 50]}).encode()
_DUMP_REQUEST = b"POST /jsonrpc/0 HTTP/1.1\r\nHost: localhost\r\nContent-Length: %d\r\n\r\n%s" % (len(_BODY), _BODY)


def _xml(reply: bytes) -> str:
    """The hierarchy text of a JSON-RPC reply: every path ends with the XML as text, as a read needs it."""
    return str(json.loads(reply[reply.index(b"\r\n\r\n") + 4:])["result"])


def _read_reply(sock: Any) -> bytes:
    """One HTTP reply with a Content-Length, read whole."""
    data = bytearray()
    while True:
        chunk = sock.recv(1 << 20)
        if not chunk:
            return bytes(data)
        data += chunk
        end = data.find(b"\r\n\r\n")
        if end >= 0:
            length = int(bytes(data[:end]).lower().split(b"content-length:")[1].split(b"\r\n")[0])
            if len(data) >= end + 4 + length:
                return bytes(data)


def _raw_dump(dev: object) -> bytes:
    """The same RPC written in one send on a fresh stream: shows what uiautomator2's split header/body write
    costs (Nagle)."""
    import adbutils

    sock = dev.create_connection(adbutils.Network.TCP, 9008)  # type: ignore[attr-defined]
    try:
        sock.sendall(_DUMP_REQUEST)
        return _read_reply(sock)
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
