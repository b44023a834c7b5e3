"""A virtual phone for the android-chrome backend when no real phone is at hand: a private adb
server, one virtual phone, and a debuggable Chromium its `chrome_devtools_remote` socket reaches.
Runs on it are marked simulated."""

from __future__ import annotations

from types import TracebackType

from web_bench.browser.chromium import DebuggableChromium


class VirtualChromePhone:
    """Context manager: `serial` and `adb_port` of a virtual phone whose Chrome is a local Chromium."""

    def __init__(self, chromium: str | None = None) -> None:
        self._chromium = DebuggableChromium(chromium)
        self._farm: object | None = None
        self.adb_port = 0
        self.serial = ""

    def start(self) -> VirtualChromePhone:
        """Start Chromium, an adb server on a free port and the phone."""
        from farm.sim.launcher import free_port, kill_adb_server, start_phones
        from farm.sim.profile import default_profile

        self._chromium.start()
        try:
            profile = default_profile()
            profile.chrome_devtools = self._chromium.endpoint
            self.adb_port = free_port()
            try:
                farm = start_phones(1, profile=profile, adb_port=self.adb_port)
            except BaseException:
                kill_adb_server(self.adb_port)
                raise
            self._farm = farm
            self.serial = farm.phones[0].serial
        except BaseException:
            self._chromium.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the phone, its adb server and Chromium."""
        from farm.sim.launcher import SimFarm, kill_adb_server

        if isinstance(self._farm, SimFarm):
            self._farm.stop()
            kill_adb_server(self.adb_port)
            self._farm = None
        self._chromium.stop()

    def __enter__(self) -> VirtualChromePhone:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
