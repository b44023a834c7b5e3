"""The FastAPI task site: pages per task under `/s/<session>/`, plus the session and state API."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape
from pydantic import BaseModel, ConfigDict, Field

from farm.camel import CamelModel
from web_bench.paired.site import data
from web_bench.paired.site.catalog import START_PATHS, SUITE_VERSION, TASK_NAMES, make_instance
from web_bench.paired.site.state import ContactSubmission, SessionState, SessionStore, TaskName

_TEMPLATES = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=select_autoescape(["html"]),
)
_TEMPLATES.globals["money"] = data.money


class NewSession(BaseModel):
    """Body of `POST /api/sessions`."""

    model_config = ConfigDict(extra="forbid")

    task: TaskName
    """Task of the new session."""
    seed: int = Field(ge=0)
    """Data seed."""


class SessionCreated(CamelModel):
    """Reply of `POST /api/sessions`."""


    session_id: str
    """The new session's id."""
    start_path: str
    """Path (on this site) the run starts at."""
    suite_version: int
    """Task suite version the site serves."""
    goal: str
    """The task request (without the start URL)."""


def _page(name: str, **context: Any) -> HTMLResponse:
    return HTMLResponse(_TEMPLATES.get_template(name).render(**context))


async def _form(request: Request) -> dict[str, list[str]]:
    # Forms are urlencoded; parsing them here avoids a multipart dependency.
    body = (await request.body()).decode("utf-8", "replace")
    return parse_qs(body, keep_blank_values=True)


def create_app(store: SessionStore | None = None) -> FastAPI:
    """The site app; `store` is shared with in-process callers (tests, the runner)."""
    sessions = store or SessionStore()
    app = FastAPI(title="web bench task site", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.sessions = sessions

    def session(sid: str, task: str) -> SessionState:
        state = sessions.get(sid)
        if state is None or state.task != task:
            raise HTTPException(status_code=404, detail="no such session for this page")
        return state

    @app.get("/", response_class=HTMLResponse)
    def index() -> HTMLResponse:
        return _page("index.html", base="", suite_version=SUITE_VERSION, tasks=TASK_NAMES)

    @app.post("/api/sessions")
    def new_session(body: NewSession) -> JSONResponse:
        initial = data.notification_topics(body.seed)[0] if body.task == "notification_toggle" else None
        state = sessions.create(body.task, body.seed, initial)
        created = SessionCreated(
            session_id=state.session_id, start_path=f"/s/{state.session_id}/{START_PATHS[body.task]}",
            suite_version=SUITE_VERSION, goal=make_instance(body.task, body.seed).goal,
        )
        return JSONResponse(created.model_dump(by_alias=True))

    @app.get("/api/sessions/{sid}/state")
    def get_state(sid: str) -> JSONResponse:
        state = sessions.get(sid)
        if state is None:
            raise HTTPException(status_code=404, detail="no such session")
        return JSONResponse(state.model_dump(by_alias=True, mode="json"))

    @app.get("/s/{sid}/orders", response_class=HTMLResponse)
    def orders(sid: str) -> HTMLResponse:
        state = session(sid, "order_lookup")
        return _page("orders.html", base=f"/s/{sid}", orders=data.orders(state.seed)[0])

    @app.get("/s/{sid}/orders/{order_id}", response_class=HTMLResponse)
    def order(sid: str, order_id: str) -> HTMLResponse:
        state = session(sid, "order_lookup")
        found = next((o for o in data.orders(state.seed)[0] if o.order_id == order_id), None)
        if found is None:
            raise HTTPException(status_code=404, detail="no such order")
        state.orders_viewed.append(order_id)
        sessions.update(state)
        return _page("order.html", base=f"/s/{sid}", order=found, total=data.money(found.total_cents))

    @app.get("/s/{sid}/settings/notifications", response_class=HTMLResponse)
    def notifications(sid: str, saved: int = 0) -> HTMLResponse:
        state = session(sid, "notification_toggle")
        return _page("notifications.html", base=f"/s/{sid}", topics=state.notifications, saved=bool(saved))

    @app.post("/s/{sid}/settings/notifications")
    async def save_notifications(sid: str, request: Request) -> Response:
        state = session(sid, "notification_toggle")
        chosen = set((await _form(request)).get("topic", []))
        state.notifications = {topic: topic in chosen for topic in state.notifications}
        state.notification_saves += 1
        sessions.update(state)
        return RedirectResponse(f"/s/{sid}/settings/notifications?saved=1", status_code=303)

    @app.get("/s/{sid}/contact", response_class=HTMLResponse)
    def contact(sid: str) -> HTMLResponse:
        state = session(sid, "contact_form")
        return _page("contact.html", base=f"/s/{sid}", sent=None, note=data.support_note(state.seed))

    @app.post("/s/{sid}/contact", response_class=HTMLResponse)
    async def send_contact(sid: str, request: Request) -> HTMLResponse:
        state = session(sid, "contact_form")
        form = await _form(request)
        state.contact = ContactSubmission(
            name=form.get("name", [""])[0], email=form.get("email", [""])[0], message=form.get("message", [""])[0]
        )
        sessions.update(state)
        return _page("contact.html", base=f"/s/{sid}", sent=state.contact, note=data.support_note(state.seed))

    @app.get("/s/{sid}/inventory", response_class=HTMLResponse)
    def inventory(sid: str, category: str = "") -> HTMLResponse:
        state = session(sid, "inventory_filter")
        products, _, _ = data.inventory(state.seed)
        categories = list(dict.fromkeys(p.category for p in products))
        selected = category if category in categories else ""
        if selected:
            state.inventory_filter = selected
            sessions.update(state)
        shown = [p for p in products if p.category == selected]
        return _page("inventory.html", base=f"/s/{sid}", categories=categories, selected=selected, products=shown)

    def cart_lines(seed: int, quantities: dict[str, int]) -> list[dict[str, Any]]:
        by_sku = {p.sku: p for p in data.shop(seed)[0]}
        return [
            {"sku": sku, "name": by_sku[sku].name, "qty": qty, "subtotal": qty * by_sku[sku].price_cents}
            for sku, qty in quantities.items()
        ]

    @app.get("/s/{sid}/shop", response_class=HTMLResponse)
    def shop(sid: str, added: str = "") -> HTMLResponse:
        state = session(sid, "cart_checkout")
        return _page("shop.html", base=f"/s/{sid}", products=data.shop(state.seed)[0], added=added,
                     cart_count=sum(state.cart.values()))

    @app.post("/s/{sid}/cart/add")
    async def cart_add(sid: str, request: Request) -> Response:
        state = session(sid, "cart_checkout")
        sku = (await _form(request)).get("sku", [""])[0]
        product = next((p for p in data.shop(state.seed)[0] if p.sku == sku), None)
        if product is None:
            raise HTTPException(status_code=400, detail="unknown product")
        state.cart[sku] = state.cart.get(sku, 0) + 1
        sessions.update(state)
        return RedirectResponse(f"/s/{sid}/shop?added={quote(product.name)}", status_code=303)

    @app.get("/s/{sid}/cart", response_class=HTMLResponse)
    def cart(sid: str, placed: int = 0) -> HTMLResponse:
        state = session(sid, "cart_checkout")
        done = cart_lines(state.seed, state.order_placed) if placed and state.order_placed else None
        return _page("cart.html", base=f"/s/{sid}", lines=cart_lines(state.seed, state.cart), placed=done)

    @app.post("/s/{sid}/cart/update")
    async def cart_update(sid: str, request: Request) -> Response:
        state = session(sid, "cart_checkout")
        form = await _form(request)
        for sku in list(state.cart):
            raw = form.get(f"qty_{sku}", [str(state.cart[sku])])[0].strip()
            qty = int(raw) if raw.isdigit() else state.cart[sku]
            if qty <= 0:
                del state.cart[sku]
            else:
                state.cart[sku] = min(qty, 50)
        sessions.update(state)
        return RedirectResponse(f"/s/{sid}/cart", status_code=303)

    @app.post("/s/{sid}/checkout")
    def checkout(sid: str) -> Response:
        state = session(sid, "cart_checkout")
        if state.cart:
            state.order_placed = dict(state.cart)
            state.cart = {}
            sessions.update(state)
        return RedirectResponse(f"/s/{sid}/cart?placed=1", status_code=303)

    @app.get("/s/{sid}/releases", response_class=HTMLResponse)
    def releases(sid: str) -> HTMLResponse:
        state = session(sid, "lazy_load")
        first, _, _, delay = data.release_notes(state.seed)
        return _page("releases.html", base=f"/s/{sid}", notes=first, delay_ms=delay)

    @app.post("/s/{sid}/releases/more")
    def releases_more(sid: str) -> JSONResponse:
        state = session(sid, "lazy_load")
        state.load_actions += 1
        sessions.update(state)
        later = data.release_notes(state.seed)[1]
        return JSONResponse([n.model_dump() for n in later])

    return app
