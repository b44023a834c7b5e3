"""`farm web run` and `farm web probe` as library calls: set up the site, the backends and the
policy, join the run manifest, append results, write the report."""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from pydantic import BaseModel, ConfigDict, JsonValue

from farm.errors import FarmError
from farm.fsutil import create_new_text
from farm.llm.loop import Policy
from farm.manifest import LaneEntry, Manifest, code_fingerprint, utc_now
from farm.results.store import RunStore
from web_bench.browser.contract import BackendName, BrowserBackend
from web_bench.paired.matrix import PlannedRun
from web_bench.paired.records import to_record
from web_bench.paired.report import report_file, to_markdown
from web_bench.paired.results import MAX_TIMEOUT_MS, PolicyName, WebRun, append_run
from web_bench.paired.runner import RunContext, run_matrix
from web_bench.paired.site.catalog import SUITE_VERSION
from web_bench.paired.site.server import SiteServer
from web_bench.paired.turn import WebBrief


class ModelChoice(BaseModel):
    """Model selection for the model policy (applied identically to both backends)."""

    model_config = ConfigDict(extra="forbid")

    provider: str | None = None
    """openai | anthropic (else FARM_LLM_PROVIDER)."""
    model: str | None = None
    """Model name (else FARM_LLM_MODEL)."""
    reasoning_effort: str | None = None
    """Reasoning effort (else FARM_LLM_REASONING_EFFORT)."""


def check_timeout_ms(timeout_ms: int) -> None:
    """FarmError unless 1 ≤ `timeout_ms` ≤ MAX_TIMEOUT_MS (the bound a results line is read with)."""
    if not 1 <= timeout_ms <= MAX_TIMEOUT_MS:
        raise FarmError(f"--timeout-ms: must be 1…{MAX_TIMEOUT_MS} (a day), got {timeout_ms}",
                        hint="pass the time limit of one run in milliseconds, e.g. --timeout-ms 120000")


def default_run_id() -> str:
    """`web-YYYYmmddTHHMMSSZ`."""
    return "web-" + dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")


@contextmanager
def open_backends(
    names: list[BackendName], site: SiteServer, *, chromium: str | None = None, serial: str | None = None,
    virtual_phone: bool = False,
) -> Iterator[dict[BackendName, BrowserBackend]]:
    """Backends by name, closed on exit. android-chrome needs a phone on the adb server, or
    `virtual_phone` (a virtual phone whose Chrome socket reaches a local Chromium)."""
    with ExitStack() as stack:
        backends: dict[BackendName, BrowserBackend] = {}
        for name in names:
            if name == "playwright":
                from web_bench.browser.playwright_backend import PlaywrightBackend

                backend: BrowserBackend = PlaywrightBackend(chromium)
                stack.callback(backend.close)
            elif name == "extension":
                from web_bench.browser.extension_backend import ExtensionBackend

                backend = ExtensionBackend(chromium)
                stack.callback(backend.close)
            else:
                from web_bench.browser.android_chrome import AndroidChromeBackend

                if virtual_phone:
                    from web_bench.paired.virtual_phone import VirtualChromePhone

                    phone = stack.enter_context(VirtualChromePhone(chromium))
                    android = AndroidChromeBackend(
                        site.port, phone.serial, adb_port=phone.adb_port,
                        chrome_hint="the virtual phone's Chromium stopped answering; check --chromium",
                    )
                else:
                    android = AndroidChromeBackend(site.port, serial)
                stack.callback(android.close)
                # Now, not at the first run: without Chrome every android run would fail the same way,
                # after the run directory exists.
                android.connect()
                backend = android
            backends[name] = backend
        yield backends


def make_policy(kind: PolicyName, choice: ModelChoice, stack: ExitStack) -> Policy[WebBrief]:
    """The scripted policy, or the model policy with a farm.llm client (closed with `stack`)."""
    if kind == "scripted":
        from web_bench.paired.scripted import ScriptedPolicy

        return ScriptedPolicy()
    from farm.llm.client import make_client
    from farm.llm.model_config import LLMConfig
    from web_bench.paired.model_policy import model_policy

    cfg = LLMConfig.from_env(
        {"provider": choice.provider, "model": choice.model, "reasoning_effort": choice.reasoning_effort}
    )
    client = make_client(cfg)
    stack.callback(client.close)
    return model_policy(client)


def _join_run(runs_dir: Path, run_id: str, detail: dict[str, JsonValue]) -> tuple[RunStore, bool]:
    """Join run `run_id` (created, with this command line, when there is none) before any file is written."""

    def new() -> Manifest:
        return Manifest(run_id=run_id, created_at=utc_now(), command=list(sys.argv), code=code_fingerprint())

    return RunStore.join(runs_dir, run_id, LaneEntry(lane="web", detail=detail), new=new)


def _relative(path: Path, base: Path) -> str:
    try:
        return str(path.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(path.resolve())


def run_lane(
    runs: list[PlannedRun], *, run_id: str, runs_dir: Path, output: Path | None, policy_kind: PolicyName,
    choice: ModelChoice, timeout_ms: int, chromium: str | None = None, serial: str | None = None,
    virtual_phone: bool = False, on_run: Callable[[WebRun], None] = lambda _: None,
    policy: Policy[WebBrief] | None = None,
) -> tuple[Path, Path]:
    """Run the matrix; returns (results JSONL, report Markdown). Refuses an existing output. The run's current
    report (`runs/<id>/report.*`) is rebuilt at the end, counting the web units."""
    check_timeout_ms(timeout_ms)
    results = output or runs_dir / run_id / "web" / "results.jsonl"
    if results.exists() or results.is_symlink():
        raise FarmError(f"{results}: output already exists",
                        hint="pass a new --out; results of different runs are never appended together")
    report_path = results.with_suffix(".report.md")
    backend_names = list(dict.fromkeys(r.backend for r in runs))
    with ExitStack() as stack:
        site = stack.enter_context(SiteServer())
        backends = stack.enter_context(
            open_backends(backend_names, site, chromium=chromium, serial=serial, virtual_phone=virtual_phone)
        )
        active_policy = policy or make_policy(policy_kind, choice, stack)
        store, created = _join_run(
            runs_dir, run_id,
            {"suiteVersion": SUITE_VERSION, "policy": policy_kind, "backends": list(backend_names),
             "timeoutMs": timeout_ms, "runs": len(runs), "model": choice.model, "provider": choice.provider,
             "virtualPhone": virtual_phone},
        )
        run_dir = store.run_dir
        results.parent.mkdir(parents=True, exist_ok=True)
        create_new_text(results, "", what="results file")
        # The run-level record file every lane appends to (through the store); the shared aggregation reads it.
        outputs = [_relative(p, run_dir) for p in (results, report_path, store.records)]
        store.add_lane(LaneEntry(lane="web", outputs=outputs))
        devices: dict[str, str] = {
            name: str(serial_of) for name, b in backends.items() if (serial_of := getattr(b, "serial", None))
        }
        ctx = RunContext(run_id=run_id, site_url=site.base_url, policy=active_policy, policy_name=policy_kind,
                         timeout_ms=timeout_ms, provider=choice.provider, model=choice.model,
                         reasoning_effort=choice.reasoning_effort, devices=devices,
                         simulated={"android-chrome"} if virtual_phone else set())

        lines = 0

        def record(run: WebRun) -> None:
            nonlocal lines
            append_run(results, run)
            lines += 1
            store.append([to_record(run, source=f"{_relative(results, run_dir)}:{lines}")])
            on_run(run)

        finished = False
        try:
            run_matrix(runs, backends, ctx, record)
            finished = True
        finally:
            stop_note = None
            if ctx.stopped is not None:
                stop_note = f"web: stopped dispatch: {ctx.stopped}; {len(runs) - lines} of {len(runs)} runs not started"
                # Said once, whatever the caller prints per run: the remaining runs were never tried.
                print(stop_note, file=sys.stderr, flush=True)
            if created or stop_note is not None:
                def close(manifest: Manifest) -> None:
                    if stop_note is not None:
                        manifest.notes.append(stop_note)
                    if created:
                        manifest.finished_at = utc_now()
                        manifest.status = "interrupted" if stop_note else "finished" if finished else "failed"

                store.update(close)
    if results.stat().st_size:
        create_new_text(report_path, to_markdown(report_file(results)), what="report")
    # The run's current report (runs/<id>/report.*, headline.json) now counts the web units beside every other
    # lane's; the lane's own report above stays the seed-001 one.
    from farm.lane_plugins import current_report

    current_report(run_dir)
    return results, report_path
