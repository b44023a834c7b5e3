"""Settings: pages with toggles backed by the phone's `settings` tables, volume steps (声音和振动), About phone."""

from __future__ import annotations

from farm.sim import audio, radios
from farm.sim.apps.base import App, Bounds, Frame, ListItem, Node, image_button, scroll_list, split_h, switch, title_bar
from farm.sim.apps.forms import two_line_row

# (table, key, values that read as on, value written for on, value written for off, default)
_TOGGLES: dict[str, tuple[str, str, tuple[str, ...], str, str, str]] = {
    # Settings.Global.WIFI_ON: 0 off, 1 on, 2 on in airplane mode, 3 off because airplane mode is on.
    "WLAN": ("global", "wifi_on", ("1", "2"), "1", "0", "1"),
    "飞行模式": ("global", "airplane_mode_on", ("1",), "1", "0", "0"),
    # Settings.Global.BLUETOOTH_ON: 0 off, 1 on, 2 on before airplane mode turned it off.
    "蓝牙": ("global", "bluetooth_on", ("1",), "1", "0", "0"),
    # Settings.Secure.UI_NIGHT_MODE: UiModeManager.MODE_NIGHT_YES 2 / MODE_NIGHT_NO 1 (`cmd uimode night`).
    "深色主题": ("secure", "ui_night_mode", ("2",), "2", "1", "1"),
}
# The volume rows of 声音和振动 and the stream each one sets (AOSP's 铃声和通知音量 is STREAM_RING).
VOLUMES = (("媒体音量", audio.MUSIC), ("铃声和通知音量", "STREAM_RING"), ("闹钟音量", "STREAM_ALARM"))


def switch_for(table: str, key: str) -> str | None:
    """The name of the switch that writes settings `table` `key` (`global`, `wifi_on` → `WLAN`), or None."""
    return next((name for name, (t, k, *_rest) in _TOGGLES.items() if (t, k) == (table, key)), None)


class SettingsApp(App):
    """Main list → sub-pages; BACK returns to the list."""

    package = "com.android.settings"
    activity = ".Settings"
    activities = {"about": ".Settings$MyDeviceInfoActivity", "network": ".Settings$NetworkDashboardActivity",
                  "devices": ".Settings$ConnectedDeviceDashboardActivity",
                  "sound": ".Settings$SoundSettingsActivity",
                  "display": ".Settings$DisplaySettingsActivity", "battery": ".Settings$PowerUsageSummaryActivity",
                  "storage": ".Settings$StorageDashboardActivity"}
    page = "main"

    def back(self) -> bool:
        if self.page != "main":
            self.page = "main"
            return True
        return False

    def open(self, page: str) -> None:
        self.page = page
        self.scroll.pop("list", None)

    # settings table access ------------------------------------------------------------------------
    def toggle_on(self, name: str) -> bool:
        table, key, on_values, _on, _off, default = _TOGGLES[name]
        return self.phone.settings.setdefault(table, {}).get(key, default) in on_values

    def flip(self, name: str) -> None:
        table, key, _on_values, on, off, _default = _TOGGLES[name]
        turning_on = not self.toggle_on(name)
        # Airplane mode and Wi-Fi move other values too; the shell's `svc`/`cmd connectivity` share those rules.
        if name == "飞行模式":
            radios.set_airplane(self.phone, turning_on)
        elif name == "WLAN":
            radios.set_wifi(self.phone, turning_on)
        else:
            self.phone.settings.setdefault(table, {})[key] = on if turning_on else off

    # view -------------------------------------------------------------------------------------------
    def _entry(self, title: str, summary: str, target: str | None) -> ListItem:
        return ListItem(72, lambda b: two_line_row(self, b, (title, "android:id/title"),
                                                   (summary, "android:id/summary") if summary else None,
                                                   (lambda: self.open(target)) if target else None))

    def _toggle(self, name: str) -> ListItem:
        def build(bounds: Bounds) -> Node:
            return switch(bounds, name, self.toggle_on(name), lambda: self.flip(name), rid="android:id/switch_widget")

        return ListItem(64, build)

    def _volume(self, name: str, stream: str) -> ListItem:
        # A volume row: its name, the level (what the slider shows), and a step down / up button each (the
        # slider's keyboard and accessibility steps), which move the stream's index as a volume key does.
        def build(bounds: Bounds) -> Node:
            text_b, down_b, up_b = split_h(bounds, [4, 1, 1])
            level = f"{audio.index(self.phone, stream)} / {audio.stream(stream).maximum}"
            text = two_line_row(self, text_b, (name, "android:id/title"), (level, "android:id/summary"), None)
            down = image_button(down_b, f"调低{name}", lambda: audio.adjust(self.phone, stream, -1),
                                rid=self.rid("volume_down"))
            up = image_button(up_b, f"调高{name}", lambda: audio.adjust(self.phone, stream, 1),
                              rid=self.rid("volume_up"))
            return Node(cls="android.widget.LinearLayout", bounds=bounds, children=[text, down, up])

        return ListItem(72, build)

    def view(self, frame: Frame) -> list[Node]:
        p = self.phone.profile
        if self.page == "main":
            nodes = title_bar(self, frame, "设置")
            items = [
                self._entry("网络和互联网", "WLAN、移动网络、流量使用", "network"),
                self._entry("已连接的设备", "蓝牙、配对", "devices"),
                self._entry("声音和振动", "音量、铃声", "sound"),
                self._entry("显示", "深色主题、字体大小、亮度", "display"),
                self._entry("电池", f"{p.battery_level}%", "battery"),
                self._entry("存储", f"已使用 {_gb(p.storage_total_mb - p.storage_free_mb)} GB", "storage"),
                self._entry("关于手机", p.model, "about"),
            ]
        else:
            back = lambda: self.open("main")  # noqa: E731
            title, items = self._page(self.page)
            nodes = title_bar(self, frame, title, back)
        nodes.append(scroll_list(self, "list", frame.rest(), items, rid=self.rid("recycler_view")))
        return nodes

    def _page(self, page: str) -> tuple[str, list[ListItem]]:
        p = self.phone.profile
        if page == "network":
            return "网络和互联网", [self._toggle("WLAN"), self._toggle("飞行模式")]
        if page == "devices":
            return "已连接的设备", [self._toggle("蓝牙")]
        if page == "display":
            return "显示", [self._toggle("深色主题")]
        if page == "sound":
            return "声音和振动", [self._volume(name, stream) for name, stream in VOLUMES]
        if page == "battery":
            return "电池", [self._entry("电池电量", f"{p.battery_level}%", None),
                          self._entry("充电状态", "正在充电" if p.charging else "未在充电", None)]
        if page == "storage":
            used = p.storage_total_mb - p.storage_free_mb
            return "存储", [self._entry("已使用", f"{_gb(used)} GB", None),
                          self._entry("可用空间", f"{_gb(p.storage_free_mb)} GB", None),
                          self._entry("总容量", f"{_gb(p.storage_total_mb)} GB", None)]
        build_id = self.phone.props.get("ro.build.display.id") or self.phone.props.get("ro.build.id", "")
        return "关于手机", [
            self._entry("设备名称", p.model, None),
            self._entry("型号", p.model, None),
            self._entry("Android 版本", p.android_release, None),
            self._entry("版本号", build_id, None),
        ]


def _gb(mb: int) -> str:
    return f"{mb / 1024:.1f}"
