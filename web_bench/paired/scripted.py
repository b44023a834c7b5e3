"""The scripted policy: a fixed tool-call sequence per task that reads snapshots (refs found by role
and name) — no model. It is the infrastructure baseline and what `--smoke` tests without a model.

Each task's script is a generator: it yields one browser tool call at a time and is sent the page text
(the latest snapshot) that call gave back, and returns the final answer. `ScriptedPolicy` drives it as a
`farm.llm.loop.Policy`: one call per step."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Generator, Sequence

from pydantic import JsonValue

from farm.llm.loop import Feedback, LoopHalt, LoopHooks, Step
from farm.llm.types import ToolCall
from web_bench.paired import snapshot
from web_bench.paired.site.catalog import TaskInstance
from web_bench.paired.turn import GAVE_UP, WebBrief

_MONEY = re.compile(r"\$[\d,]+\.\d{2}")

Call = tuple[str, dict[str, JsonValue]]
"""A browser tool name and its arguments."""
Script = Generator[Call, str, str]
"""Yields calls; is sent the page text after each; returns the answer."""


class ScriptFailed(Exception):
    """A step of the script could not be carried out."""


def _ref(page: str, role: str, name: str, *, prefix: bool = False) -> str:
    try:
        node = snapshot.find(page, role, name, prefix=prefix)
    except LookupError as exc:
        raise ScriptFailed(str(exc)) from None
    assert node.ref is not None
    return node.ref


def _click(page: str, role: str, name: str, *, prefix: bool = False) -> Call:
    return "browser_click", {"element": f"{role} {name}", "ref": _ref(page, role, name, prefix=prefix)}


def _navigate(url: str) -> Call:
    return "browser_navigate", {"url": url}


def _order_lookup(inst: TaskInstance, url: str) -> Script:
    page = yield _navigate(url)
    page = yield _click(page, "link", f"View order {inst.target}")
    after = page.split("Order total", 1)
    found = _MONEY.search(after[1]) if len(after) == 2 else None
    if found is None:
        raise ScriptFailed("no order total on the order page")
    return f"The total amount of order {inst.target} is {found.group(0)}."


def _notification_toggle(inst: TaskInstance, url: str) -> Script:
    page = yield _navigate(url)
    if not snapshot.find(page, "checkbox", inst.target).checked:
        page = yield _click(page, "checkbox", inst.target)
    page = yield _click(page, "button", "Save preferences")
    return f'"{inst.target}" notifications are on and saved.'


def _contact_form(inst: TaskInstance, url: str) -> Script:
    fields = dict(re.findall(r'(Name|Email|Message): "([^"]*)"', inst.goal))
    page = yield _navigate(url)
    for label in ("Name", "Email", "Message"):
        page = yield "browser_type", {"element": label, "ref": _ref(page, "textbox", label), "text": fields[label]}
    page = yield _click(page, "button", "Send message")
    return "The message was sent."


def _inventory_filter(inst: TaskInstance, url: str) -> Script:
    page = yield _navigate(url)
    page = yield "browser_select_option", {
        "element": "Category", "ref": _ref(page, "combobox", "Category"), "values": [inst.target],
    }
    page = yield _click(page, "button", "Apply filter")
    nodes = snapshot.parse(page)
    for i, node in enumerate(nodes):
        if node.role == "cell" and node.name.startswith("In stock"):
            cells = [n for n in nodes[max(i - 3, 0) : i] if n.role == "cell"]
            if len(cells) == 3:
                return f"The only product in stock is {cells[1].name}."
    raise ScriptFailed("no in-stock product in the filtered list")


def _cart_checkout(inst: TaskInstance, url: str) -> Script:
    page = yield _navigate(url)
    page = yield _click(page, "button", f"Add {inst.target} to cart")
    page = yield _click(page, "link", "Cart", prefix=True)
    page = yield "browser_type", {
        "element": "quantity", "ref": _ref(page, "spinbutton", f"Quantity for {inst.target}"),
        "text": str(inst.quantity),
    }
    page = yield _click(page, "button", "Update cart")
    page = yield _click(page, "button", "Checkout")
    return f"Ordered {inst.quantity} × {inst.target}."


def _lazy_load(inst: TaskInstance, url: str) -> Script:
    page = yield _navigate(url)
    page = yield _click(page, "button", "Load more")
    page = yield "browser_wait_for", {"text": inst.target}
    heading = snapshot.find(page, "heading", inst.target)
    nodes = snapshot.parse(page)
    start = nodes.index(heading)
    for node in nodes[start + 1 : start + 4]:
        code = re.search(r"Access code: (\S+)", node.value)
        if code:
            return f"The access code of {inst.target} is {code.group(1)}."
    raise ScriptFailed(f"no access code under {inst.target!r}")


SCRIPTS: dict[str, Callable[[TaskInstance, str], Script]] = {
    "order_lookup": _order_lookup,
    "notification_toggle": _notification_toggle,
    "contact_form": _contact_form,
    "inventory_filter": _inventory_filter,
    "cart_checkout": _cart_checkout,
    "lazy_load": _lazy_load,
}


class ScriptedPolicy:
    """Deterministic per-task tool-call sequences, one call per step. A failed tool call or a step the page
    does not allow ends the turn without an answer (`LoopHalt` with reason `GAVE_UP`, detail `script: …`)."""

    name = "scripted"

    def __init__(self, scripts: dict[str, Callable[[TaskInstance, str], Script]] | None = None) -> None:
        self.scripts = SCRIPTS if scripts is None else scripts
        self._script: Script | None = None
        self._page = ""

    def begin(self, brief: WebBrief, hooks: LoopHooks) -> None:
        """Start the task's script at the start URL named in the prompt."""
        self._script = self.scripts[brief.instance.task](brief.instance, brief.start_url)
        self._page = ""

    def step(self, step: int, feedback: Sequence[Feedback]) -> Step:
        """Send the last call's page to the script; its next call, or its answer when it returns."""
        if self._script is None:
            raise RuntimeError("ScriptedPolicy.step before begin")
        try:
            if not feedback:
                name, arguments = next(self._script)
            else:
                name, arguments = self._script.send(self._read(feedback[-1]))
        except StopIteration as done:
            return Step(text=done.value)
        except (ScriptFailed, LookupError) as exc:
            raise LoopHalt(GAVE_UP, f"script: {exc}") from None
        return Step(calls=[ToolCall(id=f"s{step}", name=name, arguments_json=json.dumps(arguments))])

    def _read(self, last: Feedback) -> str:
        """The page the script reads next: a screenshot leaves the latest snapshot; a failed call stops it."""
        if last.output.is_error:
            raise ScriptFailed(last.output.text)
        if last.call is None or last.call.name != "browser_take_screenshot":
            self._page = last.output.text
        return self._page
