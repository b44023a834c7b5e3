"""Clock: an alarm list (time, label, on/off) and an editor to add, change or delete alarms."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from farm.sim.apps.base import (
    App,
    Bounds,
    Frame,
    ListItem,
    Node,
    button,
    by_id,
    label,
    load_json,
    new_id,
    row,
    save_json,
    split_h,
    switch,
    title_bar,
    without,
)
from farm.sim.apps.forms import Fab, Field, Form, list_screen, tab_bar

if TYPE_CHECKING:
    from farm.sim.phone import PhoneState

PACKAGE = "com.android.deskclock"

_TIME = re.compile(
    r"^\s*(凌晨|早上|上午|中午|下午|晚上)?\s*([01]?\d|2[0-3])\s*[:：]\s*([0-5]\d)\s*([AaPp][Mm])?\s*$"
)
DEFAULT_ALARMS = [
    {"id": "default-1", "time": "07:30", "label": "起床", "enabled": True},
    {"id": "default-2", "time": "09:00", "label": "", "enabled": False},
]


def saved_alarms(phone: PhoneState) -> list[dict[str, Any]]:
    """The clock's alarms on `phone`, sorted by time: what its list shows and what `dumpsys alarm` schedules.

    Each is `{"id", "time": "HH:MM", "label", "enabled", "repeat": "once" | "weekdays"}` (`repeat` may be absent:
    once)."""
    return sorted(load_json(phone, PACKAGE, "alarms", DEFAULT_ALARMS), key=lambda a: a["time"])


def store_alarms(phone: PhoneState, alarms: list[dict[str, Any]]) -> None:
    """Replace the clock's alarms on `phone` (kept sorted by time)."""
    save_json(phone, PACKAGE, "alarms", sorted(alarms, key=lambda a: a["time"]))


def parse_time(text: str) -> str | None:
    """`7:05`, `19:05`, `下午7:05`, `晚上9:20`, `7:05 PM` → 24-hour `HH:MM`; None when invalid."""
    m = _TIME.match(text)
    if not m:
        return None
    period, hour, minute, ampm = m.group(1), int(m.group(2)), m.group(3), (m.group(4) or "").lower()
    if period or ampm:
        if hour > 12:
            return None
        afternoon = period in ("下午", "晚上") or ampm == "pm" or (period == "中午" and hour != 11)
        hour = hour % 12 + (12 if afternoon else 0)
    return f"{hour:02d}:{minute}"


def display_time(hhmm: str) -> str:
    """24-hour `21:20` → `下午9:20`, the 12-hour form the alarm list shows."""
    hour, minute = int(hhmm[:2]), hhmm[3:]
    return f"{'上午' if hour < 12 else '下午'}{hour % 12 or 12}:{minute}"


TABS = [("alarms", "闹钟", "tab_alarm"), ("clock", "时钟", "tab_clock")]


class ClockApp(App):
    """DeskClock look-alike: tabs 闹钟 / 时钟; `+` (content-desc 添加闹钟) opens the editor."""

    package = PACKAGE
    activity = ".DeskClock"
    activities = {"edit": ".AlarmEditActivity"}
    page = "alarms"
    editing: str | None = None
    weekdays = False

    def alarms(self) -> list[dict[str, Any]]:
        """Saved alarms, sorted by time."""
        return saved_alarms(self.phone)

    def _store(self, alarms: list[dict[str, Any]]) -> None:
        store_alarms(self.phone, alarms)

    def open_activity(self, activity: str) -> None:
        if activity.endswith("HandleApiCalls"):
            self.new_alarm()

    def back(self) -> bool:
        if self.page in ("edit", "clock"):
            self.page = "alarms"
            return True
        return False

    # actions --------------------------------------------------------------------------------------
    def new_alarm(self) -> None:
        self.page, self.editing = "edit", None
        self.start_form("time", "label")
        self.weekdays = False

    def edit_alarm(self, alarm_id: str) -> None:
        alarm = by_id(self.alarms(), alarm_id)
        if alarm is None:
            return
        self.page, self.editing = "edit", alarm_id
        self.fields = {"time": display_time(alarm["time"]), "label": alarm["label"]}
        self.weekdays = alarm.get("repeat") == "weekdays"
        self.focus = None

    def toggle(self, alarm_id: str) -> None:
        alarms = self.alarms()
        for a in alarms:
            if a["id"] == alarm_id:
                a["enabled"] = not a["enabled"]
        self._store(alarms)

    def save_alarm(self) -> None:
        time = parse_time(self.fields.get("time", ""))
        if time is None:
            self.ui.toast("请输入有效的时间,例如 07:30 或 下午9:20")
            return
        alarms = without(self.alarms(), self.editing)
        alarms.append({"id": self.editing or new_id(), "time": time, "label": self.fields.get("label", "").strip(),
                       "enabled": True, "repeat": "weekdays" if self.weekdays else "once"})
        self._store(alarms)
        self.back_to_list()
        self.ui.toast(f"闹钟已设置为 {display_time(time)}")

    def delete_alarm(self) -> None:
        self._store(without(self.alarms(), self.editing))
        self.back_to_list()
        self.ui.toast("已删除闹钟")

    def flip_weekdays(self) -> None:
        self.weekdays = not self.weekdays

    def back_to_list(self) -> None:
        self.page, self.editing, self.focus = "alarms", None, None

    def go(self, page: str) -> None:
        self.page = page

    # view -----------------------------------------------------------------------------------------
    def view(self, frame: Frame) -> list[Node]:
        if self.page == "edit":
            return self._editor(frame)
        tabs_row = frame.take_bottom(80)
        if self.page == "clock":
            nodes = title_bar(self, frame, "时钟")
            nodes.append(label(frame.take(96), self.ui.now().strftime("%H:%M"), rid=self.rid("digital_clock")))
            nodes.append(label(frame.take(32), self.ui.now().strftime("%Y年%m月%d日"), rid=self.rid("date")))
        else:
            nodes = list_screen(self, frame, title_bar(self, frame, "闹钟"), "alarms",
                                [self._alarm_item(a) for a in self.alarms()], "alarm_recycler_view",
                                fab=Fab("添加闹钟", self.new_alarm, "fab", centred=True))
        return nodes + tab_bar(self, tabs_row, TABS, self.page, self.go)

    def _alarm_item(self, alarm: dict[str, Any]) -> ListItem:
        def build(bounds: Bounds) -> Node:
            text_col, switch_col = split_h(bounds, [4, 1])
            left, top, right, bottom = text_col
            mid = top + (bottom - top) * 3 // 5
            label_b, repeat_b = split_h((left + self.ui.dp(16), mid, right, bottom), [3, 2])
            kids = [
                label((left + self.ui.dp(16), top, right, mid), display_time(alarm["time"]),
                      rid=self.rid("digital_clock")),
                label(label_b, alarm["label"], rid=self.rid("label")),
                label(repeat_b, "工作日" if alarm.get("repeat") == "weekdays" else "只响一次",
                      rid=self.rid("repeat_days")),
            ]
            item = row(text_col, kids, lambda: self.edit_alarm(alarm["id"]), rid=self.rid("alarm_item"))
            toggle = switch(switch_col, "", bool(alarm["enabled"]), lambda: self.toggle(alarm["id"]),
                            rid=self.rid("onoff"))
            return Node(cls="android.widget.FrameLayout", bounds=bounds, children=[item, toggle])

        return ListItem(96, build)

    def _editor(self, frame: Frame) -> list[Node]:
        form = Form(self, frame, title_bar(self, frame, "修改闹钟" if self.editing else "添加闹钟", self.back_to_list))
        form.field(Field("time", "时间(如 07:30、下午9:20)", "time", caption="时间", caption_rid="time_title"))
        form.field(Field("label", "标签", "edit_label", caption="标签", caption_rid="label_title"))
        form.switch(56, "仅工作日(周一至周五)", self.weekdays, self.flip_weekdays, "repeat_weekdays")
        form.gap()
        cols = split_h(frame.take(64), [1, 1, 1] if self.editing else [1, 1])
        form.add(button(cols[0], "取消", self.back_to_list, rid=self.rid("cancel")))
        form.add(button(cols[-1], "保存", self.save_alarm, rid=self.rid("save")))
        if self.editing:
            form.add(button(cols[1], "删除", self.delete_alarm, rid=self.rid("delete")))
        return form.nodes
