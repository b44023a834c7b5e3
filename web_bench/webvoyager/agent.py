"""One agent attempt at one WebVoyager task: its own Chromium, the run prompt, only the browser tools, the
limits, the access guard, and the attempt's files.

Files, in the order they are written: `task.json` (at once), `trace.ndjson` (streamed), `session.json`,
`final-<sha256[:16]>.png` (when the page could be captured), `result.json` (atomic, last — its presence means
the attempt is over). The agent is the plain model policy (`farm.llm.policy.ModelPolicy`) on the loop every lane
uses (`farm.llm.loop.run_tool_loop`).
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from playwright.sync_api import Error as PlaywrightError
from pydantic import BaseModel, ConfigDict, Field, model_validator

from farm.errors import FarmError
from farm.fsutil import atomic_write_bytes, atomic_write_text
from farm.llm.client import ModelClient, make_client
from farm.llm.loop import run_tool_loop
from farm.llm.model_config import LLMConfig
from farm.llm.policy import ModelPolicy
from farm.llm.types import Message
from farm.manifest import utc_now
from web_bench.browser.contract import tool_specs
from web_bench.webvoyager.attempt import AttemptState, model_error_kind
from web_bench.webvoyager.har import DEFAULT_HAR_NAME, AttemptBrowser, open_browser
from web_bench.webvoyager.model import AgentResult, AgentStatus, ErrorKind, WvTask
from web_bench.webvoyager.model_setup import WvPrice
from web_bench.webvoyager.trace import (
    Interrupted,
    RunEnd,
    RunStart,
    ScreenshotEvent,
    SessionFile,
    TraceWriter,
    session_messages,
    write_session,
)

SYSTEM_PROMPT = (
    "You complete one task on a website by operating a web browser.\n"
    "Rules:\n"
    "- Use only the browser_* tools you are given. No other tool exists for you; calling one fails.\n"
    "- The browser has a fresh profile. Do not log in or create accounts, do not buy anything or place orders, "
    "and do not post, review, comment or send anything.\n"
    "- Do not try to solve captchas or get around access restrictions or challenge pages. If a site restricts "
    "access, say so; you may use another permitted source.\n"
    "- Keep the task as written (dates, old models, changed pages): report what the site shows, including when "
    "something is unavailable.\n"
    "- Pages are described by accessibility snapshots whose elements carry refs like [ref=e12]; act on elements "
    "by ref and take a new snapshot when the page changes.\n"
    "- When you are done, reply without calling any tool. That reply is your final answer: state the facts the "
    "task asks for plainly."
)


def run_prompt(task: WvTask) -> str:
    """The user message of an attempt: the task text and the start URL."""
    return f"Task: {task.confirmed_task}\nStart at {task.website}"


def opening(task: WvTask) -> list[Message]:
    """The first messages of an attempt's conversation: the system prompt and the run prompt."""
    return [Message.system(SYSTEM_PROMPT), Message.user(run_prompt(task))]


def prompt_sha256() -> str:
    """SHA-256 of the run prompt (system prompt and user template), for the run manifest."""
    template = run_prompt(WvTask(task_id="X--0", confirmed_task="{task}", website="{url}", site="Apple"))
    return hashlib.sha256(f"{SYSTEM_PROMPT}\n---\n{template}".encode()).hexdigest()


class AgentSettings(BaseModel):
    """How every attempt of a run is made (no secrets: the model's key is named, not held)."""

    model_config = ConfigDict(extra="forbid")

    timeout_ms: int = Field(default=600_000, gt=0)
    """Time limit of an attempt, from the worker's start to the agent's stop."""
    max_rounds: int = Field(default=50, ge=1)
    """Logical model steps allowed; running out ends the attempt as `step_limit`."""
    headed: bool = False
    """Show the browser window (needs a display); headless when false."""
    chromium: str | None = None
    """Chromium executable; null = `$FARM_CHROMIUM` or /usr/bin/chromium."""
    llm: LLMConfig
    """The agent's model (the key's variable name only)."""
    price: WvPrice | None = None
    """The agent model's price; null = unknown, so costs stay null."""
    har_mode: Literal["live", "record", "replay"] = "live"
    """`live`: pages from the network (or the stand-in); `record`: also record them to a HAR file;
    `replay`: pages only from a recorded HAR file."""
    har_path: str | None = None
    """HAR file to record to (default `har/recording.har` in the attempt directory) or to replay from."""
    stand_in: str | None = None
    """Directory of stand-in sites: the three sites are served from it and nothing else leaves the machine."""

    @model_validator(mode="after")
    def _har_consistent(self) -> AgentSettings:
        if self.har_mode == "replay" and not self.har_path:
            raise ValueError("har_mode replay needs har_path (the recording to replay)")
        if self.har_mode == "replay" and self.stand_in:
            raise ValueError("har_mode replay serves pages only from the recording: leave stand_in unset")
        return self


def check_display(settings: AgentSettings, environ: Mapping[str, str] | None = None) -> None:
    """FarmError when a visible browser is asked for and there is no display to show it on."""
    env = os.environ if environ is None else environ
    if settings.headed and not (env.get("DISPLAY") or env.get("WAYLAND_DISPLAY")):
        raise FarmError("--headed: no display (DISPLAY and WAYLAND_DISPLAY are unset)",
                        hint="run under a desktop session or xvfb-run, or pass --headless")


def run_attempt(
    task: WvTask,
    attempt: int,
    attempt_dir: Path,
    settings: AgentSettings,
    *,
    client: ModelClient | None = None,
    cancel: threading.Event | None = None,
) -> AgentResult:
    """Make one attempt in its own Chromium and write its files; returns what result.json holds.

    A FarmError is raised only before anything is written (no display for --headed, a finished attempt
    directory); every later failure is recorded in the result.
    """
    check_display(settings)
    if (attempt_dir / "result.json").exists():
        raise FarmError(f"{attempt_dir / 'result.json'}: this attempt already finished",
                        hint="attempts are never overwritten; use the next attempt directory")
    attempt_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(attempt_dir / "task.json", task.model_dump_json(indent=2) + "\n")
    trace = TraceWriter(attempt_dir / "trace.ndjson")
    try:
        return _Runner(task, attempt, attempt_dir, settings, trace, cancel or threading.Event()).run(client)
    finally:
        trace.close()


class _Runner:
    def __init__(self, task: WvTask, attempt: int, attempt_dir: Path, settings: AgentSettings, trace: TraceWriter,
                 cancel: threading.Event) -> None:
        self.task = task
        self.attempt = attempt
        self.dir = attempt_dir
        self.settings = settings
        self.trace = trace
        self.state = AttemptState(settings.timeout_ms, settings.price, settings.llm.model, trace, cancel)
        self.messages = opening(task)

    def run(self, client: ModelClient | None) -> AgentResult:
        s, st = self.settings, self.state
        self.trace.emit(RunStart(
            task_id=self.task.task_id, attempt=self.attempt, provider=s.llm.provider, model=s.llm.model,
            timeout_ms=s.timeout_ms, max_rounds=s.max_rounds, headed=s.headed, har_mode=s.har_mode,
            stand_in=s.stand_in is not None, system_prompt=SYSTEM_PROMPT, prompt=run_prompt(self.task),
        ))
        owned: ModelClient | None = None
        try:
            if client is None:
                try:
                    client = owned = make_client(s.llm)
                except FarmError as exc:
                    self._fail("error", "auth", exc.line())
            if client is not None:
                st.browser = self._open_browser()
            if client is not None and st.browser is not None:
                self._loop(client)
        except Exception as exc:  # noqa: BLE001 - a crash is recorded as the attempt's result, never lost
            kind: ErrorKind = "interrupted" if st.cancel.is_set() else (
                "browser_error" if isinstance(exc, PlaywrightError) else "internal")
            st.answer = st.last_text
            self._fail("error", kind, f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:300])
        finished_at = utc_now()
        duration_ms = st.elapsed_ms()
        browser = st.browser
        shot, shot_error = self._screenshot(browser)
        if browser is not None:
            browser.close()
        if owned is not None:
            owned.close()
        session = SessionFile(task_id=self.task.task_id, attempt=self.attempt, status=st.status,
                              messages=session_messages(self.messages))
        write_session(self.dir / "session.json", session)
        result = AgentResult(
            task_id=self.task.task_id, attempt=self.attempt, status=st.status, final_answer=st.answer,
            error=st.error, error_kind=st.error_kind, steps=st.steps, failed_steps=st.failed_steps,
            incomplete_steps=st.incomplete_steps, model_rounds=len(st.calls), model_steps=st.model_steps,
            retry_count=sum(1 for c in st.calls if c.retry), started_at=st.started_at, finished_at=finished_at,
            duration_ms=round(duration_ms, 3), model=s.llm.model, model_calls=st.calls, usage=st.totals(),
            final_screenshot=shot, screenshot_error=shot_error,
            restricted_origins=list(browser.guard.restricted_origins) if browser else [],
            restricted_results=browser.guard.restricted_results if browser else 0,
            har=self._har_name(browser), har_misses=browser.har_misses if browser else 0,
        )
        self.trace.emit(RunEnd(status=result.status, error_kind=result.error_kind, error=result.error,
                               final_answer=result.final_answer, steps=result.steps, model_rounds=result.model_rounds))
        atomic_write_text(self.dir / "result.json", result.model_dump_json(indent=2) + "\n")
        return result

    def _open_browser(self) -> AttemptBrowser | None:
        s = self.settings
        har_file: Path | None = None
        if s.har_mode != "live":
            har_file = Path(s.har_path) if s.har_path else self.dir / DEFAULT_HAR_NAME
        try:
            return open_browser(
                chromium=s.chromium, headed=s.headed, har_mode=s.har_mode, har_file=har_file,
                stand_in=Path(s.stand_in) if s.stand_in else None,
                on_guard=self.state.on_guard, on_network=self.state.on_network,
            )
        except FarmError as exc:
            self._fail("error", "browser_error", exc.line())
            return None

    def _loop(self, client: ModelClient) -> None:
        st = self.state
        policy = ModelPolicy(client, tool_specs(), opening)
        try:
            out = run_tool_loop(policy, self.task, st.execute, max_steps=self.settings.max_rounds,
                                expired=st.expired, hooks=st)
            # What a halt left unread still belongs in session.json.
            policy.take(out.unread)
        finally:
            self.messages = policy.messages
        st.answer = out.answer if out.status == "completed" else out.last_text
        if out.status == "completed":
            st.status = "completed"
        elif out.status == "max_steps":
            self._fail("step_limit", None, f"no final answer within {self.settings.max_rounds} model rounds")
        elif out.status == "timeout":
            self._fail("timeout", None, f"time limit of {self.settings.timeout_ms} ms reached")
        elif out.status == "model_error" and out.error is not None:
            self._fail("error", model_error_kind(out.error), out.error.line())
        elif out.halt is not None:
            reason = out.halt.reason
            if reason == "timeout":
                self._fail("timeout", None, out.halt.detail)
                return
            kind: ErrorKind = "interrupted" if reason == "interrupted" else "website_unavailable"
            self._fail("error", kind, out.halt.detail)

    def _fail(self, status: AgentStatus, kind: ErrorKind | None, error: str) -> None:
        if kind == "interrupted":
            self.trace.emit(Interrupted(reason=error))
        self.state.status, self.state.error_kind, self.state.error = status, kind, error

    def _screenshot(self, browser: AttemptBrowser | None) -> tuple[str | None, str | None]:
        if browser is None:
            error = "no browser page (the browser did not start)"
            self.trace.emit(ScreenshotEvent(error=error))
            return None, error
        try:
            png = browser.screenshot()
        except Exception as exc:  # noqa: BLE001 - any capture failure is reported, never a faked file
            error = f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:300]
            self.trace.emit(ScreenshotEvent(error=error))
            return None, error
        digest = hashlib.sha256(png).hexdigest()
        name = f"final-{digest[:16]}.png"
        atomic_write_bytes(self.dir / name, png)
        self.trace.emit(ScreenshotEvent(path=name, sha256=digest))
        return name, None

    def _har_name(self, browser: AttemptBrowser | None) -> str | None:
        if browser is None or browser.har_file is None:
            return None
        path = browser.har_file
        return str(path.relative_to(self.dir)) if path.is_relative_to(self.dir) else str(path)

