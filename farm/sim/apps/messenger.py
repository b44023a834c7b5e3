"""Messenger (`dev.agentfarm.messenger`): conversations, compose, and a confirmation card before sending."""

from __future__ import annotations

import time
from typing import Any

from farm.sim.apps.base import App, Bounds, Frame, ListItem, Node, button, label, scroll_list, split_h, title_bar
from farm.sim.apps.forms import Dialog, two_line_row

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
    chat: str | None = None
    pending: str | None = None

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
        self.chat = conv
        self.start_form("input")

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
        last = msgs[-1]["text"] if msgs else ""
        return ListItem(80, lambda b: two_line_row(self, b, (conv["name"], "conv_name"), (last, "conv_last"),
                                                   lambda: self.open_chat(conv["id"]), rid="conversation",
                                                   desc=conv["name"]))

    def _msg_item(self, msg: dict[str, Any]) -> ListItem:
        def build(bounds: Bounds) -> Node:
            left, top, right, bottom = bounds
            pad = self.ui.dp(16)
            b = (left + pad * 4, top, right - pad, bottom) if msg["from"] == "me" else (left + pad, top,
                                                                                        right - pad * 4, bottom)
            return label(b, msg["text"], rid=self.rid("msg_text"), desc="我" if msg["from"] == "me" else "")

        return ListItem(64, build)

    def _card(self) -> Node:
        top = self.ui.dp(300)
        card = Dialog(self, top, top + self.ui.dp(300))
        card.text(56, "发送前请确认", "confirm_title")
        card.text(48, "操作:发送消息", "confirm_action")
        card.text(48, f"对象:{self.name(self.chat)}", "confirm_target")
        card.text(72, f"内容:{self.pending}", "confirm_content")
        return card.close(self.cancel, "确认发送", self.confirm, rid="confirm_card", cancel_rid="confirm_cancel",
                          ok_rid="confirm_ok")
