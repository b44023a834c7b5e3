"""Contacts: a list, a detail page and a new-contact editor (name, phone, save)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from farm.sim.apps.base import (
    App,
    Frame,
    ListItem,
    Node,
    button,
    by_id,
    label,
    load_json,
    new_id,
    next_rowid,
    save_json,
    title_bar,
    with_rowids,
    without,
)
from farm.sim.apps.forms import Fab, Field, delete_dialog, editor_page, line_row, list_screen

if TYPE_CHECKING:
    from farm.sim.phone import PhoneState

PACKAGE = "com.android.contacts"
DEFAULT_CONTACTS = [
    {"id": "c-1", "rowid": 1, "name": "王芳", "phone": "138 0013 8000"},
    {"id": "c-2", "rowid": 2, "name": "李娜", "phone": "139 0139 0000"},
    {"id": "c-3", "rowid": 3, "name": "张伟", "phone": "137 0000 1234"},
]


def saved_contacts(phone: PhoneState) -> list[dict[str, Any]]:
    """The contacts on `phone`, sorted by name: what the app lists and what the contacts provider returns.

    Each is `{"id", "rowid", "name", "phone"}`; `rowid` is the contact's `_id` in `content query`."""
    return sorted(with_rowids(load_json(phone, PACKAGE, "contacts", DEFAULT_CONTACTS)), key=lambda c: c["name"])


def store_contacts(phone: PhoneState, contacts: list[dict[str, Any]]) -> None:
    """Replace the contacts on `phone`."""
    save_json(phone, PACKAGE, "contacts", contacts)


class ContactsApp(App):
    """List (sorted by name) → detail; the floating button 新建联系人 opens the editor."""

    package = PACKAGE
    activity = ".activities.PeopleActivity"
    activities = {"edit": ".activities.ContactEditorActivity", "detail": ".quickcontact.QuickContactActivity"}
    page = "list"
    shown: str | None = None
    confirm_delete = False

    def contacts(self) -> list[dict[str, Any]]:
        """Saved contacts sorted by name."""
        return saved_contacts(self.phone)

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
        contact_id = new_id()
        contacts.append({"id": contact_id, "rowid": next_rowid(contacts), "name": name, "phone": phone})
        store_contacts(self.phone, contacts)
        self.page, self.shown, self.focus = "detail", contact_id, None
        self.ui.toast("已保存联系人")

    def show(self, contact_id: str) -> None:
        self.page, self.shown = "detail", contact_id

    def ask_delete(self) -> None:
        self.confirm_delete = True

    def cancel_delete(self) -> None:
        self.confirm_delete = False

    def delete_contact(self) -> None:
        store_contacts(self.phone, without(self.contacts(), self.shown))
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
