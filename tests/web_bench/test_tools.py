"""Every `browser_*` tool on both backends (android-chrome through a virtual phone)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.helpers.web import BackendFactory
from web_bench.browser.contract import TOOLS, BrowserSession, ToolResult
from web_bench.paired import snapshot
from web_bench.paired.site import data
from web_bench.paired.site.catalog import TASK_NAMES
from web_bench.paired.site.server import SiteClient, SiteServer

BACKENDS = ["playwright", "android-chrome"]


Opener = Callable[[str, str], tuple[BrowserSession, str, str]]


@pytest.fixture
def open_page(make_backend: BackendFactory, site: SiteServer) -> Iterator[Opener]:
    """`open_page(backend, task)` → (session, session id, snapshot after navigating to the task's start)."""
    opened: list[BrowserSession] = []

    def open_(backend: str, task: str) -> tuple[BrowserSession, str, str]:
        session = make_backend(backend).new_session()  # type: ignore[arg-type]
        opened.append(session)
        created = SiteClient(site.base_url).new_session(task, 1)  # type: ignore[arg-type]
        result = session.call("browser_navigate", {"url": site.base_url + created.start_path})
        assert not result.is_error, result.text
        return session, created.session_id, result.text

    yield open_
    for session in opened:
        session.close()


def _ok(result: ToolResult) -> str:
    assert not result.is_error, result.text
    return result.text


def _ref(page: str, role: str, name: str, prefix: bool = False) -> str:
    ref = snapshot.find(page, role, name, prefix=prefix).ref
    assert ref is not None
    return ref


def test_contract_has_the_nine_tools_with_object_schemas() -> None:
    names = [t.name for t in TOOLS]
    assert names == [
        "browser_navigate", "browser_snapshot", "browser_click", "browser_type", "browser_select_option",
        "browser_press_key", "browser_wait_for", "browser_navigate_back", "browser_take_screenshot",
    ]
    for tool in TOOLS:
        schema = tool.parameters()
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False


@pytest.mark.parametrize("backend", BACKENDS)
def test_navigate_and_snapshot(open_page: Opener, site: SiteServer, backend: str) -> None:
    session, sid, page = open_page(backend, "order_lookup")
    assert f"/s/{sid}/orders" in page
    again = _ok(session.call("browser_snapshot", {}))
    assert 'heading "Order history"' in again
    assert "[ref=e" in again


@pytest.mark.parametrize("backend", BACKENDS)
def test_click_follows_a_link(open_page: Opener, site: SiteServer, backend: str) -> None:
    session, sid, page = open_page(backend, "order_lookup")
    order = data.orders(1)[0][0]
    link = _ref(page, "link", f"View order {order.order_id}")
    after = _ok(session.call("browser_click", {"element": "view", "ref": link}))
    assert f'heading "Order {order.order_id}"' in after
    assert order.order_id in SiteClient(site.base_url).state(sid).orders_viewed


@pytest.mark.parametrize("backend", BACKENDS)
def test_navigate_back(open_page: Opener, site: SiteServer, backend: str) -> None:
    session, _, page = open_page(backend, "order_lookup")
    order = data.orders(1)[0][0]
    _ok(session.call("browser_click", {"ref": _ref(page, "link", f"View order {order.order_id}")}))
    back = _ok(session.call("browser_navigate_back", {}))
    assert 'heading "Order history"' in back


@pytest.mark.parametrize("backend", BACKENDS)
def test_type_with_submit_sends_the_form(open_page: Opener, site: SiteServer, backend: str) -> None:
    session, sid, page = open_page(backend, "contact_form")
    _ok(session.call("browser_type", {"ref": _ref(page, "textbox", "Name"), "text": "Ada"}))
    _ok(session.call("browser_type", {"ref": _ref(page, "textbox", "Email"), "text": "a@example.org"}))
    _ok(session.call("browser_type", {"ref": _ref(page, "textbox", "Message"), "text": "hi"}))
    after = _ok(session.call("browser_type", {"ref": _ref(page, "textbox", "Name"), "text": "Ada L", "submit": True}))
    assert "Your message was sent" in after
    contact = SiteClient(site.base_url).state(sid).contact
    assert contact is not None and (contact.name, contact.email, contact.message) == ("Ada L", "a@example.org", "hi")


@pytest.mark.parametrize("backend", BACKENDS)
def test_select_option(open_page: Opener, site: SiteServer, backend: str) -> None:
    session, sid, page = open_page(backend, "inventory_filter")
    _, category, _ = data.inventory(1)
    combo = _ref(page, "combobox", "Category")
    selected = _ok(session.call("browser_select_option", {"ref": combo, "values": [category]}))
    assert f'option "{category}" [selected]' in selected
    _ok(session.call("browser_click", {"ref": _ref(selected, "button", "Apply filter")}))
    assert SiteClient(site.base_url).state(sid).inventory_filter == category


@pytest.mark.parametrize("backend", BACKENDS)
def test_press_key_submits_focused_form(open_page: Opener, site: SiteServer, backend: str) -> None:
    session, sid, page = open_page(backend, "contact_form")
    _ok(session.call("browser_type", {"ref": _ref(page, "textbox", "Name"), "text": "Key"}))
    after = _ok(session.call("browser_press_key", {"key": "Enter"}))
    assert "Your message was sent" in after
    contact = SiteClient(site.base_url).state(sid).contact
    assert contact is not None and contact.name == "Key"


@pytest.mark.parametrize("backend", BACKENDS)
def test_wait_for_text_and_text_gone(open_page: Opener, site: SiteServer, backend: str) -> None:
    session, _, page = open_page(backend, "lazy_load")
    _, later, _, _ = data.release_notes(1)
    _ok(session.call("browser_click", {"ref": _ref(page, "button", "Load more")}))
    gone = _ok(session.call("browser_wait_for", {"textGone": "Loading more entries"}))
    assert later[-1].code in gone
    appeared = _ok(session.call("browser_wait_for", {"text": later[0].title}))
    assert later[0].title in appeared


@pytest.mark.parametrize("backend", BACKENDS)
def test_wait_for_time(open_page: Opener, site: SiteServer, backend: str) -> None:
    session, _, _ = open_page(backend, "order_lookup")
    assert "waited 0.1 s" in _ok(session.call("browser_wait_for", {"time": 0.1}))


@pytest.mark.parametrize("backend", BACKENDS)
def test_take_screenshot_is_jpeg(open_page: Opener, site: SiteServer, backend: str) -> None:
    session, _, _ = open_page(backend, "order_lookup")
    shot = session.call("browser_take_screenshot", {})
    assert not shot.is_error
    assert shot.image_jpeg is not None and shot.image_jpeg[:2] == b"\xff\xd8"


@pytest.mark.parametrize("backend", BACKENDS)
def test_stale_ref_is_an_error_result(open_page: Opener, site: SiteServer, backend: str) -> None:
    session, _, _ = open_page(backend, "order_lookup")
    result = session.call("browser_click", {"ref": "e999"})
    assert result.is_error and "take a new browser_snapshot" in result.text


@pytest.mark.parametrize("backend", BACKENDS)
def test_bad_arguments_are_an_error_result(open_page: Opener, site: SiteServer, backend: str) -> None:
    session, _, _ = open_page(backend, "order_lookup")
    result = session.call("browser_click", {"reff": "e1"})
    assert result.is_error and "browser_click" in result.text


@pytest.mark.parametrize("backend", BACKENDS)
def test_pages_load_nothing_from_outside(open_page: Opener, site: SiteServer, backend: str) -> None:
    session, _, _ = open_page(backend, "order_lookup")
    page = session.page  # type: ignore[attr-defined]
    seen: list[str] = []

    def intercept(route: object) -> None:
        seen.append(route.request.url)  # type: ignore[attr-defined]
        route.continue_()  # type: ignore[attr-defined]

    page.route("**/*", intercept)
    client = SiteClient(site.base_url)
    for task in TASK_NAMES:
        created = client.new_session(task, 2)
        _ok(session.call("browser_navigate", {"url": site.base_url + created.start_path}))
    assert seen
    assert all(url.startswith(site.base_url + "/") for url in seen), seen
