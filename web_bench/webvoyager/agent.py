"""One agent attempt at one WebVoyager task: its own Chromium, the run prompt, only the browser tools, the
limits, the access guard, and the attempt's files.

Files, in the order they are written: `task.json` (at once), `trace.ndjson` (streamed), `session.json`,
`final-<sha256[:16]>.png` (when the page could be captured), `result.json` (atomic, last — its presence means
the attempt is over). The model loop is the one every lane uses (`farm.llm.loop.run_tool_loop`).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from playwright.sync_api import Error as PlaywrightError
from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

from farm.errors import FarmError
from farm.fsutil import atomic_write_text, new_file_mode
from farm.llm.client import ModelCallError, ModelClient, make_client
from farm.llm.config import LLMConfig
from farm.llm.loop import LoopHalt, LoopHooks, run_tool_loop
from farm.llm.types import Message, ModelTurn, ToolCall, ToolSpec
from farm.manifest import utc_now
from web_bench.browser.contract import ACTION_TIMEOUT_MS, NAVIGATION_TIMEOUT_MS, TOOLS_BY_NAME, ToolResult
from web_bench.model_policy import tool_specs
from web_bench.webvoyager import accounting
from web_bench.webvoyager.config import WvPrice
from web_bench.webvoyager.guard import GuardAction
from web_bench.webvoyager.har import DEFAULT_HAR_NAME, AttemptBrowser, open_browser
from web_bench.webvoyager.model import AgentResult, AgentStatus, ErrorKind, ModelCall, UsageTotals, WvTask
from web_bench.webvoyager.trace import (
    GuardEvent,
    Interrupted,
    ModelCallEvent,
    ModelError,
    ModelRequest,
    ModelResponse,
    ModelRetry,
    NetworkEvent,
    RunEnd,
    RunStart,
    ScreenshotEvent,
    SessionFile,
    ToolCallEvent,
    ToolResultEvent,
    TracedCall,
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
        self.messages = [Message.system(SYSTEM_PROMPT), Message.user(run_prompt(task))]

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
        out = run_tool_loop(client, self.messages, tool_specs(), st.execute, max_steps=self.settings.max_rounds,
                            expired=st.expired, hooks=st)
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
        _write_bytes(self.dir / name, png)
        self.trace.emit(ScreenshotEvent(path=name, sha256=digest))
        return name, None

    def _har_name(self, browser: AttemptBrowser | None) -> str | None:
        if browser is None or browser.har_file is None:
            return None
        path = browser.har_file
        return str(path.relative_to(self.dir)) if path.is_relative_to(self.dir) else str(path)


def _write_bytes(path: Path, data: bytes) -> None:
    """Write a binary file atomically (temp file, fsync, rename)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, new_file_mode())
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


_QUOTA_SHADOWED = frozenset({"timeout", "connection", "server", "rate_limit"})
"""Failures that may hide a used-up quota when an earlier request of the same step reported one."""
_UNAVAILABLE = frozenset({"rate_limit", "server", "timeout", "connection"})


def model_error_kind(exc: ModelCallError) -> ErrorKind:
    """How a failed model step counts: quota, auth, service_unavailable or model_error."""
    earlier = [a.outcome for a in exc.attempt_log[:-1]]
    if exc.kind == "quota" or (exc.kind in _QUOTA_SHADOWED and "quota" in earlier):
        return "quota"
    if exc.kind == "auth" or (exc.kind == "client" and exc.status in (401, 403)):
        return "auth"
    if exc.kind in _UNAVAILABLE:
        return "service_unavailable"
    return "model_error"


class AttemptState(LoopHooks):
    """Recorder and gatekeeper of one attempt: the loop's hooks, the tool executor, the limits, the counts."""

    def __init__(self, timeout_ms: int, price: WvPrice | None, model: str, trace: TraceWriter,
                 cancel: threading.Event) -> None:
        self.started_at = utc_now()
        self._t0 = time.monotonic()
        self.timeout_ms = timeout_ms
        self.price = price
        self.model = model
        self.trace = trace
        self.cancel = cancel
        self.browser: AttemptBrowser | None = None
        self.calls: list[ModelCall] = []
        self.status: AgentStatus = "error"
        self.error_kind: ErrorKind | None = None
        self.error: str | None = None
        self.answer: str | None = None
        self.last_text: str | None = None
        self.steps = self.failed_steps = self.incomplete_steps = self.model_steps = 0
        self._pending = 0  # tool calls of the latest reply not run yet
        self._seq = 0
        self._step = 0
        self._step_started = self.started_at

    # -- limits ------------------------------------------------------------------------------
    def elapsed_ms(self) -> float:
        """Milliseconds since the attempt started."""
        return (time.monotonic() - self._t0) * 1000.0

    def expired(self) -> bool:
        """Whether the time limit has passed."""
        return self.elapsed_ms() >= self.timeout_ms

    def _stop(self, reason: str, detail: str) -> LoopHalt:
        # Calls the model asked for that will never run are cut off: counted, with no result.
        self.steps += self._pending
        self.incomplete_steps += self._pending
        self._pending = 0
        return LoopHalt(reason, detail)

    def halt(self) -> None:
        if self.cancel.is_set():
            raise self._stop("interrupted", "the attempt was interrupted")
        guard = self.browser.guard if self.browser else None
        if guard is not None and guard.exhausted:
            raise self._stop("website_unavailable", f"{guard.restricted_results} restricted results "
                             f"({', '.join(guard.restricted_origins)}): the site is restricting access")

    # -- model -------------------------------------------------------------------------------
    def on_request(self, step: int, messages: Sequence[Message]) -> None:
        self._step = self.model_steps = step
        self._step_started = utc_now()
        self.trace.emit(ModelRequest(step=step, messages=len(messages)))

    def request(self, client: ModelClient, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelTurn:
        """The model call on a helper thread, so the time limit and a cancel end the wait (the request itself is
        abandoned; it may still have been billed)."""
        box: dict[str, ModelTurn | BaseException] = {}
        done = threading.Event()
        sent = list(messages)  # the loop goes on appending to its own list

        def work() -> None:
            try:
                box["reply"] = client.complete(sent, tools, stream=True)
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
                box["error"] = exc
            finally:
                done.set()

        began = time.monotonic()
        threading.Thread(target=work, name="wv-model-call", daemon=True).start()
        while not done.wait(0.05):
            if self.cancel.is_set() or self.expired():
                why = "interrupted" if self.cancel.is_set() else "timeout"
                self._abandoned(began, why)
                detail = "the attempt was interrupted" if why == "interrupted" else (
                    f"time limit of {self.timeout_ms} ms reached while waiting for the model")
                raise self._stop(why, detail)
        if "error" in box:
            raise box["error"]  # type: ignore[misc]
        reply = box["reply"]
        assert isinstance(reply, ModelTurn)
        return reply

    def _abandoned(self, began: float, why: str) -> None:
        step = self._step
        call = ModelCall(role="agent", step=step, started_at=self._step_started,
                         duration_ms=round((time.monotonic() - began) * 1000.0, 3), outcome="timeout",
                         model=self.model, usage_expected=True,
                         error=f"no reply before the attempt stopped ({why})")
        self._record(step, [call])

    def _record(self, step: int, calls: list[ModelCall], waits: Sequence[float] = ()) -> None:
        for n, call in enumerate(calls):
            self.calls.append(call)
            self.trace.emit(ModelCallEvent(call=call))
            if call.outcome != "ok" and n < len(calls) - 1:
                wait = waits[n] if n < len(waits) else 0.0
                self.trace.emit(ModelRetry(step=step, request=n + 1, outcome=call.outcome, status=call.status,
                                           wait_ms=wait))

    def on_reply(self, step: int, reply: ModelTurn) -> None:
        calls = accounting.calls_from_turn(reply, role="agent", step=step, started_at=self._step_started,
                                           price=self.price)
        self._record(step, calls, [a.wait_after_ms for a in reply.attempts])
        self.trace.emit(ModelResponse(
            step=step, text=reply.text, stop=reply.stop, thinking_chars=sum(len(b.text) for b in reply.thinking),
            tool_calls=[TracedCall(id=c.id, name=c.name, arguments=c.arguments_json) for c in reply.tool_calls],
        ))
        self._pending = len(reply.tool_calls)
        if reply.text and reply.text.strip():
            self.last_text = reply.text

    def on_error(self, step: int, exc: ModelCallError) -> None:
        calls = accounting.calls_from_error(exc, role="agent", step=step, started_at=self._step_started,
                                            price=self.price, model=self.model)
        self._record(step, calls, [a.wait_after_ms for a in exc.attempt_log])
        self.trace.emit(ModelError(step=step, error=exc.line(), error_kind=model_error_kind(exc)))

    def error_kind_of(self, exc: ModelCallError) -> ErrorKind:
        """The error kind of a failed step."""
        return model_error_kind(exc)

    def totals(self) -> UsageTotals:
        """Usage and cost over every request."""
        return accounting.totals(self.calls)

    # -- tools -------------------------------------------------------------------------------
    def on_bad_arguments(self, call: ToolCall, error: str) -> None:
        seq = self._begin(call)
        self._end(seq, call, ToolResult(text=f"Error: {error}", is_error=True), time.monotonic())

    def execute(self, call: ToolCall, arguments: dict[str, JsonValue]) -> ToolResult:
        """Run one tool call under the limits and the access guard, traced."""
        if self.cancel.is_set():
            raise self._stop("interrupted", "the attempt was interrupted")
        if self.expired():
            raise self._stop("timeout", f"time limit of {self.timeout_ms} ms reached")
        seq = self._begin(call)
        began = time.monotonic()
        browser = self.browser
        if call.name not in TOOLS_BY_NAME or browser is None:
            result = ToolResult(is_error=True,
                                text=f"Error: tool {call.name!r} is not allowed; use only the browser_* tools")
        else:
            # Playwright waits are cut to the time left, so a slow page cannot carry the attempt far past it.
            left = max(1, int(self.timeout_ms - self.elapsed_ms()))
            browser.page.set_default_timeout(min(ACTION_TIMEOUT_MS, left))
            browser.page.set_default_navigation_timeout(min(NAVIGATION_TIMEOUT_MS, left))
            result = browser.guard.call(call.name, arguments)
        self._end(seq, call, result, began)
        return result

    def _begin(self, call: ToolCall) -> int:
        self._seq += 1
        self.steps += 1
        self._pending = max(0, self._pending - 1)
        self.trace.emit(ToolCallEvent(seq=self._seq, call_id=call.id, tool=call.name, arguments=call.arguments_json))
        return self._seq

    def _end(self, seq: int, call: ToolCall, result: ToolResult, began: float) -> None:
        if result.is_error:
            self.failed_steps += 1
        url: str | None = None
        if self.browser is not None:
            try:
                url = self.browser.page.url
            except PlaywrightError:
                url = None
        self.trace.emit(ToolResultEvent(
            seq=seq, call_id=call.id, tool=call.name, url=url, captured_at=utc_now(), text=result.text,
            is_error=result.is_error, duration_ms=round((time.monotonic() - began) * 1000.0, 3),
            image_bytes=len(result.image_jpeg) if result.image_jpeg else None,
        ))

    # -- browser listeners -------------------------------------------------------------------
    def on_guard(self, action: GuardAction, origin: str, reason: str) -> None:
        """The guard acted on the current tool call."""
        self.trace.emit(GuardEvent(seq=self._seq or None, action=action, origin=origin, reason=reason))

    def on_network(self, action: Literal["har_miss", "offline_block"], url: str) -> None:
        """A request was kept from the network."""
        self.trace.emit(NetworkEvent(action=action, url=url))
