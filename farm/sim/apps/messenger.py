"""Messenger (`dev.agentfarm.messenger`): conversations, compose, and a confirmation card before sending."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from farm.sim.apps.base import (
    App,
    Bounds,
    Frame,
    ListItem,
    Node,
    button,
    label,
    modal,
    row,
    scroll_list,
    split_h,
    title_bar,
)

if TYPE_CHECKING:
    from farm.sim.ui import UiDevice

CONVERSATIONS = [
    {"id": "filehelper", "name": "文件传输助手"},
    {"id": "zhangsan", "name": "张三"},
    {"id": "lisi", "name": "李四"},
    {"id": "team", "name": "项目群"},
]
DEFAULT_MESSAGES: dict[str, list[dict[str, Any]]] = {
    "filehelper": [],
    "zhangsan": [{"from": "them", "text": "明天下午三点开会,别忘了", "time": 0}],
    "lisi": [{"from": "them", "text": "周末一起吃饭吗?", "time": 0}],
    "team": [{"from": "them", "text": "周报请在周五前提交", "time": 0}],
}


class MessengerApp(App):
    """List → chat. 发送 first shows a card (操作 / 对象 / 内容); only 确认发送 really sends."""

    package = "dev.agentfarm.messenger"
    activity = ".MainActivity"

    def __init__(self, ui: UiDevice) -> None:
        super().__init__(ui)
        self.chat: str | None = None
        self.pending: str | None = None

    def messages(self) -> dict[str, list[dict[str, Any]]]:
        """Every conversation's messages, oldest first."""
        stored = self.load("messages", DEFAULT_MESSAGES)
        return {c["id"]: list(stored.get(c["id"], [])) for c in CONVERSATIONS}

    def name(self, conv: str | None) -> str:
        return next((c["name"] for c in CONVERSATIONS if c["id"] == conv), "")

    def current_activity(self) -> str:
        return self.package + (".ChatActivity" if self.chat else self.activity)

    def back(self) -> bool:
        if self.pending is not None:
            self.pending = None
            return True
        if self.chat is not None:
            self.chat, self.focus = None, None
            return True
        return False

    def open_chat(self, conv: str) -> None:
        self.chat, self.fields, self.focus = conv, {"input": ""}, "input"

    def press_send(self) -> None:
        text = self.fields.get("input", "").strip()
        if text:
            self.pending = text

    def confirm(self) -> None:
        if self.pending is None or self.chat is None:
            return
        all_msgs = self.messages()
        all_msgs[self.chat].append({"from": "me", "text": self.pending, "time": int(time.time())})
        self.save("messages", all_msgs)
        self.pending = None
        self.fields["input"] = ""
        self.ui.toast("已发送")

    def cancel(self) -> None:
        self.pending = None

    def enter(self) -> None:
        self.press_send()

    def view(self, frame: Frame) -> list[Node]:
        if self.chat is None:
            nodes = title_bar(self, frame, "消息")
            msgs = self.messages()
            items = [self._conv_item(c, msgs[c["id"]]) for c in CONVERSATIONS]
            nodes.append(scroll_list(self, "convs", frame.rest(), items, rid=self.rid("conversation_list")))
            return nodes
        nodes = title_bar(self, frame, self.name(self.chat), self.leave_chat)
        input_b, send_b = split_h(frame.take_bottom(72), [4, 1])
        items = [self._msg_item(m) for m in self.messages()[self.chat]]
        nodes.append(scroll_list(self, "msgs", frame.rest(), items, rid=self.rid("message_list")))
        nodes.append(self.edit(input_b, "input", "输入消息", rid=self.rid("input")))
        nodes.append(button(send_b, "发送", self.press_send, rid=self.rid("send")))
        if self.pending is not None:
            nodes.append(self._card())
        return nodes

    def leave_chat(self) -> None:
        self.chat, self.pending, self.focus = None, None, None

    def _conv_item(self, conv: dict[str, str], msgs: list[dict[str, Any]]) -> ListItem:
        def build(bounds: Bounds) -> Node:
            left, top, right, bottom = bounds
            pad, mid = self.ui.dp(16), top + (bottom - top) // 2
            last = msgs[-1]["text"] if msgs else ""
            kids = [label((left + pad, top, right - pad, mid), conv["name"], rid=self.rid("conv_name")),
                    label((left + pad, mid, right - pad, bottom), last, rid=self.rid("conv_last"))]
            return row(bounds, kids, lambda: self.open_chat(conv["id"]), rid=self.rid("conversation"),
                       desc=conv["name"])

        return ListItem(80, build)

    def _msg_item(self, msg: dict[str, Any]) -> ListItem:
        def build(bounds: Bounds) -> Node:
            left, top, right, bottom = bounds
            pad = self.ui.dp(16)
            b = (left + pad * 4, top, right - pad, bottom) if msg["from"] == "me" else (left + pad, top,
                                                                                        right - pad * 4, bottom)
            return label(b, msg["text"], rid=self.rid("msg_text"), desc="我" if msg["from"] == "me" else "")

        return ListItem(64, build)

    def _card(self) -> Node:
        w = self.phone.profile.screen.width
        top = self.ui.dp(300)
        box = Frame((self.ui.dp(24), top, w - self.ui.dp(24), top + self.ui.dp(300)), self.density)
        bounds = box.rest()
        kids = [
            label(box.take(56), "发送前请确认", rid=self.rid("confirm_title")),
            label(box.take(48), "操作:发送消息", rid=self.rid("confirm_action")),
            label(box.take(48), f"对象:{self.name(self.chat)}", rid=self.rid("confirm_target")),
            label(box.take(72), f"内容:{self.pending}", rid=self.rid("confirm_content")),
        ]
        cancel_b, ok_b = split_h(box.take(64), [1, 1])
        kids.append(button(cancel_b, "取消", self.cancel, rid=self.rid("confirm_cancel")))
        kids.append(button(ok_b, "确认发送", self.confirm, rid=self.rid("confirm_ok")))
        return modal(self, bounds, kids, rid=self.rid("confirm_card"))
