"""The viewer's routes: the run list (filtered and sorted: `farm.view.run_list`), two runs compared
(`/compare?a=A&b=B`) and their units side by side (`/side`, `farm.view.side`), a run's page (its headline, report
files, task × phone grid, failures grouped, and units filtered, searched and paged: `farm.view.run_page`), its
files, each unit's page (`farm.view.unit_page`), the nights of a label (`/nights`, `farm.view.nights`); and the run
list and units as JSON under `/api/` (each phone by its stable name beside its serial and adb server).

Served on loopback only, read-only, offline: pages are rendered with Jinja2 autoescape (everything shown comes from
phones, pages and models), filters are plain GET forms, and a Content-Security-Policy allows nothing but the viewer
itself. The one script is the viewer's own `/static/viewer.js` (← → between steps), allowed on the viewer's own
pages only; no inline script runs anywhere, and a run's files (its report too) run none. A run's files are served
under `/runs/<run>/` so the relative links of its report.html (`/runs/<run>/report.html`, beside the run page) land
here; a link to a run record or a try directory opens that unit's page (`?list` lists the folder instead).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader
from starlette.middleware.trustedhost import TrustedHostMiddleware

from farm.errors import FarmError
from farm.report.why import record_why
from farm.view.compare import compare
from farm.view.files import Refused, inside, list_dir, media_type, run_dir_of
from farm.view.nights import cached_nights, labels_of
from farm.view.run_list import SORTS, STATUSES, RunQuery
from farm.view.run_page import run_view
from farm.view.runs import list_runs
from farm.view.side import align, pair_units
from farm.view.unit_index import cached_index
from farm.view.unit_lookup import find_unit
from farm.view.unit_page import unit_view
from farm.view.unit_query import UnitQuery
from farm.view.units import RunUnits, Unit, UnitRow, cached_units

HERE = Path(__file__).parent
SECURITY_HEADERS = {
    # Reports use inline CSS and inline SVG; nothing may run and nothing may load from elsewhere.
    "Content-Security-Policy": ("default-src 'none'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
                                "font-src 'self' data:; base-uri 'none'; form-action 'self'; "
                                "frame-ancestors 'none'"),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}
PAGE_CSP = SECURITY_HEADERS["Content-Security-Policy"] + "; script-src 'self'"
"""The viewer's own pages may run its own script file (nosniff keeps any run file from passing for one)."""


def _env() -> Environment:
    env = Environment(loader=FileSystemLoader(str(HERE / "templates")), autoescape=True, trim_blocks=True,
                      lstrip_blocks=True)
    env.filters["ms"] = fmt_ms
    env.filters["pct"] = lambda v: "–" if v is None else f"{v * 100:.1f}%"
    env.globals["path_url"] = path_url
    env.globals["why"] = record_why  # why a unit did not pass: its failing checks, then its reasons
    return env


def fmt_ms(value: float | None) -> str:
    """`850 ms`, `12.3 s`; `–` when unknown."""
    if value is None:
        return "–"
    return f"{value:,.0f} ms" if value < 1000 else f"{value / 1000:,.1f} s"


def path_url(run: str, *parts: str) -> str:
    """The viewer URL of a path inside a run (each component quoted)."""
    joined = "/".join(p.strip("/") for p in parts if p.strip("/"))
    return f"/runs/{quote(run, safe='')}/" + quote(joined, safe="/")


def unit_href(run: str, key: str) -> str:
    """The trajectory page of the unit with this key."""
    return f"/runs/{quote(run, safe='')}/units/{quote(key, safe='')}"


def unit_url(run: str, unit: Unit) -> str:
    """The trajectory page of a unit."""
    return unit_href(run, unit.key)


def create_app(runs_dir: Path, *, tasks_dir: Path | None = None,
               hosts: tuple[str, ...] = ("127.0.0.1", "localhost")) -> FastAPI:
    """The viewer of the runs under `runs_dir`; requests naming another host are refused (DNS rebinding).

    `tasks_dir`: the task set whose goals the run page searches (`farm.view.goals`; default: the one each run's
    recorded farm.yaml named)."""
    app = FastAPI(title="farm view", docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(hosts))
    env = _env()
    env.globals["unit_url"] = unit_url
    env.globals["unit_href"] = unit_href

    @app.middleware("http")
    async def headers(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        response = await call_next(request)
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        return response

    def page(name: str, status: int = 200, **context: object) -> HTMLResponse:
        return HTMLResponse(env.get_template(name).render(**context), status_code=status,
                            headers={"Content-Security-Policy": PAGE_CSP})

    def message(status: int, title: str, text: str) -> HTMLResponse:
        return page("message.html.j2", status, title=title, text=text)

    def find_run(run: str) -> Path | tuple[int, str, str]:
        """The run's directory, or (status, title, why) when it is refused or missing."""
        try:
            return run_dir_of(runs_dir, run)
        except Refused as exc:
            return 403, "Refused", str(exc)
        except OSError:
            return 404, "No such run", f"{run}: no such run under {runs_dir}"

    def open_run(run: str) -> Path | HTMLResponse:
        found = find_run(run)
        return message(*found) if isinstance(found, tuple) else found

    @app.get("/", response_class=HTMLResponse)
    def index(request: Request) -> HTMLResponse:
        query = RunQuery.parse(request.query_params)
        rows = list_runs(runs_dir, tasks_dir)
        labels = sorted({r.label for r in rows if r.label})
        return page("runs.html.j2", runs=query.apply(rows), total=len(rows), query=query, labels=labels,
                    sorts=SORTS, statuses=STATUSES, runs_dir=str(runs_dir))

    @app.get("/api/runs")
    def api_runs(request: Request) -> JSONResponse:
        query = RunQuery.parse(request.query_params)
        return JSONResponse([row.model_dump(mode="json") for row in query.apply(list_runs(runs_dir, tasks_dir))])

    @app.get("/compare")
    def compare_page(request: Request) -> Response:
        a, b = request.query_params.get("a", ""), request.query_params.get("b", "")
        if not a or not b:
            return message(400, "Pick two runs", "Pick a run as A and another as B on the run list, then compare.")
        dirs = [find_run(a), find_run(b)]
        for found in dirs:
            if isinstance(found, tuple):
                return message(*found)
        a_dir, b_dir = (d for d in dirs if isinstance(d, Path))
        return page("compare.html.j2", c=compare(runs_dir, a_dir, b_dir, tasks_dir))

    @app.get("/api/runs/{run}/units")
    def api_units(run: str) -> JSONResponse:
        found = find_run(run)
        if isinstance(found, tuple):
            return JSONResponse({"error": found[2]}, status_code=found[0])
        index = cached_units(found)
        rows = [UnitRow.of(u, unit_url(run, u)).model_dump(mode="json") for u in _sorted(index)]
        return JSONResponse({"run": run, "units": rows, "problems": index.problems})

    @app.get("/static/viewer.css")
    def css() -> Response:
        return FileResponse(HERE / "static" / "viewer.css", media_type="text/css")

    @app.get("/static/viewer.js")
    def js() -> Response:
        return FileResponse(HERE / "static" / "viewer.js", media_type="text/javascript")

    @app.get("/side")
    def side_page(request: Request) -> Response:
        params = request.query_params
        a, b = params.get("a", ""), params.get("b", "")
        if not a or not b:
            return message(400, "Pick two runs", "Pick a run as A and another as B on the run list, then open them "
                                                 "side by side.")
        dirs = [find_run(a), find_run(b)]
        for found in dirs:
            if isinstance(found, tuple):
                return message(*found)
        a_dir, b_dir = (d for d in dirs if isinstance(d, Path))
        ua, ub = params.get("ua", ""), params.get("ub", "")
        if ua and ub:
            units = [find_unit(runs_dir, a_dir, ua, tasks_dir), find_unit(runs_dir, b_dir, ub, tasks_dir)]
            if units[0] is None or units[1] is None:
                return message(404, "No such unit", f"{a}: {ua} or {b}: {ub} is not a unit of its run")
            va = unit_view(runs_dir, a_dir, a, units[0], tasks_dir)
            vb = unit_view(runs_dir, b_dir, b, units[1], tasks_dir)
            return page("side.html.j2", a_run=a, b_run=b, s=align(va.t, vb.t), goal=va.task.goal)
        q, changed = params.get("q", "")[:200], params.get("changed", "1") != "0"
        try:
            paired = pair_units(cached_index(runs_dir, a_dir, tasks_dir), cached_index(runs_dir, b_dir, tasks_dir),
                                q, changed)
        except FarmError as exc:
            return message(500, "Cannot pair the units", exc.line())
        return page("side.html.j2", a_run=a, b_run=b, pairs=paired.shown, more=paired.matching - len(paired.shown),
                    total=paired.total, q=q, changed=changed, counts=paired.counts)

    @app.get("/nights")
    def nights_page(request: Request) -> Response:
        label = request.query_params.get("label", "")[:200]
        if not label:
            return page("nights.html.j2", n=None, labels=labels_of(runs_dir), problem="")
        try:
            view = cached_nights(runs_dir, label)
        except FarmError as exc:
            return page("nights.html.j2", 404, n=None, labels=labels_of(runs_dir), problem=exc.line())
        return page("nights.html.j2", n=view)

    @app.get("/runs/{run}")
    def run_no_slash(run: str) -> Response:
        return RedirectResponse(f"/runs/{quote(run, safe='')}/", status_code=308)

    @app.get("/runs/{run}/")
    def run_page(run: str, request: Request) -> Response:
        run_dir = open_run(run)
        if isinstance(run_dir, HTMLResponse):
            return run_dir
        # The run's report is one click away (report.html beside this page: its relative links resolve alike).
        view = run_view(runs_dir, run, UnitQuery.parse(request.query_params), tasks_dir)
        return page("run.html.j2", run=run, v=view)

    @app.get("/runs/{run}/units")
    def units_no_slash(run: str) -> Response:
        return RedirectResponse(f"/runs/{quote(run, safe='')}/units/", status_code=308)

    @app.get("/runs/{run}/units/")
    def units_page(run: str) -> Response:
        run_dir = open_run(run)
        if isinstance(run_dir, HTMLResponse):
            return run_dir
        index = cached_units(run_dir)
        return page("units.html.j2", run=run, units=_sorted(index), problems=index.problems)

    @app.get("/runs/{run}/units/{unit}")
    def unit_page(run: str, unit: str) -> Response:
        run_dir = open_run(run)
        if isinstance(run_dir, HTMLResponse):
            return run_dir
        found = find_unit(runs_dir, run_dir, unit, tasks_dir)
        if found is None:
            return message(404, "No such unit", f"{run}: no unit {unit}")
        return page("unit.html.j2", v=unit_view(runs_dir, run_dir, run, found, tasks_dir))

    @app.get("/runs/{run}/{path:path}")
    def run_file(run: str, path: str, request: Request) -> Response:
        run_dir = open_run(run)
        if isinstance(run_dir, HTMLResponse):
            return run_dir
        try:
            real = inside(run_dir, path)
        except Refused as exc:
            return message(403, "Refused", str(exc))
        except OSError:
            return message(404, "Not found", f"{run}/{path}: no such file")
        if real.is_dir():
            rel = real.relative_to(run_dir).as_posix() if real != run_dir else ""
            index = cached_units(run_dir)
            named = index.named_by(rel)
            if named is not None and "list" not in request.query_params:
                # A report's link to a run record (or to the try directory holding it) opens the trajectory.
                return RedirectResponse(unit_url(run, named), status_code=303)
            return page("directory.html.j2", run=run, rel=rel, entries=list_dir(real), units=index.under(rel))
        if not real.is_file():
            return message(404, "Not found", f"{run}/{path}: not a regular file")
        return FileResponse(real, media_type=media_type(run_dir, real))

    return app


def _sorted(index: RunUnits) -> list[Unit]:
    """Failures first (fail, error), then passes, then skips; latest tries before earlier ones."""
    order = {"fail": 0, "error": 1, "pass": 2, "skipped": 3}
    return sorted(index.units, key=lambda u: (not u.latest, order[u.verdict]))
