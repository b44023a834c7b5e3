"""Stand-in sites: requests to the three task sites are answered from local pages through Playwright routing,
loopback requests pass, and every other request is aborted — an attempt with a stand-in directory sends
nothing off the machine.

Layout of the directory (see fixtures/webvoyager/README.md): one sub-directory per host name
(`www.allrecipes.com`…); `/` → `index.html`, `/a/b/` → `a/b/index.html`, `/a/b` → `a/b`, `a/b/index.html` or
`a/b.html`; an optional `_routes.json` maps exact paths to `{"file", "status"}`.
"""

from __future__ import annotations

import json
import mimetypes
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from playwright.sync_api import BrowserContext, Route
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from farm.errors import FarmError

STAND_IN_HOSTS: tuple[str, ...] = ("www.allrecipes.com", "www.apple.com", "www.amazon.com")
"""The hosts of the 126-task set."""
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
DEFAULT_STAND_IN = Path(__file__).resolve().parents[2] / "fixtures" / "webvoyager"
"""The stand-in pages shipped with the project."""
ROUTES_FILE = "_routes.json"


class _RouteEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file: str
    """File (relative to the host directory) served for the path."""
    status: int = Field(default=200, ge=100, le=599)
    """HTTP status of the answer."""


@dataclass(frozen=True)
class Served:
    """A stand-in answer."""

    status: int
    content_type: str
    body: bytes


_NOT_FOUND = Served(404, "text/html; charset=utf-8",
                    b"<!doctype html><title>Page Not Found</title><h1>Page not found</h1>")


class StandIn:
    """The stand-in pages of one directory; `attach` routes a browser context to them."""

    def __init__(self, root: Path, *, on_block: Callable[[str], None] | None = None) -> None:
        if not root.is_dir():
            raise FarmError(f"{root}: stand-in directory not found",
                            hint=f"pass a directory holding one folder per host (e.g. {DEFAULT_STAND_IN})")
        self.root = root.resolve()
        self.on_block = on_block
        self.hosts = sorted(p.name for p in self.root.iterdir() if p.is_dir() and p.name in STAND_IN_HOSTS)
        if not self.hosts:
            raise FarmError(f"{root}: no stand-in site folder in it",
                            hint=f"add folders named {', '.join(STAND_IN_HOSTS)}")
        self._routes = {host: self._load_routes(host) for host in self.hosts}
        self.blocked = 0
        """Requests aborted because they would have left the machine."""

    def _load_routes(self, host: str) -> dict[str, _RouteEntry]:
        path = self.root / host / ROUTES_FILE
        if not path.exists():
            return {}
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            return {str(k): _RouteEntry.model_validate(v) for k, v in dict(raw).items()}
        except (OSError, ValueError, TypeError, ValidationError) as exc:
            raise FarmError(f"{path}: not a valid routes file ({type(exc).__name__})",
                            hint='write {"/path/": {"file": "page.html", "status": 403}}') from None

    def serves(self, url: str) -> bool:
        """Whether `url` belongs to a stand-in site."""
        parts = urlsplit(url)
        return parts.scheme in ("http", "https") and (parts.hostname or "") in self.hosts

    def resolve(self, url: str) -> Served:
        """The answer for a stand-in URL (404 for an unknown path; never a file outside the host folder)."""
        parts = urlsplit(url)
        host = parts.hostname or ""
        path = unquote(parts.path) or "/"
        base = self.root / host
        entry = self._routes.get(host, {}).get(path)
        if entry is not None:
            return self._file(base, entry.file, entry.status)
        rel = path.lstrip("/")
        if rel == "" or rel.endswith("/"):
            candidates = [rel + "index.html"]
        else:
            candidates = [rel, rel + "/index.html", rel + ".html"]
        for candidate in candidates:
            served = self._file(base, candidate, 200)
            if served is not _NOT_FOUND:
                return served
        return _NOT_FOUND

    def _file(self, base: Path, rel: str, status: int) -> Served:
        target = (base / rel).resolve()
        if not target.is_relative_to(base.resolve()) or not target.is_file():
            return _NOT_FOUND
        kind = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        if kind.startswith("text/") or kind in ("application/javascript", "application/json"):
            kind += "; charset=utf-8"
        return Served(status, kind, target.read_bytes())

    def attach(self, context: BrowserContext) -> None:
        """Route every request of `context` through the stand-in rules."""
        context.route("**/*", self._handle)

    def _handle(self, route: Route) -> None:
        url = route.request.url
        host = urlsplit(url).hostname or ""
        if host in LOOPBACK_HOSTS:
            route.fallback()
            return
        if self.serves(url):
            served = self.resolve(url)
            route.fulfill(status=served.status, body=served.body, headers={"content-type": served.content_type})
            return
        self.blocked += 1
        if self.on_block is not None:
            self.on_block(url)
        route.abort("blockedbyclient")
