"""Notes (`dev.agentfarm.notes`): a list showing each note's title and full text, an editor, delete."""

from __future__ import annotations

import time
import uuid
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
    split_h,
    title_bar,
)

if TYPE_CHECKING:
    from farm.sim.ui import UiDevice

DEFAULT_NOTES: list[dict[str, Any]] = [
    {"id": "n-default-2", "title": "会议纪要", "text": "周三讨论季度预算,下周一前提交方案", "updated": 0},
    {"id": "n-default-1", "title": "读书清单", "text": "《百年孤独》《活着》《三体》", "updated": 0},
]


class NotesApp(App):
    """List (newest first) → editor with a title and a body; the list shows both in full."""

    package = "dev.agentfarm.notes"
    activity = ".MainActivity"

    def __init__(self, ui: UiDevice) -> None:
        super().__init__(ui)
        self.page = "list"
        self.editing: str | None = None

    def notes(self) -> list[dict[str, Any]]:
        """Saved notes, newest first."""
        return [{"title": "", **n} for n in self.load("notes", DEFAULT_NOTES)]

    def current_activity(self) -> str:
        return self.package + (".EditNoteActivity" if self.page == "edit" else ".MainActivity")

    def back(self) -> bool:
        if self.page == "edit":
            self.close_editor()
            return True
        return False

    def new_note(self) -> None:
        self.page, self.editing = "edit", None
        self.fields = {"title": "", "body": ""}
        self.focus = "title"

    def open_note(self, note_id: str) -> None:
        note = next((n for n in self.notes() if n["id"] == note_id), None)
        if note is not None:
            self.page, self.editing = "edit", note_id
            self.fields = {"title": note["title"], "body": note["text"]}
            self.focus = "body"

    def save_note(self) -> None:
        title, text = self.fields.get("title", "").strip(), self.fields.get("body", "").strip()
        if not title and not text:
            self.ui.toast("笔记内容为空")
            return
        notes = [n for n in self.notes() if n["id"] != self.editing]
        notes.insert(0, {"id": self.editing or uuid.uuid4().hex[:12], "title": title, "text": text,
                         "updated": int(time.time())})
        self.save("notes", notes)
        self.close_editor()
        self.ui.toast("已保存")

    def delete_note(self) -> None:
        self.save("notes", [n for n in self.notes() if n["id"] != self.editing])
        self.close_editor()
        self.ui.toast("已删除")

    def close_editor(self) -> None:
        self.page, self.editing, self.focus = "list", None, None

    def view(self, frame: Frame) -> list[Node]:
        if self.page == "edit":
            nodes = title_bar(self, frame, "编辑笔记" if self.editing else "新建笔记", self.close_editor)
            actions = frame.take_bottom(72)
            nodes.append(self.edit(frame.take(64), "title", "标题", rid=self.rid("note_title_input")))
            nodes.append(self.edit(frame.rest(), "body", "输入笔记内容", rid=self.rid("note_body")))
            cols = split_h(actions, [1, 1] if self.editing else [1])
            nodes.append(button(cols[-1], "保存", self.save_note, rid=self.rid("save")))
            if self.editing:
                nodes.append(button(cols[0], "删除", self.delete_note, rid=self.rid("delete")))
            return nodes
        nodes = title_bar(self, frame, "笔记")
        fab_row = frame.take_bottom(88)
        notes = self.notes()
        if notes:
            nodes.append(scroll_list(self, "notes", frame.rest(), [self._item(n) for n in notes],
                                     rid=self.rid("note_list")))
        else:
            nodes.append(label(frame.take(64), "还没有笔记", rid=self.rid("empty")))
        left, top, right, bottom = fab_row
        fab = (right - self.ui.dp(88), top + self.ui.dp(12), right - self.ui.dp(24), bottom - self.ui.dp(12))
        nodes.append(image_button(fab, "新建笔记", self.new_note, rid=self.rid("new_note")))
        return nodes

    def _item(self, note: dict[str, Any]) -> ListItem:
        lines = max(1, min(4, note["text"].count("\n") + 1 + len(note["text"]) // 24))

        def build(bounds: Bounds) -> Node:
            pad = self.ui.dp(16)
            left, top, right, bottom = bounds
            split = top + self.ui.dp(32)
            kids = [label((left + pad, top, right - pad, split), note["title"], rid=self.rid("note_title")),
                    label((left + pad, split, right - pad, bottom), note["text"], rid=self.rid("note_text"))]
            return row(bounds, kids, lambda: self.open_note(note["id"]), rid=self.rid("note_item"))

        return ListItem(40 + 24 * lines, build)
