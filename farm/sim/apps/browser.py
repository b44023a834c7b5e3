"""Browser (`dev.agentfarm.browser`): a URL bar and pages that say there is no network."""

from __future__ import annotations

from typing import TYPE_CHECKING

from farm.sim.apps.base import App, Frame, Node, button, label, split_h

if TYPE_CHECKING:
    from farm.sim.ui import UiDevice

HOME = "about:newtab"


class BrowserApp(App):
    """Type a URL into `url_bar` and press ENTER or 前往; the phone has no internet."""

    package = "dev.agentfarm.browser"
    activity = ".BrowserActivity"

    def __init__(self, ui: UiDevice) -> None:
        super().__init__(ui)
        self.history: list[str] = [HOME]
        self.fields = {"url": ""}

    @property
    def url(self) -> str:
        return self.history[-1]

    def back(self) -> bool:
        if self.focus == "url":
            self.focus = None
            return True
        if len(self.history) > 1:
            self.history.pop()
            self.fields["url"] = "" if self.url == HOME else self.url
            return True
        return False

    def navigate(self) -> None:
        raw = self.fields.get("url", "").strip()
        if not raw:
            return
        url = raw if "://" in raw or raw.startswith("about:") else (
            f"https://{raw}" if "." in raw and " " not in raw else f"https://www.bing.com/search?q={raw}")
        self.history.append(url)
        self.fields["url"] = url
        self.focus = None

    def enter(self) -> None:
        self.navigate()

    def view(self, frame: Frame) -> list[Node]:
        bar_b, go_b = split_h(frame.take(64), [5, 1])
        nodes = [self.edit(bar_b, "url", "搜索或输入网址", rid=self.rid("url_bar")),
                 button(go_b, "前往", self.navigate, rid=self.rid("go"))]
        if self.url == HOME:
            nodes.append(label(frame.take(64), "新标签页", rid=self.rid("page_title")))
        else:
            nodes.append(label(frame.take(64), "无法访问此网站", rid=self.rid("page_title")))
            nodes.append(label(frame.take(48), self.url, rid=self.rid("page_url")))
            nodes.append(label(frame.take(48), "ERR_INTERNET_DISCONNECTED", rid=self.rid("error_code")))
        return nodes
