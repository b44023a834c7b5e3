"""Notes (`dev.agentfarm.notes`): a list showing each note's title and full text, an editor, delete.

Notes are text files in shared storage (`notes_store`): the app and the shell read the same files."""

from __future__ import annotations

from typing import Any

from farm.sim.apps.base import App, Frame, ListItem, Node, button, by_id, split_h, title_bar
from farm.sim.apps.forms import Fab, list_screen, two_line_row
from farm.sim.apps.notes_store import saved_notes, store_note, trash_note


class NotesApp(App):
    """List (newest first) → editor with a title and a body; the list shows both in full."""

    package = "dev.agentfarm.notes"
    activity = ".MainActivity"
    activities = {"edit": ".EditNoteActivity"}
    page = "list"
    editing: str | None = None

    def notes(self) -> list[dict[str, Any]]:
        """Saved notes, newest first (files in shared storage: `notes_store`)."""
        return saved_notes(self.phone)

    def back(self) -> bool:
        if self.page == "edit":
            self.close_editor()
            return True
        return False

    def new_note(self) -> None:
        self.page, self.editing = "edit", None
        self.start_form("title", "body")

    def open_note(self, note_id: str) -> None:
        note = by_id(self.notes(), note_id)
        if note is not None:
            self.page, self.editing = "edit", note_id
            self.fields = {"title": note["title"], "body": note["text"]}
            self.focus = "body"

    def save_note(self) -> None:
        title, text = self.fields.get("title", "").strip(), self.fields.get("body", "").strip()
        if not title and not text:
            self.ui.toast("笔记内容为空")
            return
        store_note(self.phone, self.editing, title, text)
        self.close_editor()
        self.ui.toast("已保存")

    def delete_note(self) -> None:
        if self.editing is not None:
            trash_note(self.phone, self.editing)
        self.close_editor()
        self.ui.toast("已移到最近删除")

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
        return list_screen(self, frame, title_bar(self, frame, "笔记"), "notes", [self._item(n) for n in self.notes()],
                           "note_list", empty="还没有笔记", fab=Fab("新建笔记", self.new_note, "new_note"))

    def _item(self, note: dict[str, Any]) -> ListItem:
        lines = max(1, min(4, note["text"].count("\n") + 1 + len(note["text"]) // 24))
        return ListItem(40 + 24 * lines, lambda b: two_line_row(
            self, b, (note["title"], "note_title"), (note["text"], "note_text"), lambda: self.open_note(note["id"]),
            rid="note_item", upper_dp=32))
