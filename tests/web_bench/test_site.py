"""The task site: deterministic data, per-run sessions, the state API and every validator."""

from __future__ import annotations

import re

import httpx
import pytest

from web_bench.paired.site import data
from web_bench.paired.site.catalog import (
    SUITE_FINGERPRINT,
    SUITE_VERSION,
    TASK_NAMES,
    answer_contains,
    make_instance,
    suite_fingerprint,
    validate,
)
from web_bench.paired.site.server import HOST, SiteClient, SiteServer
from web_bench.paired.site.state import SessionState


def _page(site: SiteServer, path: str) -> str:
    response = httpx.get(site.base_url + path)
    response.raise_for_status()
    return response.text


def _post(site: SiteServer, path: str, form: dict[str, str | list[str]]) -> None:
    httpx.post(site.base_url + path, data=form, follow_redirects=True).raise_for_status()


def _new(site: SiteServer, task: str, seed: int = 1) -> tuple[SiteClient, str, str]:
    client = SiteClient(site.base_url)
    created = client.new_session(task, seed)  # type: ignore[arg-type]
    return client, created.session_id, created.start_path


def test_suite_version_is_two() -> None:
    assert SUITE_VERSION == 2


def test_suite_meaning_is_pinned_to_its_version() -> None:
    # Changed a prompt, a generator, a template or a validator? Raise SUITE_VERSION and re-pin.
    assert suite_fingerprint() == SUITE_FINGERPRINT, "task suite changed: raise SUITE_VERSION, update SUITE_FINGERPRINT"


@pytest.mark.parametrize("task", TASK_NAMES)
def test_same_seed_same_page(site: SiteServer, task: str) -> None:
    pages = []
    for _ in range(2):
        _, sid, start = _new(site, task, seed=4)
        pages.append(_page(site, start).replace(sid, "SID"))
    assert pages[0] == pages[1]


@pytest.mark.parametrize("task", TASK_NAMES)
def test_other_seed_other_page(site: SiteServer, task: str) -> None:
    pages = []
    for seed in (4, 5):
        _, sid, start = _new(site, task, seed=seed)
        pages.append(_page(site, start).replace(sid, "SID"))
    assert pages[0] != pages[1]


@pytest.mark.parametrize("task", TASK_NAMES)
def test_instances_vary_with_seed(task: str) -> None:
    goals = {make_instance(task, seed).goal for seed in range(1, 6)}
    assert len(goals) > 1


def test_inventory_names_never_carry_the_seed() -> None:
    for seed in range(1, 40):
        products, category, name = data.inventory(seed)
        assert not re.search(r"\d", name)
        assert all(not re.search(r"\d", p.name) for p in products)
        in_stock = [p for p in products if p.category == category and p.stock > 0]
        assert [p.name for p in in_stock] == [name]


def test_inventory_seed_varies_roots_skus_prices_and_order() -> None:
    (p1, _, _), (p2, _, _) = data.inventory(1), data.inventory(2)
    assert [p.name for p in p1] != [p.name for p in p2]
    assert {p.sku for p in p1} != {p.sku for p in p2}
    assert [p.price_cents for p in p1] != [p.price_cents for p in p2]


def test_site_binds_loopback_only(site: SiteServer) -> None:
    assert site.base_url.startswith(f"http://{HOST}:")
    assert HOST == "127.0.0.1"


def test_sessions_do_not_share_state(site: SiteServer) -> None:
    client, first, _ = _new(site, "lazy_load")
    _, second, _ = _new(site, "lazy_load")
    _post(site, f"/s/{first}/releases/more", {})
    assert client.state(first).load_actions == 1
    assert client.state(second).load_actions == 0


def test_page_of_another_task_is_not_found(site: SiteServer) -> None:
    _, sid, _ = _new(site, "order_lookup")
    assert httpx.get(f"{site.base_url}/s/{sid}/contact").status_code == 404


def test_state_api_unknown_session_is_404(site: SiteServer) -> None:
    assert httpx.get(f"{site.base_url}/api/sessions/nope/state").status_code == 404


def test_answer_matching_ignores_currency_format() -> None:
    assert answer_contains("It was $1,234.50 in total", "$1,234.50")
    assert answer_contains("1234.50", "$1,234.50")
    assert not answer_contains("1234.05", "$1,234.50")
    assert not answer_contains(None, "x")


def _verdict(client: SiteClient, sid: str, task: str, answer: str | None, seed: int = 1) -> bool:
    return validate(make_instance(task, seed), client.state(sid), answer).passed


def test_order_lookup_validator(site: SiteServer) -> None:
    client, sid, _ = _new(site, "order_lookup")
    orders, idx = data.orders(1)
    amount = data.money(orders[idx].total_cents)
    other = data.money(orders[(idx + 1) % len(orders)].total_cents)
    assert _verdict(client, sid, "order_lookup", f"The total is {amount}.")
    assert not _verdict(client, sid, "order_lookup", f"The total is {other}.")


def test_order_detail_shows_the_amount(site: SiteServer) -> None:
    _, sid, _ = _new(site, "order_lookup")
    orders, idx = data.orders(1)
    page = _page(site, f"/s/{sid}/orders/{orders[idx].order_id}")
    assert data.money(orders[idx].total_cents) in page


def test_notification_validator_needs_enabled_and_saved(site: SiteServer) -> None:
    client, sid, _ = _new(site, "notification_toggle")
    initial, topic = data.notification_topics(1)
    assert not _verdict(client, sid, "notification_toggle", None)
    others = [t for t, on in initial.items() if on]
    _post(site, f"/s/{sid}/settings/notifications", {"topic": others})
    assert not _verdict(client, sid, "notification_toggle", None)
    _post(site, f"/s/{sid}/settings/notifications", {"topic": [*others, topic]})
    assert _verdict(client, sid, "notification_toggle", None)


def test_contact_validator_needs_all_three_fields(site: SiteServer) -> None:
    client, sid, _ = _new(site, "contact_form")
    name, email, message = data.contact_details(1)
    _post(site, f"/s/{sid}/contact", {"name": name, "email": email, "message": "something else"})
    assert not _verdict(client, sid, "contact_form", None)
    _post(site, f"/s/{sid}/contact", {"name": name, "email": email, "message": message})
    assert _verdict(client, sid, "contact_form", None)


def test_inventory_validator_needs_filter_and_answer(site: SiteServer) -> None:
    client, sid, _ = _new(site, "inventory_filter")
    _, category, name = data.inventory(1)
    assert not _verdict(client, sid, "inventory_filter", name)
    _page(site, f"/s/{sid}/inventory?category={category}")
    assert not _verdict(client, sid, "inventory_filter", "no idea")
    assert _verdict(client, sid, "inventory_filter", f"It is the {name}.")


def test_inventory_validator_refuses_another_filter(site: SiteServer) -> None:
    client, sid, _ = _new(site, "inventory_filter")
    products, category, name = data.inventory(1)
    other = next(p.category for p in products if p.category != category)
    _page(site, f"/s/{sid}/inventory?category={other}")
    assert not _verdict(client, sid, "inventory_filter", name)


def test_cart_validator_needs_product_quantity_and_checkout(site: SiteServer) -> None:
    client, sid, _ = _new(site, "cart_checkout")
    _, sku, qty = data.shop(1)
    _post(site, f"/s/{sid}/cart/add", {"sku": sku})
    assert not _verdict(client, sid, "cart_checkout", None)
    _post(site, f"/s/{sid}/cart/update", {f"qty_{sku}": str(qty)})
    assert not _verdict(client, sid, "cart_checkout", None)
    _post(site, f"/s/{sid}/checkout", {})
    assert client.state(sid).order_placed == {sku: qty}
    assert _verdict(client, sid, "cart_checkout", None)


def test_cart_validator_refuses_wrong_quantity(site: SiteServer) -> None:
    client, sid, _ = _new(site, "cart_checkout")
    _, sku, qty = data.shop(1)
    _post(site, f"/s/{sid}/cart/add", {"sku": sku})
    _post(site, f"/s/{sid}/cart/update", {f"qty_{sku}": str(qty + 1)})
    _post(site, f"/s/{sid}/checkout", {})
    assert not _verdict(client, sid, "cart_checkout", None)


def test_lazy_load_validator_needs_load_and_code(site: SiteServer) -> None:
    client, sid, _ = _new(site, "lazy_load")
    instance = make_instance("lazy_load", 1)
    assert instance.expected_answer is not None
    assert instance.expected_answer not in _page(site, f"/s/{sid}/releases")
    assert not _verdict(client, sid, "lazy_load", instance.expected_answer)
    later = httpx.post(f"{site.base_url}/s/{sid}/releases/more").json()
    assert instance.expected_answer in {n["code"] for n in later}
    assert not _verdict(client, sid, "lazy_load", "no code")
    assert _verdict(client, sid, "lazy_load", f"code {instance.expected_answer}")


def test_validator_refuses_state_of_another_task() -> None:
    state = SessionState(session_id="x", task="contact_form", seed=1)
    assert not validate(make_instance("lazy_load", 1), state, None).passed
