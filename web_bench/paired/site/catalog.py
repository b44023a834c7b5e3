"""The six tasks: prompts, expected outcomes and validators that read the state API.

`SUITE_VERSION` goes up whenever a prompt, a data generator or a validator changes; results of
different versions are never aggregated together. Version 2: inventory_filter no longer puts the
seed number into the target product's name (the seed still varies roots, SKUs, prices, order).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
from pathlib import Path
from typing import get_args

from pydantic import BaseModel, ConfigDict

from web_bench.paired.site import data
from web_bench.paired.site.state import SessionState, TaskName

SUITE_VERSION = 2
# SHA-256 over prompts, expected answers, generated data (seeds 1-5), templates and validator source.
# A test recomputes it: when it changes, raise SUITE_VERSION and record the new value here.
SUITE_FINGERPRINT = "3e6d6c637a22cd690153cc7026576c8d8232796f162b3ba26676186a2d7d7001"
TASK_NAMES: tuple[TaskName, ...] = get_args(TaskName)
# Tasks whose goal is a server-side state change; their stateReachedMs is measured.
STATEFUL_TASKS: frozenset[str] = frozenset(
    {"notification_toggle", "contact_form", "inventory_filter", "cart_checkout", "lazy_load"}
)
# The path under /s/<session>/ each task starts at.
START_PATHS: dict[str, str] = {
    "order_lookup": "orders",
    "notification_toggle": "settings/notifications",
    "contact_form": "contact",
    "inventory_filter": "inventory",
    "cart_checkout": "shop",
    "lazy_load": "releases",
}


class TaskInstance(BaseModel):
    """One task at one seed: what the model is asked and what counts as done."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task: TaskName
    """Task name."""
    seed: int
    """Data seed."""
    goal: str
    """The request, without the start URL."""
    target: str
    """The thing the task is about (order id, topic, product name, entry title…)."""
    expected_answer: str | None
    """Text the final answer must contain (None for tasks judged on state only)."""
    quantity: int | None = None
    """cart_checkout: units to buy."""

    def prompt(self, start_url: str) -> str:
        """The prompt the model gets for a run that starts at `start_url`."""
        return f"{self.goal}\n\nStart at {start_url}"


class Verdict(BaseModel):
    """A validator's decision."""

    model_config = ConfigDict(extra="forbid")

    passed: bool
    """Whether the run achieved the task."""
    state_ok: bool
    """Whether the server state satisfies the task (True for read-only tasks)."""
    answer_ok: bool
    """Whether the answer contains what it must (True when no answer is required)."""
    detail: str
    """What was checked and what was found."""


def make_instance(task: str, seed: int) -> TaskInstance:
    """The instance of `task` at `seed` (ValueError for an unknown task)."""
    if task == "order_lookup":
        orders, idx = data.orders(seed)
        order = orders[idx]
        return TaskInstance(
            task="order_lookup", seed=seed, target=order.order_id, expected_answer=data.money(order.total_cents),
            goal=f"Find order {order.order_id} in my order history and tell me its total amount.",
        )
    if task == "notification_toggle":
        _, topic = data.notification_topics(seed)
        return TaskInstance(
            task="notification_toggle", seed=seed, target=topic, expected_answer=None,
            goal=f'In my notification settings, turn on "{topic}" notifications and save the change.',
        )
    if task == "contact_form":
        name, email, message = data.contact_details(seed)
        return TaskInstance(
            task="contact_form", seed=seed, target=email, expected_answer=None,
            goal=(
                "Send a message through the contact form with these details. "
                f'Name: "{name}". Email: "{email}". Message: "{message}"'
            ),
        )
    if task == "inventory_filter":
        _, category, name = data.inventory(seed)
        return TaskInstance(
            task="inventory_filter", seed=seed, target=category, expected_answer=name,
            goal=(
                f'In the inventory, filter the products by the category "{category}" and tell me the '
                "name of the only product in that category that is in stock."
            ),
        )
    if task == "cart_checkout":
        products, sku, qty = data.shop(seed)
        product = next(p for p in products if p.sku == sku)
        return TaskInstance(
            task="cart_checkout", seed=seed, target=product.name, expected_answer=None, quantity=qty,
            goal=(
                f'Buy {qty} units of "{product.name}" in the shop: add it to the cart, set the quantity '
                f"to {qty} and check out."
            ),
        )
    if task == "lazy_load":
        _, later, title, _ = data.release_notes(seed)
        code = next(n.code for n in later if n.title == title)
        return TaskInstance(
            task="lazy_load", seed=seed, target=title, expected_answer=code,
            goal=(
                f'On the release notes page, load more entries and tell me the access code listed in the '
                f'"{title}" entry.'
            ),
        )
    raise ValueError(f"unknown task {task!r}")


def _normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def answer_contains(answer: str | None, expected: str) -> bool:
    """Whether the answer contains the expected text (case, spacing, `$` and thousands commas ignored)."""
    if not answer:
        return False
    got = _normalise(answer).replace(",", "").replace("$", "")
    want = _normalise(expected).replace(",", "").replace("$", "")
    return want in got


def state_reached(instance: TaskInstance, state: SessionState) -> bool:
    """Whether the server state satisfies the task's write/filter/load goal."""
    if instance.task == "order_lookup":
        return True
    if instance.task == "notification_toggle":
        return state.notification_saves > 0 and state.notifications.get(instance.target) is True
    if instance.task == "contact_form":
        name, email, message = data.contact_details(instance.seed)
        got = state.contact
        return got is not None and (got.name.strip(), got.email.strip(), got.message.strip()) == (
            name, email, message,
        )
    if instance.task == "inventory_filter":
        return state.inventory_filter == instance.target
    if instance.task == "cart_checkout":
        _, sku, qty = data.shop(instance.seed)
        return state.order_placed == {sku: qty}
    return state.load_actions > 0


def validate(instance: TaskInstance, state: SessionState, answer: str | None) -> Verdict:
    """Judge a run from the session state and the final answer, never from the model's claim."""
    if state.task != instance.task or state.seed != instance.seed:
        return Verdict(passed=False, state_ok=False, answer_ok=False,
                       detail=f"state is for {state.task}/{state.seed}, not {instance.task}/{instance.seed}")
    state_ok = state_reached(instance, state)
    answer_ok = instance.expected_answer is None or answer_contains(answer, instance.expected_answer)
    parts = []
    if instance.task in STATEFUL_TASKS:
        parts.append(f"state {'reached' if state_ok else 'not reached'} ({_state_summary(instance, state)})")
    if instance.expected_answer is not None:
        parts.append(f"answer {'contains' if answer_ok else 'lacks'} {instance.expected_answer!r}")
    return Verdict(passed=state_ok and answer_ok, state_ok=state_ok, answer_ok=answer_ok, detail="; ".join(parts))


def _state_summary(instance: TaskInstance, state: SessionState) -> str:
    if instance.task == "notification_toggle":
        return f"saves={state.notification_saves}, {instance.target}={state.notifications.get(instance.target)}"
    if instance.task == "contact_form":
        return "no submission" if state.contact is None else f"submitted email={state.contact.email!r}"
    if instance.task == "inventory_filter":
        return f"filter={state.inventory_filter!r}"
    if instance.task == "cart_checkout":
        return f"cart={state.cart}, order={state.order_placed}"
    return f"load actions={state.load_actions}"


def suite_fingerprint() -> str:
    """Hash of everything that defines the suite's meaning (see SUITE_FINGERPRINT)."""
    digest = hashlib.sha256()
    for task in TASK_NAMES:
        for seed in range(1, 6):
            digest.update(make_instance(task, seed).model_dump_json().encode())
    for seed in range(1, 6):
        generated = [data.orders(seed), data.notification_topics(seed), data.contact_details(seed),
                     data.inventory(seed), data.shop(seed), data.release_notes(seed), data.support_note(seed)]
        digest.update(json.dumps(generated, default=lambda m: m.model_dump(), sort_keys=True).encode())
    for template in sorted((Path(__file__).parent / "templates").glob("*.html")):
        digest.update(template.name.encode() + template.read_bytes())
    for function in (answer_contains, state_reached, validate):
        digest.update(inspect.getsource(function).encode())
    return digest.hexdigest()
