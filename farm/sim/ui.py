"""The virtual phone's UI: foreground app, input routing, the window hierarchy and screenshots."""

from __future__ import annotations

import threading
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from farm.sim import audio
from farm.sim.apps import app_class
from farm.sim.apps.base import App, Frame, Node, label
from farm.sim.apps.launcher import LauncherApp, RecentsView

if TYPE_CHECKING:
    from farm.sim.phone import PhoneState

SYSTEMUI = "com.android.systemui"
STATUS_BAR_DP = 24

# KeyEvent codes (android.view.KeyEvent) and the names uiautomator's pressKey accepts.
KEYCODES: dict[str, int] = {
    "HOME": 3, "BACK": 4, "CALL": 5, "ENDCALL": 6, "DPAD_UP": 19, "DPAD_DOWN": 20, "DPAD_LEFT": 21,
    "DPAD_RIGHT": 22, "DPAD_CENTER": 23, "VOLUME_UP": 24, "VOLUME_DOWN": 25, "POWER": 26, "CAMERA": 27,
    "TAB": 61, "SPACE": 62, "ENTER": 66, "DEL": 67, "MENU": 82, "SEARCH": 84, "FORWARD_DEL": 112,
    "ESCAPE": 111, "VOLUME_MUTE": 164, "APP_SWITCH": 187, "SLEEP": 223, "WAKEUP": 224,
}
KEYCODES.update({str(d): 7 + d for d in range(10)})
KEYCODES.update({chr(ord("A") + i): 29 + i for i in range(26)})
_ALIASES = {
    "back": 4, "home": 3, "enter": 66, "del": 67, "delete": 67, "menu": 82, "search": 84, "recent": 187,
    "app_switch": 187, "wakeup": 224, "sleep": 223, "power": 26, "volume_up": 24, "volume_down": 25,
    "volume_mute": 164, "camera": 27, "left": 21, "right": 22, "up": 19, "down": 20, "center": 23,
    "space": 62, "tab": 61,
}
_VOLUME_KEYS = {24: 1, 25: -1, 164: 0}
"""VOLUME_UP, VOLUME_DOWN, VOLUME_MUTE → the direction `audio.adjust` takes."""
_CODE_CHARS = {**{7 + d: str(d) for d in range(10)}, **{29 + i: chr(ord("a") + i) for i in range(26)}, 62: " "}


def keycode(key: str | int) -> int | None:
    """A key name (`KEYCODE_BACK`, `back`, `66`) or code → the KeyEvent code; None if unknown."""
    if isinstance(key, int):
        return key
    name = key.strip()
    if name.lstrip("-").isdigit():
        return int(name)
    if name.lower() in _ALIASES:
        return _ALIASES[name.lower()]
    upper = name.upper()
    return KEYCODES.get(upper.removeprefix("KEYCODE_"))


class UiDevice:
    """What is on the screen of one virtual phone and how input changes it."""

    def __init__(self, phone: PhoneState) -> None:
        self.phone = phone
        self.clipboard: str = ""
        self.last_toast: str | None = None
        self._toast: str | None = None
        self._running: dict[str, App] = {}
        self._recents: list[str] = []
        self._top: str | None = None
        self._recents_open = False
        self.lock = threading.RLock()
        self.launcher = LauncherApp(self)
        self._recents_view = RecentsView(self.launcher)
        self._pending_down: tuple[float, float] | None = None
        self.screen_cache: dict[tuple[object, ...], bytes] = {}
        """Recent screenshots keyed by format and screen content (see farm.sim.screen.render)."""

    # --- geometry ---------------------------------------------------------------------------------
    @property
    def width(self) -> int:
        return self.phone.profile.screen.width

    @property
    def height(self) -> int:
        return self.phone.profile.screen.height

    @property
    def density(self) -> int:
        return self.phone.profile.screen.density

    def dp(self, value: float) -> int:
        return round(value * self.density / 160)

    # --- apps -------------------------------------------------------------------------------------
    def installed(self, package: str) -> bool:
        """Whether the profile lists `package` as installed."""
        return self.phone.profile.package(package) is not None

    def app(self, package: str) -> App:
        """The running instance of `package`, started if needed."""
        with self.lock:
            if package == self.launcher.package:
                return self.launcher
            if package not in self._running:
                self._running[package] = app_class(package)(self)
            return self._running[package]

    def running(self) -> list[str]:
        """Packages with a live process (most recently used last)."""
        return [p for p in self._recents if p in self._running]

    def foreground(self) -> tuple[str, str]:
        """(package, fully qualified activity) of the focused app."""
        with self.lock:
            if self._top is None or self._recents_open:
                return self.launcher.package, self.launcher.current_activity()
            app = self.app(self._top)
            return app.package, app.current_activity()

    def current_app(self) -> App:
        with self.lock:
            return self.launcher if self._top is None else self.app(self._top)

    def launch(self, package: str, activity: str | None = None) -> bool:
        """Bring `package` to the front (starting it if needed); False when it is not installed."""
        with self.lock:
            if not self.installed(package):
                return False
            self._recents_open = False
            self._toast = None
            if package == self.launcher.package:
                self._top = None
                return True
            app = self.app(package)
            if activity:
                app.open_activity(activity)
            if package in self._recents:
                self._recents.remove(package)
            self._recents.append(package)
            self._top = package
            return True

    def force_stop(self, package: str) -> None:
        """Kill the app's process: transient UI state is lost, saved data stays."""
        with self.lock:
            self._running.pop(package, None)
            if package in self._recents:
                self._recents.remove(package)
            if self._top == package:
                self._top = None

    def go_home(self) -> None:
        with self.lock:
            self._top = None
            self._recents_open = False

    def toast(self, text: str) -> None:
        """Show a short message (visible until the next input event, kept for getLastToast)."""
        self._toast = text
        self.last_toast = text

    # --- the tree ---------------------------------------------------------------------------------
    def roots(self) -> list[Node]:
        """Window roots, bottom-most first: the app (or keyguard) window, then the status bar."""
        with self.lock:
            w, h = self.width, self.height
            sb = self.dp(STATUS_BAR_DP)
            frame = Frame((0, sb, w, h), self.density)
            if self.phone.locked:
                pkg, content = SYSTEMUI, self._keyguard(frame)
            elif self._recents_open:
                pkg, content = self.launcher.package, self._recents_view.view(frame)
            else:
                app = self.current_app()
                pkg, content = app.package, app.view(frame)
            if self._toast:
                tb = (self.dp(48), h - self.dp(120), w - self.dp(48), h - self.dp(80))
                content = [*content, label(tb, self._toast, rid="android:id/message")]
            window = Node(
                cls="android.widget.FrameLayout", bounds=(0, 0, w, h),
                children=[Node(cls="android.widget.FrameLayout", rid="android:id/content", bounds=(0, sb, w, h),
                               children=content)],
            )
            _set_package(window, pkg)
            status = self._status_bar(sb)
            _set_package(status, SYSTEMUI)
            return [window, status]

    def now(self) -> datetime:
        """Wall-clock time in the phone's time zone."""
        return self.phone.now()

    def _status_bar(self, height: int) -> Node:
        w = self.width
        level = self.phone.profile.battery_level
        clock = label((self.dp(16), 0, self.dp(80), height), self.now().strftime("%H:%M"),
                      rid=f"{SYSTEMUI}:id/clock")
        battery = Node(cls="android.widget.LinearLayout", rid=f"{SYSTEMUI}:id/battery",
                       desc=f"电池电量为百分之 {level}。", bounds=(w - self.dp(72), 0, w - self.dp(16), height),
                       children=[label((w - self.dp(72), 0, w - self.dp(16), height), f"{level}%",
                                       rid=f"{SYSTEMUI}:id/battery_percentage_view")])
        return Node(cls="android.widget.FrameLayout", rid=f"{SYSTEMUI}:id/status_bar", bounds=(0, 0, w, height),
                    children=[clock, battery])

    def _keyguard(self, frame: Frame) -> list[Node]:
        frame.take(120)
        clock = label(frame.take(96), self.now().strftime("%H:%M"), rid=f"{SYSTEMUI}:id/keyguard_clock")
        date = label(frame.take(32), self.now().strftime("%m月%d日"), rid=f"{SYSTEMUI}:id/date_view")
        hint = label(frame.take_bottom(64), "上滑即可解锁", rid=f"{SYSTEMUI}:id/keyguard_indication_text")
        return [clock, date, hint]

    def hierarchy_xml(self, style: Literal["dump", "jar"] = "dump") -> str:
        """The window hierarchy: `dump` = one line like `uiautomator dump`; `jar` = the u2 server's."""
        from farm.sim.apps.hierarchy import to_xml

        return to_xml(self.roots(), rotation=0, style=style)

    # --- input ------------------------------------------------------------------------------------
    def _hit(self, x: float, y: float) -> Node | None:
        """The top-most node under (x, y) that reacts to a tap (or is clickable)."""
        best: Node | None = None
        for root in self.roots():
            if not root.contains(x, y):
                continue
            for node in root.walk():
                if node.contains(x, y) and (node.on_tap is not None or node.on_long_tap is not None):
                    best = node
        return best

    def _interactive(self) -> bool:
        return bool(self.phone.screen_on) and not self.phone.locked

    def tap(self, x: float, y: float) -> bool:
        """A finger tap; True when something reacted."""
        with self.lock:
            if not self._interactive():
                return False
            self._toast = None
            node = self._hit(x, y)
            if node is None or node.on_tap is None:
                return False
            node.on_tap()
            return True

    def long_press(self, x: float, y: float) -> bool:
        """A long press (falls back to a tap for views without a long-click action, like Android)."""
        with self.lock:
            if not self._interactive():
                return False
            node = self._hit(x, y)
            if node is not None and node.on_long_tap is not None:
                self._toast = None
                node.on_long_tap()
                return True
            return self.tap(x, y)

    def focused_field(self) -> tuple[App, str] | None:
        """The app and field key of the focused text field on screen, if any."""
        app = self.current_app()
        if app.focus is None or self._recents_open or self.phone.locked:
            return None
        for root in self.roots():
            for node in root.walk():
                if node.field_key == app.focus:
                    return app, app.focus
        return None

    def set_field(self, app: App, key: str, value: str) -> None:
        app.fields[key] = value
        app.field_changed(key)

    def input_text(self, text: str) -> bool:
        """Type into the focused field (or an app that takes raw keys)."""
        with self.lock:
            if not self._interactive():
                return False
            self._toast = None
            target = self.focused_field()
            if target is None:
                return self.current_app().type_text(text)
            app, key = target
            self.set_field(app, key, app.fields.get(key, "") + text)
            return True

    def key(self, key: str | int) -> bool:
        """Press a key by name or code; False for an unknown key."""
        code = keycode(key)
        if code is None:
            return False
        with self.lock:
            self._toast = None
            return self._key(code)

    def _key(self, code: int) -> bool:
        phone = self.phone
        if code == 224:  # WAKEUP
            phone.screen_on = True
            return True
        if code in (223, 26):  # SLEEP, POWER
            if code == 26 and not phone.screen_on:
                phone.screen_on = True
            else:
                phone.screen_on = False
                phone.locked = True
            return True
        if not phone.screen_on:
            return True
        if code in _VOLUME_KEYS:
            # Since Android 9 the volume keys change media volume when no call or ringtone plays, on the
            # lock screen too; the index lands in settings system (`volume_music_speaker`), where Android keeps it.
            audio.adjust(phone, audio.MUSIC, _VOLUME_KEYS[code])
            return True
        if phone.locked:
            if code == 82:  # MENU dismisses a keyguard without a secure lock
                phone.locked = False
            return True
        if code == 3:
            self.go_home()
        elif code == 4:
            self._back()
        elif code == 187:
            self._recents_open = not self._recents_open
        elif code == 66:
            target = self.focused_field()
            if target is not None:
                target[0].enter()
        elif code in (67, 112):
            target = self.focused_field()
            if target is not None:
                app, k = target
                self.set_field(app, k, app.fields.get(k, "")[:-1])
            else:
                self.current_app().type_text("\b")
        elif code in _CODE_CHARS:
            return self.input_text(_CODE_CHARS[code])
        return True

    def _back(self) -> None:
        if self._recents_open:
            self._recents_open = False
            return
        app = self.current_app()
        if app is self.launcher:
            return
        if not app.back():
            self._top = None

    def swipe(self, x1: float, y1: float, x2: float, y2: float, duration_ms: int = 200) -> bool:
        """A swipe: unlocks the keyguard upward, scrolls the list under the start point."""
        with self.lock:
            if not self.phone.screen_on:
                return False
            dx, dy = x2 - x1, y2 - y1
            if self.phone.locked:
                if -dy > self.height / 8:
                    self.phone.locked = False
                    return True
                return False
            if abs(dx) < self.dp(8) and abs(dy) < self.dp(8):
                return self.long_press(x1, y1) if duration_ms >= 500 else self.tap(x1, y1)
            if abs(dy) < abs(dx):
                return False
            app = self.current_app() if not self._recents_open else self.launcher
            for root in self.roots():
                for node in reversed(list(root.walk())):
                    if node.scroll_key and node.contains(x1, y1):
                        rows = max(1, round(abs(dy) / self.dp(56)))
                        app.scroll[node.scroll_key] = max(0, app.scroll.get(node.scroll_key, 0)
                                                          + (rows if dy < 0 else -rows))
                        return True
            return False

    def touch(self, action: int, x: float, y: float) -> bool:
        """Raw touch events (injectInputEvent): DOWN then UP at about the same place is a tap."""
        with self.lock:
            if action == 0:
                self._pending_down = (x, y)
                return True
            if action == 1 and self._pending_down is not None:
                x0, y0 = self._pending_down
                self._pending_down = None
                return self.swipe(x0, y0, x, y, 100)
            return True

    # --- pixels -----------------------------------------------------------------------------------
    def screenshot_png(self) -> bytes:
        """The screen as PNG bytes."""
        from farm.sim.screen import render

        return render(self, "PNG")

    def screenshot_jpeg(self, quality: int = 80) -> bytes:
        """The screen as JPEG bytes."""
        from farm.sim.screen import render

        return render(self, "JPEG", quality=quality)


def _set_package(node: Node, package: str) -> None:
    for n in node.walk():
        n.package = package

