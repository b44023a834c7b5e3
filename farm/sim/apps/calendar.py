"""Calendar: today's date, a list of events and an editor (title, time, save)."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from farm.sim.apps.base import (
    App,
    Bounds,
    Frame,
    ListItem,
    Node,
    button,
    image_button,
    label,
    row,
    scroll_list,
    title_bar,
)

if TYPE_CHECKING:
    from farm.sim.ui import UiDevice

_WHEN = re.compile(r"^\s*(\d{4})-(\d{1,2})-(\d{1,2})(?:\s+(\d{1,2})[:：](\d{2}))?\s*$")


def parse_when(text: str) -> str | None:
    """`2026-12-03 9:30` → `2026-12-03 09:30` (time optional); None when invalid."""
    m = _WHEN.match(text)
    if not m:
        return None
    y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
    if not (1 <= mo <= 12 and 1 <= d <= 31):
        return None
    when = f"{y:04d}-{mo:02d}-{d:02d}"
    if m.group(4) is not None:
        h, mi = int(m.group(4)), int(m.group(5))
        if h > 23 or mi > 59:
            return None
        when += f" {h:02d}:{mi:02d}"
    return when


class CalendarApp(App):
    """Agenda list; 新建活动 opens the editor."""

    package = "com.android.calendar"
    activity = ".AllInOneActivity"

    def __init__(self, ui: UiDevice) -> None:
        super().__init__(ui)
        self.page = "agenda"

    def events(self) -> list[dict[str, Any]]:
        """Saved events by start; a fresh phone has two upcoming sample events (relative to today)."""
        return sorted(self.load("events", self._samples()), key=lambda e: e["when"])

    def _samples(self) -> list[dict[str, Any]]:
        today = self.ui.now().date()
        return [
            {"id": "e-default-1", "title": "项目周会", "when": f"{today + timedelta(days=1):%Y-%m-%d} 10:00"},
            {"id": "e-default-2", "title": "和朋友吃饭", "when": f"{today + timedelta(days=3):%Y-%m-%d} 19:30"},
        ]

    def back(self) -> bool:
        if self.page == "edit":
            self.page, self.focus = "agenda", None
            return True
        return False

    def new_event(self) -> None:
        self.page, self.fields, self.focus = "edit", {"title": "", "when": ""}, "title"

    def save_event(self) -> None:
        when = parse_when(self.fields.get("when", ""))
        title = self.fields.get("title", "").strip()
        if when is None or not title:
            self.ui.toast("请输入标题和时间(例如 2026-12-03 09:30)")
            return
        events = self.events()
        events.append({"id": uuid.uuid4().hex[:12], "title": title, "when": when})
        self.save("events", events)
        self.page, self.focus = "agenda", None
        self.ui.toast("已保存活动")

    def current_activity(self) -> str:
        return self.package + (".EditEventActivity" if self.page == "edit" else self.activity)

    def view(self, frame: Frame) -> list[Node]:
        if self.page == "edit":
            nodes = title_bar(self, frame, "新建活动", self.back)
            nodes.append(self.edit(frame.take(64), "title", "标题", rid=self.rid("title_input")))
            nodes.append(self.edit(frame.take(64), "when", "时间 (YYYY-MM-DD HH:MM)", rid=self.rid("when")))
            frame.take(16)
            nodes.append(button(frame.take(64), "保存", self.save_event, rid=self.rid("save")))
            return nodes
        nodes = title_bar(self, frame, "日历")
        nodes.append(label(frame.take(48), self.ui.now().strftime("今天 %Y年%m月%d日"), rid=self.rid("today")))
        fab_row = frame.take_bottom(88)
        events = self.events()
        if events:
            nodes.append(scroll_list(self, "events", frame.rest(), [self._item(e) for e in events],
                                     rid=self.rid("agenda_list")))
        else:
            nodes.append(label(frame.take(64), "没有活动", rid=self.rid("empty")))
        left, top, right, bottom = fab_row
        fab = (right - self.ui.dp(88), top + self.ui.dp(12), right - self.ui.dp(24), bottom - self.ui.dp(12))
        nodes.append(image_button(fab, "新建活动", self.new_event, rid=self.rid("floating_action_button")))
        return nodes

    def _item(self, event: dict[str, Any]) -> ListItem:
        def build(bounds: Bounds) -> Node:
            inner = (bounds[0] + self.ui.dp(16), bounds[1], bounds[2], bounds[3])
            when = event["when"] if " " in event["when"] else f"{event['when']} 全天"
            return row(bounds, [label(inner, f"{when}  {event['title']}", rid=self.rid("event_title"))],
                       None, rid=self.rid("agenda_item"))

        return ListItem(64, build)
