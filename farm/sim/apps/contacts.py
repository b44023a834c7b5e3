"""Contacts: a list, a detail page and a new-contact editor (name, phone, save)."""

from __future__ import annotations

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
    modal,
    row,
    scroll_list,
    split_h,
    title_bar,
)

if TYPE_CHECKING:
    from farm.sim.ui import UiDevice

DEFAULT_CONTACTS = [
    {"id": "c-1", "name": "王芳", "phone": "138 0013 8000"},
    {"id": "c-2", "name": "李娜", "phone": "139 0139 0000"},
    {"id": "c-3", "name": "张伟", "phone": "137 0000 1234"},
]


class ContactsApp(App):
    """List (sorted by name) → detail; the floating button 新建联系人 opens the editor."""

    package = "com.android.contacts"
    activity = ".activities.PeopleActivity"

    def __init__(self, ui: UiDevice) -> None:
        super().__init__(ui)
        self.page = "list"
        self.shown: str | None = None
        self.confirm_delete = False

    def contacts(self) -> list[dict[str, Any]]:
        """Saved contacts sorted by name."""
        return sorted(self.load("contacts", DEFAULT_CONTACTS), key=lambda c: c["name"])

    def current_activity(self) -> str:
        return self.package + {"edit": ".activities.ContactEditorActivity",
                               "detail": ".quickcontact.QuickContactActivity"}.get(self.page, self.activity)

    def back(self) -> bool:
        if self.confirm_delete:
            self.confirm_delete = False
            return True
        if self.page != "list":
            self.page, self.focus = "list", None
            return True
        return False

    def new_contact(self) -> None:
        self.page, self.fields, self.focus = "edit", {"name": "", "phone": ""}, "name"

    def save_contact(self) -> None:
        name, phone = self.fields.get("name", "").strip(), self.fields.get("phone", "").strip()
        if not name and not phone:
            self.ui.toast("联系人信息为空,未保存")
            return
        contacts = self.contacts()
        new = {"id": uuid.uuid4().hex[:12], "name": name, "phone": phone}
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
        self.save("contacts", [c for c in self.contacts() if c["id"] != self.shown])
        self.page, self.shown, self.confirm_delete = "list", None, False
        self.ui.toast("已删除联系人")

    def view(self, frame: Frame) -> list[Node]:
        if self.page == "edit":
            nodes = title_bar(self, frame, "新建联系人", self.back)
            nodes.append(self.edit(frame.take(64), "name", "姓名", rid=self.rid("name")))
            nodes.append(self.edit(frame.take(64), "phone", "电话", rid=self.rid("phone")))
            frame.take(16)
            nodes.append(button(frame.take(64), "保存", self.save_contact, rid=self.rid("editor_menu_save_button")))
            return nodes
        if self.page == "detail":
            contact = next((c for c in self.contacts() if c["id"] == self.shown), None)
            nodes = title_bar(self, frame, "联系人详情", self.back)
            if contact is not None:
                nodes.append(label(frame.take(72), contact["name"], rid=self.rid("large_title")))
                nodes.append(label(frame.take(56), contact["phone"], rid=self.rid("header")))
                nodes.append(button(frame.take_bottom(64), "删除", self.ask_delete, rid=self.rid("menu_delete")))
            if contact is not None and self.confirm_delete:
                box = Frame((self.ui.dp(24), self.ui.dp(320), self.ui.width - self.ui.dp(24), self.ui.dp(500)),
                            self.density)
                bounds = box.rest()
                kids = [label(box.take(64), f"要删除“{contact['name']}”吗?", rid="android:id/message")]
                cancel, ok = split_h(box.take(64), [1, 1])
                kids += [button(cancel, "取消", self.cancel_delete, rid="android:id/button2"),
                         button(ok, "删除", self.delete_contact, rid="android:id/button1")]
                nodes.append(modal(self, bounds, kids, rid="android:id/parentPanel"))
            return nodes
        nodes = title_bar(self, frame, "通讯录")
        fab_row = frame.take_bottom(88)
        nodes.append(scroll_list(self, "contacts", frame.rest(), [self._item(c) for c in self.contacts()],
                                 rid=self.rid("list")))
        left, top, right, bottom = fab_row
        fab = (right - self.ui.dp(88), top + self.ui.dp(12), right - self.ui.dp(24), bottom - self.ui.dp(12))
        nodes.append(image_button(fab, "新建联系人", self.new_contact, rid=self.rid("floating_action_button")))
        return nodes

    def _item(self, contact: dict[str, Any]) -> ListItem:
        def build(bounds: Bounds) -> Node:
            left, top, right, bottom = bounds
            inner = (left + self.ui.dp(16), top, right, bottom)
            return row(bounds, [label(inner, contact["name"], rid=self.rid("cliv_name_textview"))],
                       lambda: self.show(contact["id"]), rid=self.rid("contact_item"), desc=contact["name"])

        return ListItem(64, build)
