"""`farm web probe`: no model — each backend navigates, snapshots and clicks on the task site."""

from __future__ import annotations

import time

from pydantic import BaseModel, ConfigDict

from farm.errors import FarmError
from web_bench.browser.contract import BackendName, BrowserBackend
from web_bench.paired import snapshot
from web_bench.paired.site import data
from web_bench.paired.site.server import SiteClient, SiteServer


class ProbeResult(BaseModel):
    """What one backend's probe found."""

    model_config = ConfigDict(extra="forbid")

    backend: BackendName
    """Backend probed."""
    ok: bool
    """Navigate, snapshot and click all worked and the click reached the expected page."""
    detail: str
    """What happened (or the first error)."""
    elapsed_ms: float
    """Wall time of the probe."""


def probe(
    backends: list[BackendName], *, chromium: str | None = None, serial: str | None = None,
    virtual_phone: bool = False,
) -> list[ProbeResult]:
    """Probe every backend against a fresh in-process site."""
    from web_bench.paired.lane import open_backends

    results = []
    with SiteServer() as site:
        client = SiteClient(site.base_url)
        for name in backends:
            started = time.monotonic()
            try:
                with open_backends([name], site, chromium=chromium, serial=serial,
                                   virtual_phone=virtual_phone) as opened:
                    detail = _probe_one(opened[name], client, site.base_url)
                ok = True
            except Exception as exc:  # noqa: BLE001 - a probe reports every failure as a line
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                ok, detail = False, exc.line() if isinstance(exc, FarmError) else first
            results.append(ProbeResult(backend=name, ok=ok, detail=detail,
                                       elapsed_ms=round((time.monotonic() - started) * 1000, 1)))
        client.close()
    return results


def _probe_one(backend: BrowserBackend, client: SiteClient, base_url: str) -> str:
    created = client.new_session("order_lookup", 1)
    session = backend.new_session()
    try:
        steps = []
        for name, args in (("browser_navigate", {"url": base_url + created.start_path}), ("browser_snapshot", {})):
            result = session.call(name, args)
            if result.is_error:
                raise RuntimeError(result.text)
            steps.append(name)
        order_id = data.orders(1)[0][0].order_id
        link = snapshot.find(result.text, "link", f"View order {order_id}")
        clicked = session.call("browser_click", {"element": "view order", "ref": link.ref})
        if clicked.is_error or f"Order {order_id}" not in clicked.text:
            raise RuntimeError(f"click did not open order {order_id}: {clicked.text[:200]}")
        if order_id not in client.state(created.session_id).orders_viewed:
            raise RuntimeError("the site did not see the click's navigation")
        return "navigate, snapshot and click OK"
    finally:
        session.close()
