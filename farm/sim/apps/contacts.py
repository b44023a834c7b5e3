"""Contacts: a list, a detail page and a new-contact editor (name, phone, save)."""

from __future__ import annotations

from typing import Any

from farm.sim.apps.base import App, Frame, ListItem, Node, button, by_id, label, new_id, title_bar, without
from farm.sim.apps.forms import Fab, Field, delete_dialog, editor_page, line_row, list_screen

DEFAULT_CONTACTS = [
    {"id": "c-1", "name": "王芳", "phone": "138 0013 8000"},
    {"id": "c-2", "name": "李娜", "phone": "139 0139 0000"},
    {"id": "c-3", "name": "张伟", "phone": "137 0000 1234"},
]


class ContactsApp(App):
    """List (sorted by name) → detail; the floating button 新建联系人 opens the editor."""

    package = "com.android.contacts"
    activity = ".activities.PeopleActivity"
    activities = {"edit": ".activities.ContactEditorActivity", "detail": ".quickcontact.QuickContactActivity"}
    page = "list"
    shown: str | None = None
    confirm_delete = False

    def contacts(self) -> list[dict[str, Any]]:
        """Saved contacts sorted by name."""
        return sorted(self.load("contacts", DEFAULT_CONTACTS), key=lambda c: c["name"])

    def back(self) -> bool:
        if self.confirm_delete:
            self.confirm_delete = False
            return True
        if self.page != "list":
            self.page, self.focus = "list", None
            return True
        return False

    def new_contact(self) -> None:
        self.page = "edit"
        self.start_form("name", "phone")

    def save_contact(self) -> None:
        name, phone = self.fields.get("name", "").strip(), self.fields.get("phone", "").strip()
        if not name and not phone:
            self.ui.toast("联系人信息为空,未保存")
            return
        contacts = self.contacts()
        new = {"id": new_id(), "name": name, "phone": phone}
        contacts.append(new)
        self.save("contacts", contacts)
        self.page, self.shown, self.focus = "detail", new["id"], None
        self.ui.toast("已保存联系人")

    def show(self, contact_id: str) -> None:
        self.page, self.shown = "detail", contact_id

    def ask_delete(self) -> None:
        self.confirm_delete = True

    def cancel_delete(self) -> None:
        self.confirm_delete = False

    def delete_contact(self) -> None:
        self.save("contacts", without(self.contacts(), self.shown))
        self.page, self.shown, self.confirm_delete = "list", None, False
        self.ui.toast("已删除联系人")

    def view(self, frame: Frame) -> list[Node]:
        if self.page == "edit":
            fields = [Field("name", "姓名", "name"), Field("phone", "电话", "phone")]
            return editor_page(self, frame, "新建联系人", self.back, fields, self.save_contact,
                               save_rid="editor_menu_save_button")
        if self.page == "detail":
            return self._detail(frame)
        return list_screen(self, frame, title_bar(self, frame, "通讯录"), "contacts",
                           [self._item(c) for c in self.contacts()], "list",
                           fab=Fab("新建联系人", self.new_contact, "floating_action_button"))

    def _detail(self, frame: Frame) -> list[Node]:
        contact = by_id(self.contacts(), self.shown)
        nodes = title_bar(self, frame, "联系人详情", self.back)
        if contact is not None:
            nodes.append(label(frame.take(72), contact["name"], rid=self.rid("large_title")))
            nodes.append(label(frame.take(56), contact["phone"], rid=self.rid("header")))
            nodes.append(button(frame.take_bottom(64), "删除", self.ask_delete, rid=self.rid("menu_delete")))
            if self.confirm_delete:
                nodes.append(delete_dialog(self, self.ui.dp(320), self.ui.dp(500), contact["name"],
                                           self.cancel_delete, self.delete_contact))
        return nodes

    def _item(self, contact: dict[str, Any]) -> ListItem:
        return ListItem(64, lambda b: line_row(self, b, contact["name"], "cliv_name_textview",
                                               lambda: self.show(contact["id"]), "contact_item", desc=contact["name"]))
