"""The phone as the host agent sees it: uiautomator2 reads and input, with timings.

Every failure to talk to the phone is a `PhoneError`: the attempt then ends as an
infrastructure error, never as the agent's failure.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any, TypeVar
from xml.parsers.expat import ExpatError

from farm.android.adb_link import fast_device
from host_agent.observation import Observation, observe_xml
from host_agent.u2_link import RpcLink

if TYPE_CHECKING:
    from adbutils import AdbDevice

T = TypeVar("T")


class PhoneError(Exception):
    """The phone could not be reached or refused a harness operation (infrastructure)."""


CALL_TIMEOUT_S = 90.0
"""Longest a single phone call may take: a stalled link must not hang the run (uiautomator2's own
socket timeout is 600 s)."""


class Phone:
    """One phone driven through uiautomator2 (a real one or the virtual phone)."""

    def __init__(self, device: Any, adb_device: AdbDevice | None = None, *,
                 call_timeout_s: float = CALL_TIMEOUT_S) -> None:
        self.u2 = device
        self.adb = adb_device
        self.call_timeout_s = call_timeout_s
        self._size: tuple[int, int] | None = None
        self._worker = _Worker()
        self.rpc: RpcLink | None = None
        """The step's calls over one kept-alive stream (set by `connect`; without it, uiautomator2's calls)."""
        self._side: _Worker | None = None
        """Runs the foreground query while the main worker dumps the hierarchy (started on first read)."""
        self._broken: str | None = None

    @classmethod
    def connect(cls, adb_device: AdbDevice, *, call_timeout_s: float = CALL_TIMEOUT_S) -> Phone:
        """Start (or reuse) the uiautomator2 server on the phone."""
        import uiautomator2

        # Every connection to the phone (uiautomator2's and the shell's) goes through the fast device.
        fast = fast_device(adb_device)
        phone = cls(None, fast, call_timeout_s=call_timeout_s)
        phone.u2 = phone._call("connect", lambda: uiautomator2.connect(fast))
        phone.rpc = RpcLink(fast, phone.u2)
        return phone

    def _submit(self, what: str, fn: Callable[[], T], worker: _Worker | None = None) -> Future[T]:
        if self._broken is not None:
            raise PhoneError(f"{what}: phone unusable since {self._broken}")
        return (worker or self._worker).submit(lambda: _guard(fn, what))

    def _wait(self, what: str, future: Future[T]) -> T:
        try:
            return future.result(timeout=self.call_timeout_s)
        except FutureTimeout:
            self._broken = f"{what} got no answer in {self.call_timeout_s:g} s"
            self.close()
            raise PhoneError(self._broken) from None

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        return self._wait(what, self._submit(what, fn))

    def close(self) -> None:
        """Stop the call workers (a stuck call is abandoned, not waited for) and drop the kept stream."""
        if self.rpc is not None:
            rpc = self.rpc
            self._worker.submit(rpc.close)  # after any call still queued, never while one runs
        self._worker.stop()
        if self._side is not None:
            self._side.stop()

    # --- reads ---------------------------------------------------------------------------------
    def size(self) -> tuple[int, int]:
        """Display width and height in pixels."""
        if self._size is None:
            info = self._call("deviceInfo", lambda: self.u2.info)
            self._size = (int(info["displayWidth"]), int(info["displayHeight"]))
        return self._size

    def foreground(self) -> tuple[str, str]:
        """Foreground (package, activity)."""
        return _app(self._call("app_current", self.u2.app_current))

    def read(self, *, screenshot: bool = False) -> Observation:
        """Dump the hierarchy and ask for the foreground app at once, convert; optionally take a JPEG.

        The two reads are independent (the dump over the uiautomator2 server, the focus over an adb shell), so
        they go out together on two connections: a read costs the longer of the two round trips, not their sum.
        The header still names the focused window's app and activity, as the focus query reports them.
        """
        if self._side is None:
            self._side = _Worker()
        t0 = time.perf_counter()
        dumped = self._submit("dump_hierarchy", self._dump)
        focused = self._submit("app_current", lambda: self.u2.app_current(), self._side)
        xml = self._wait("dump_hierarchy", dumped)
        t1 = time.perf_counter()
        package, activity = _app(self._wait("app_current", focused))
        t2 = time.perf_counter()
        try:
            obs = observe_xml(xml, package=package, activity=activity)
        except ExpatError as exc:
            # The harness could not read the screen: the attempt ends as an infrastructure error, not a crash.
            raise PhoneError(f"dump_hierarchy: unreadable hierarchy dump ({exc})") from None
        t3 = time.perf_counter()
        # "foreground": how much longer the focus query took than the dump it ran beside.
        obs.timings_ms = {"dump": (t1 - t0) * 1000, "foreground": (t2 - t1) * 1000, "convert": (t3 - t2) * 1000}
        if screenshot:
            obs.screenshot = self.screenshot_jpeg()
            obs.timings_ms["screenshot"] = (time.perf_counter() - t3) * 1000
        return obs

    def dump(self) -> str:
        """The hierarchy XML as a read gets it (the dump alone: no focus query, no conversion)."""
        return self._call("dump_hierarchy", self._dump)

    def _dump(self) -> str:
        rpc = self.rpc
        if rpc is None:
            return str(self.u2.dump_hierarchy())
        xml = rpc.call("dumpWindowHierarchy", [False, self.u2.settings["max_depth"]])
        if not xml or '<hierarchy rotation="0" />' in xml:
            # An empty screen: uiautomator2's own retries, and its document when the screen stays empty.
            return str(self.u2.dump_hierarchy())
        return str(xml)

    def screenshot_jpeg(self, quality: int = 80) -> bytes:
        """The screen as JPEG bytes."""
        import base64

        rpc = self.rpc
        data = self._call("takeScreenshot", lambda: rpc.call("takeScreenshot", [1, quality]) if rpc is not None
                          else self.u2.jsonrpc.takeScreenshot(1, quality))
        if not data:
            raise PhoneError("takeScreenshot returned nothing")
        return base64.b64decode(data)

    # --- input ---------------------------------------------------------------------------------
    def tap(self, x: int, y: int) -> None:
        """Tap a point."""
        rpc = self.rpc
        if rpc is not None and x >= 1 and y >= 1:  # what uiautomator2's click sends for a point in pixels
            self._call("click", lambda: rpc.call("click", [x, y]))
        else:
            self._call("click", lambda: self.u2.click(x, y))

    def long_press(self, x: int, y: int, seconds: float = 0.8) -> None:
        """Touch and hold a point."""
        rpc = self.rpc
        if rpc is not None and x >= 1 and y >= 1:
            self._call("long_click", lambda: rpc.call("click", [x, y, int(seconds * 1000)]))
        else:
            self._call("long_click", lambda: self.u2.long_click(x, y, seconds))

    def swipe(self, x1: int, y1: int, x2: int, y2: int, seconds: float = 0.2) -> None:
        """Drag from one point to another."""
        self._call("swipe", lambda: self.u2.swipe(x1, y1, x2, y2, seconds))

    def type_text(self, text: str) -> None:
        """Type into the focused field."""
        self._call("send_keys", lambda: self.u2.send_keys(text))

    def press(self, key: str) -> None:
        """Press a key by name (back, home, enter…)."""
        rpc = self.rpc
        if rpc is not None:
            self._call("press", lambda: rpc.call("pressKey", [key]))
        else:
            self._call("press", lambda: self.u2.press(key))

    def launch(self, package: str, *, stop: bool = False) -> None:
        """Start an app's launcher activity (optionally force-stopping it first: a fresh start)."""
        self._call("app_start", lambda: self.u2.app_start(package, stop=stop))

    def stop(self, package: str) -> None:
        """Force-stop an app."""
        self._call("app_stop", lambda: self.u2.app_stop(package))

    def shell(self, argv: list[str], timeout: float = 30) -> str:
        """Run a command (argv, never a shell string built from input) and return its output."""
        if self.adb is None:
            raise PhoneError("no adb device handle for shell")
        adb = self.adb
        return self._call("shell", lambda: str(adb.shell(argv, timeout=timeout)))


def nodelay_device(adb_device: AdbDevice) -> AdbDevice:
    """The same device with every connection to the phone fast (TCP_NODELAY, no idle waits): `fast_device`."""
    return fast_device(adb_device)


def _app(current: Any) -> tuple[str, str]:
    return str(current.get("package", "")), str(current.get("activity", ""))


class _Worker:
    """One daemon thread running phone calls in order.

    A daemon (not a ThreadPoolExecutor, whose threads are joined at exit): a call stuck on a stalled
    link must not keep `farm run` from exiting.
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name="phone-calls", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while (job := self._jobs.get()) is not None:
            fn, future = job
            try:
                future.set_result(fn())
            except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
                future.set_exception(exc)

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        future: Future[T] = Future()
        self._jobs.put((fn, future))
        return future

    def stop(self) -> None:
        self._jobs.put(None)


def _guard(fn: Callable[[], T], what: str) -> T:
    try:
        return fn()
    except PhoneError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever u2/adbutils raise, the phone is unusable
        raise PhoneError(f"{what}: {type(exc).__name__}: {exc}".strip()) from exc
