"""The scripted policy: a fixed tool-call sequence per task that reads snapshots (refs found by role
and name) — no model. It is the infrastructure baseline and what `--smoke` tests without a model."""

from __future__ import annotations

import re
from collections.abc import Callable

from pydantic import JsonValue

from web_bench import snapshot
from web_bench.browser.contract import ToolResult
from web_bench.site.catalog import TaskInstance
from web_bench.turn import PolicyResult, Turn

_MONEY = re.compile(r"\$[\d,]+\.\d{2}")


class ScriptFailed(Exception):
    """A step of the script could not be carried out."""


class _Steps:
    def __init__(self, turn: Turn) -> None:
        self.turn = turn
        self.page = ""

    def tool(self, name: str, **arguments: JsonValue) -> ToolResult:
        if self.turn.expired():
            raise TimeoutError
        result = self.turn.call_tool(name, arguments)
        if result.is_error:
            raise ScriptFailed(result.text)
        if name != "browser_take_screenshot":
            self.page = result.text
        return result

    def ref(self, role: str, name: str, *, prefix: bool = False) -> str:
        try:
            node = snapshot.find(self.page, role, name, prefix=prefix)
        except LookupError as exc:
            raise ScriptFailed(str(exc)) from None
        assert node.ref is not None
        return node.ref

    def click(self, role: str, name: str, *, prefix: bool = False) -> None:
        self.tool("browser_click", element=f"{role} {name}", ref=self.ref(role, name, prefix=prefix))


def _order_lookup(s: _Steps, inst: TaskInstance, url: str) -> str:
    s.tool("browser_navigate", url=url)
    s.click("link", f"View order {inst.target}")
    after = s.page.split("Order total", 1)
    found = _MONEY.search(after[1]) if len(after) == 2 else None
    if found is None:
        raise ScriptFailed("no order total on the order page")
    return f"The total amount of order {inst.target} is {found.group(0)}."


def _notification_toggle(s: _Steps, inst: TaskInstance, url: str) -> str:
    s.tool("browser_navigate", url=url)
    if not snapshot.find(s.page, "checkbox", inst.target).checked:
        s.click("checkbox", inst.target)
    s.click("button", "Save preferences")
    return f'"{inst.target}" notifications are on and saved.'


def _contact_form(s: _Steps, inst: TaskInstance, url: str) -> str:
    fields = dict(re.findall(r'(Name|Email|Message): "([^"]*)"', inst.goal))
    s.tool("browser_navigate", url=url)
    for label in ("Name", "Email", "Message"):
        s.tool("browser_type", element=label, ref=s.ref("textbox", label), text=fields[label])
    s.click("button", "Send message")
    return "The message was sent."


def _inventory_filter(s: _Steps, inst: TaskInstance, url: str) -> str:
    s.tool("browser_navigate", url=url)
    s.tool("browser_select_option", element="Category", ref=s.ref("combobox", "Category"), values=[inst.target])
    s.click("button", "Apply filter")
    nodes = snapshot.parse(s.page)
    for i, node in enumerate(nodes):
        if node.role == "cell" and node.name.startswith("In stock"):
            cells = [n for n in nodes[max(i - 3, 0) : i] if n.role == "cell"]
            if len(cells) == 3:
                return f"The only product in stock is {cells[1].name}."
    raise ScriptFailed("no in-stock product in the filtered list")


def _cart_checkout(s: _Steps, inst: TaskInstance, url: str) -> str:
    s.tool("browser_navigate", url=url)
    s.click("button", f"Add {inst.target} to cart")
    s.click("link", "Cart", prefix=True)
    s.tool("browser_type", element="quantity", ref=s.ref("spinbutton", f"Quantity for {inst.target}"),
           text=str(inst.quantity))
    s.click("button", "Update cart")
    s.click("button", "Checkout")
    return f"Ordered {inst.quantity} × {inst.target}."


def _lazy_load(s: _Steps, inst: TaskInstance, url: str) -> str:
    s.tool("browser_navigate", url=url)
    s.click("button", "Load more")
    s.tool("browser_wait_for", text=inst.target)
    heading = snapshot.find(s.page, "heading", inst.target)
    nodes = snapshot.parse(s.page)
    start = nodes.index(heading)
    for node in nodes[start + 1 : start + 4]:
        code = re.search(r"Access code: (\S+)", node.value)
        if code:
            return f"The access code of {inst.target} is {code.group(1)}."
    raise ScriptFailed(f"no access code under {inst.target!r}")


SCRIPTS: dict[str, Callable[[_Steps, TaskInstance, str], str]] = {
    "order_lookup": _order_lookup,
    "notification_toggle": _notification_toggle,
    "contact_form": _contact_form,
    "inventory_filter": _inventory_filter,
    "cart_checkout": _cart_checkout,
    "lazy_load": _lazy_load,
}


class ScriptedPolicy:
    """Deterministic per-task tool-call sequences."""

    name = "scripted"

    def run(self, instance: TaskInstance, prompt: str, turn: Turn) -> PolicyResult:
        """Run the task's script against the start URL named in the prompt."""
        url = prompt.rsplit("Start at ", 1)[-1].strip()
        steps = _Steps(turn)
        try:
            answer = SCRIPTS[instance.task](steps, instance, url)
        except TimeoutError:
            return PolicyResult(status="timeout", error="time limit reached")
        except (ScriptFailed, LookupError) as exc:
            turn.event("assistant/text")
            return PolicyResult(status="completed", answer=None, error=f"script: {exc}")
        turn.event("assistant/text")
        return PolicyResult(status="completed", answer=answer)
