"""Calendar: today's date, a list of events and an editor (title, time, save)."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from farm.sim.apps.base import (
    App,
    Frame,
    ListItem,
    Node,
    label,
    load_json,
    new_id,
    next_rowid,
    save_json,
    title_bar,
    with_rowids,
)
from farm.sim.apps.forms import Fab, Field, editor_page, line_row, list_screen

if TYPE_CHECKING:
    from farm.sim.phone import PhoneState

PACKAGE = "com.android.calendar"

_WHEN = re.compile(r"^\s*(\d{4})-(\d{1,2})-(\d{1,2})(?:\s+(\d{1,2})[:：](\d{2}))?\s*$")


def sample_events(phone: PhoneState) -> list[dict[str, Any]]:
    """The two upcoming events of a fresh phone, relative to its today."""
    today = phone.now().date()
    return [
        {"id": "e-default-1", "rowid": 1, "title": "项目周会", "when": f"{today + timedelta(days=1):%Y-%m-%d} 10:00"},
        {"id": "e-default-2", "rowid": 2, "title": "和朋友吃饭", "when": f"{today + timedelta(days=3):%Y-%m-%d} 19:30"},
    ]


def saved_events(phone: PhoneState) -> list[dict[str, Any]]:
    """The calendar's events on `phone` by start: what the agenda lists and what the calendar provider returns.

    Each is `{"id", "rowid", "title", "when"}`; `when` is `YYYY-MM-DD HH:MM` (local time) or `YYYY-MM-DD` (all
    day); `rowid` is the event's `_id` in `content query`."""
    return sorted(with_rowids(load_json(phone, PACKAGE, "events", sample_events(phone))), key=lambda e: e["when"])


def store_events(phone: PhoneState, events: list[dict[str, Any]]) -> None:
    """Replace the calendar's events on `phone`."""
    save_json(phone, PACKAGE, "events", events)


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

    package = PACKAGE
    activity = ".AllInOneActivity"
    activities = {"edit": ".EditEventActivity"}
    page = "agenda"

    def events(self) -> list[dict[str, Any]]:
        """Saved events by start; a fresh phone has two upcoming sample events (relative to today)."""
        return saved_events(self.phone)

    def back(self) -> bool:
        if self.page == "edit":
            self.page, self.focus = "agenda", None
            return True
        return False

    def new_event(self) -> None:
        self.page = "edit"
        self.start_form("title", "when")

    def save_event(self) -> None:
        when = parse_when(self.fields.get("when", ""))
        title = self.fields.get("title", "").strip()
        if when is None or not title:
            self.ui.toast("请输入标题和时间(例如 2026-12-03 09:30)")
            return
        events = self.events()
        events.append({"id": new_id(), "rowid": next_rowid(events), "title": title, "when": when})
        store_events(self.phone, events)
        self.page, self.focus = "agenda", None
        self.ui.toast("已保存活动")

    def view(self, frame: Frame) -> list[Node]:
        if self.page == "edit":
            fields = [Field("title", "标题", "title_input"), Field("when", "时间 (YYYY-MM-DD HH:MM)", "when")]
            return editor_page(self, frame, "新建活动", self.back, fields, self.save_event)
        nodes = title_bar(self, frame, "日历")
        nodes.append(label(frame.take(48), self.ui.now().strftime("今天 %Y年%m月%d日"), rid=self.rid("today")))
        return list_screen(self, frame, nodes, "events", [self._item(e) for e in self.events()], "agenda_list",
                           empty="没有活动", fab=Fab("新建活动", self.new_event, "floating_action_button"))

    def _item(self, event: dict[str, Any]) -> ListItem:
        when = event["when"] if " " in event["when"] else f"{event['when']} 全天"
        return ListItem(64, lambda b: line_row(self, b, f"{when}  {event['title']}", "event_title", None,
                                               "agenda_item"))
