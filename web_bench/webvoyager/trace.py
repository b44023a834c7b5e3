"""An attempt's trace (`trace.ndjson`, one JSON event per line, streamed as the attempt runs) and its final
session copy (`session.json`, the conversation as text), with the readers the judges and the store use.

Neither file holds images or credentials: screenshots are noted by size, the API key never reaches a model
message, and the model configuration is only named (provider, model).
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import IO, Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from farm.errors import FarmError
from farm.fsutil import atomic_write_text
from farm.llm.types import Message
from farm.manifest import utc_now
from web_bench.webvoyager.model import (
    WV_SCHEMA_VERSION,
    AgentStatus,
    BrowserObservation,
    CallOutcome,
    ErrorKind,
    ModelCall,
)


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid")

    at: str = Field(default_factory=utc_now)
    """UTC ISO time the event was written."""


class RunStart(_Event):
    """The attempt began (written right after task.json)."""

    kind: Literal["run_start"] = "run_start"
    task_id: str
    """Task id."""
    attempt: int
    """Attempt number."""
    provider: str | None = None
    """Model API family."""
    model: str | None = None
    """Agent model."""
    timeout_ms: int
    """Time limit of the attempt."""
    max_rounds: int
    """Model-step limit."""
    headed: bool
    """Whether the browser window is visible."""
    har_mode: Literal["live", "record", "replay"]
    """Where pages come from."""
    stand_in: bool
    """Whether the three sites were served from local stand-in pages."""
    system_prompt: str
    """The system prompt (the run rules)."""
    prompt: str
    """The user prompt (task text and start URL)."""


class TracedCall(BaseModel):
    """A tool call as the model requested it."""

    model_config = ConfigDict(extra="forbid")

    id: str
    """Provider's call id."""
    name: str
    """Tool name."""
    arguments: str
    """Arguments exactly as the model sent them."""


class ModelRequest(_Event):
    """A logical model step starts."""

    kind: Literal["model_request"] = "model_request"
    step: int
    """Logical step (1-based)."""
    messages: int
    """Messages in the conversation sent."""


class ModelCallEvent(_Event):
    """One HTTP request of a step (retries and failures included), with its usage and cost."""

    kind: Literal["model_call"] = "model_call"
    call: ModelCall
    """The request."""


class ModelRetry(_Event):
    """A request failed transiently and the client retried it."""

    kind: Literal["model_retry"] = "model_retry"
    step: int
    """Logical step."""
    request: int
    """1-based number of the failed request within the step."""
    outcome: CallOutcome
    """Why it failed."""
    status: int | None = None
    """HTTP status, when a response arrived."""
    wait_ms: float
    """Backoff (or Retry-After) slept before the next request."""


class ModelResponse(_Event):
    """A step's reply."""

    kind: Literal["model_response"] = "model_response"
    step: int
    """Logical step."""
    text: str | None = None
    """Text of the reply."""
    tool_calls: list[TracedCall] = Field(default_factory=list)
    """Tool calls requested."""
    stop: str
    """Neutral stop reason."""
    thinking_chars: int = 0
    """Length of the reasoning text returned (the text itself is in session.json)."""


class ModelError(_Event):
    """A step's model call failed for good."""

    kind: Literal["model_error"] = "model_error"
    step: int
    """Logical step."""
    error: str
    """One-line error (credentials scrubbed)."""
    error_kind: ErrorKind
    """How the attempt classifies it."""


class ToolCallEvent(_Event):
    """A tool call starts."""

    kind: Literal["tool_call"] = "tool_call"
    seq: int
    """1-based number of the tool call in the attempt."""
    call_id: str
    """Provider's call id."""
    tool: str
    """Tool name."""
    arguments: str
    """Arguments as the model sent them."""


class ToolResultEvent(_Event):
    """A tool call's result as the model read it."""

    kind: Literal["tool_result"] = "tool_result"
    seq: int
    """Number of the call it answers."""
    call_id: str
    """Provider's call id."""
    tool: str
    """Tool name."""
    url: str | None = None
    """Page URL after the call."""
    captured_at: str
    """UTC ISO time the result was captured."""
    text: str
    """Text result."""
    is_error: bool = False
    """Whether the call failed."""
    duration_ms: float
    """Wall time of the call."""
    image_bytes: int | None = None
    """Size of the screenshot handed to the model (the image is not kept here)."""


class GuardEvent(_Event):
    """The access guard acted on a tool call."""

    kind: Literal["guard"] = "guard"
    seq: int | None = None
    """Tool call concerned."""
    action: Literal["restricted", "refused", "network_failure", "network_blocked"]
    """`restricted`: a restriction/challenge page was detected; `refused`: navigation to a restricted or
    blocked origin was refused without a request; `network_failure`: navigation failed on the network;
    `network_blocked`: a second failure stopped navigation to the origin."""
    origin: str
    """Origin concerned."""
    reason: str
    """What was detected or why."""


class NetworkEvent(_Event):
    """A browser request that was not allowed to reach the network."""

    kind: Literal["network"] = "network"
    action: Literal["har_miss", "offline_block"]
    """`har_miss`: not in the replayed recording; `offline_block`: outside the stand-in sites (aborted)."""
    url: str
    """Request URL."""


class ScreenshotEvent(_Event):
    """The final screenshot, or why there is none."""

    kind: Literal["screenshot"] = "screenshot"
    path: str | None = None
    """File name relative to the attempt directory."""
    sha256: str | None = None
    """SHA-256 of the PNG."""
    error: str | None = None
    """Why it failed (then there is no file)."""


class Interrupted(_Event):
    """The attempt was stopped from outside (SIGTERM, Ctrl-C, cancel)."""

    kind: Literal["interrupted"] = "interrupted"
    reason: str
    """What stopped it."""


class RunEnd(_Event):
    """The attempt ended (the last event)."""

    kind: Literal["run_end"] = "run_end"
    status: AgentStatus
    """How it ended."""
    error_kind: ErrorKind | None = None
    """Why it errored."""
    error: str | None = None
    """One-line error."""
    final_answer: str | None = None
    """The answer kept."""
    steps: int
    """Tool calls."""
    model_rounds: int
    """Model requests."""


TraceEvent = Annotated[
    RunStart | ModelRequest | ModelCallEvent | ModelRetry | ModelResponse | ModelError | ToolCallEvent
    | ToolResultEvent | GuardEvent | NetworkEvent | ScreenshotEvent | Interrupted | RunEnd,
    Field(discriminator="kind"),
]
_EVENT: TypeAdapter[TraceEvent] = TypeAdapter(TraceEvent)


class TraceWriter:
    """Appends events to `trace.ndjson`, one flushed line each, so a killed attempt leaves what happened."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.events: list[TraceEvent] = []
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._handle: IO[str] | None = path.open("a", encoding="utf-8")

    def emit(self, event: TraceEvent) -> None:
        """Write one event (ignored once closed)."""
        line = event.model_dump_json() + "\n"
        with self._lock:
            if self._handle is None:
                return
            self._handle.write(line)
            self._handle.flush()
            self.events.append(event)

    def close(self) -> None:
        """Flush to disk and close."""
        with self._lock:
            if self._handle is not None:
                self._handle.flush()
                os.fsync(self._handle.fileno())
                self._handle.close()
                self._handle = None


def read_trace(path: Path) -> list[TraceEvent]:
    """Every event of a trace. A last line cut short (the writer was killed mid-line) is dropped; any other
    unreadable line is a FarmError naming it."""
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FarmError(f"{path}: cannot read the trace ({exc})") from None
    lines = raw.split("\n")
    complete = raw.endswith("\n")
    if lines and lines[-1] == "":
        lines.pop()
    events: list[TraceEvent] = []
    for number, line in enumerate(lines, 1):
        last = number == len(lines)
        try:
            events.append(_EVENT.validate_json(line))
        except ValidationError as exc:
            if last and not complete:
                break  # the writer died in the middle of this line
            first = exc.errors(include_input=False, include_url=False)[0]
            raise FarmError(
                f"{path}:{number}: not a trace event ({first['msg']})",
                hint="the trace is corrupt; re-run the attempt or inspect the file by hand",
            ) from None
    return events


def browser_observations(trace_path: Path) -> list[BrowserObservation]:
    """The browser tool results of an attempt, in order, as the evidence judge cites them (of the last run in
    the file, should a killed worker's run have been continued in the same directory)."""
    events = read_trace(trace_path)
    starts = [n for n, e in enumerate(events) if isinstance(e, RunStart)]
    return [
        BrowserObservation(seq=e.seq, tool=e.tool, url=e.url, captured_at=e.captured_at, text=e.text,
                           is_error=e.is_error)
        for e in events[starts[-1] if starts else 0:] if isinstance(e, ToolResultEvent)
    ]


class SessionMessage(BaseModel):
    """One conversation message, text only."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["system", "user", "assistant", "tool"]
    """Who said it."""
    text: str | None = None
    """Text content."""
    tool_calls: list[TracedCall] = Field(default_factory=list)
    """Tool calls of an assistant message."""
    tool_call_id: str | None = None
    """For tool results: the call answered."""
    images: int = 0
    """Images that were attached (not kept)."""
    thinking: list[str] = Field(default_factory=list)
    """Reasoning text of an assistant message (signatures and encrypted blocks dropped)."""


class SessionFile(BaseModel):
    """`session.json`: the attempt's final conversation."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = WV_SCHEMA_VERSION
    """Format version."""
    task_id: str
    """Task id."""
    attempt: int
    """Attempt number."""
    status: AgentStatus
    """How the attempt ended."""
    messages: list[SessionMessage]
    """The conversation in order."""


def session_messages(messages: list[Message]) -> list[SessionMessage]:
    """The conversation as text (images counted, not kept)."""
    return [
        SessionMessage(
            role=m.role, text=m.text, tool_call_id=m.tool_call_id, images=len(m.images),
            tool_calls=[TracedCall(id=c.id, name=c.name, arguments=c.arguments_json) for c in m.tool_calls],
            thinking=[b.text for b in m.thinking if b.text],
        )
        for m in messages
    ]


def write_session(path: Path, session: SessionFile) -> None:
    """Write session.json atomically."""
    atomic_write_text(path, json.dumps(session.model_dump(mode="json"), ensure_ascii=False, indent=1) + "\n")


def read_session(path: Path) -> SessionFile:
    """Read session.json (FarmError when missing or invalid)."""
    try:
        return SessionFile.model_validate_json(path.read_bytes())
    except (OSError, ValidationError) as exc:
        raise FarmError(f"{path}: not a readable session.json ({type(exc).__name__})") from None
