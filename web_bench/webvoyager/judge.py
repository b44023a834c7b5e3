"""What both WebVoyager judges share: one logged judge request, reply-text checks, and the verdict.

A judge problem (API failure, quota, a truncated or malformed reply) never raises and never fails the task:
the verdict gets `pass: null` and a `judge_error` saying what went wrong, so the task stays unjudged and
`--judge-only` can score it later. Every request, response, error and the verdict are appended to the
attempt's `judge-<mode>.ndjson` (message texts only; no headers, so no credentials).

The modes live in `judge_reference.py` (upstream judge-prompt.md, task + answer only) and `judge_evidence.py`
(strict evidence judge citing browser observations).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, JsonValue

from farm.llm.client import ModelCallError, ModelClient
from farm.llm.provider_errors import lane_error_kind
from farm.llm.types import Message, ModelTurn
from farm.manifest import utc_now
from farm.results.record import Tokens
from web_bench.webvoyager.accounting import calls_from_error, calls_from_turn, totals
from web_bench.webvoyager.model import AgentResult, BrowserObservation, ErrorKind, JudgeVerdict, ModelCall, WvTask
from web_bench.webvoyager.model_setup import WvPrice

VerdictMode = Literal["reference", "evidence"]


class PromptText(Protocol):
    """A judge prompt as loaded and hash-checked (`prompt.JudgePrompt`)."""

    @property
    def text(self) -> str:
        """The prompt, verbatim."""

    @property
    def sha256(self) -> str:
        """SHA-256 of `text`."""


class LoggedMessage(BaseModel):
    """One message of a logged judge request: role and text only (judge requests carry no images or tools)."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["user"]
    """Judge requests are one user message."""
    text: str
    """The message text, verbatim."""


class JudgeLogLine(BaseModel):
    """One line of `judge-<mode>.ndjson`."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["request", "response", "error", "verdict"]
    """What the line records."""
    at: str
    """UTC ISO time it was written."""
    request: int | None = None
    """Judge request number (1 = the first, 2 = the evidence judge's repair); on the verdict line, the number of
    requests made."""
    prompt_sha256: str | None = None
    """SHA-256 of the judge prompt in use."""
    model: str | None = None
    """Judge model as configured (or as the provider reported it, on responses)."""
    messages: list[LoggedMessage] | None = None
    """Request: the messages sent, role and text only."""
    raw: str | None = None
    """Response: the reply text exactly as received."""
    usage: Tokens | None = None
    """Response: token usage the provider reported."""
    stop: str | None = None
    """Response: the provider's stop / finish reason verbatim."""
    error: str | None = None
    """Error: the failure (credentials scrubbed); verdict: the judge_error, if any."""
    verdict: JudgeVerdict | None = None
    """Verdict: the recorded verdict."""


def append_log(path: Path, line: JudgeLogLine) -> None:
    """Append one line and fsync. A line torn by a crash gets a newline first, so it stays one bad line."""
    data = line.model_dump_json(by_alias=True) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+b") as handle:
        if handle.tell() > 0:
            handle.seek(-1, os.SEEK_END)
            if handle.read(1) != b"\n":
                data = "\n" + data
        handle.write(data.encode("utf-8"))
        handle.flush()
        os.fsync(handle.fileno())


class ReplyInvalid(ValueError):
    """The judge's reply cannot be used; the message says what was wrong (it becomes `judge_error`)."""


def reply_body(turn: ModelTurn) -> str:
    """The reply text with one surrounding code fence (```json or bare ```) removed; ReplyInvalid for a
    truncated, refused or empty reply. Nothing else is stripped: prose around the JSON is left in, so the
    JSON parse refuses it."""
    if turn.stop == "max_tokens":
        raise ReplyInvalid(f"truncated reply (stop reason {turn.raw_stop_reason or 'max_tokens'})")
    if turn.stop == "refusal":
        raise ReplyInvalid(f"the model refused (stop reason {turn.raw_stop_reason or 'refusal'})")
    text = (turn.text or "").strip()
    if not text:
        raise ReplyInvalid("empty reply")
    fenced = re.fullmatch(r"```(?:json)?[ \t]*\n(.*)\n[ \t]*```", text, flags=re.DOTALL | re.IGNORECASE)
    return fenced.group(1) if fenced else text


def _no_duplicate_keys(pairs: list[tuple[str, JsonValue]]) -> dict[str, JsonValue]:
    keys = [k for k, _ in pairs]
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    if repeated:
        # json.loads would keep the last of `"pass": true, "pass": false` silently.
        raise ReplyInvalid(f"key {repeated[0]!r} appears more than once in one object")
    return dict(pairs)


def parse_json(body: str) -> JsonValue:
    """Strict JSON of the whole body (prose before or after is an error; duplicate keys are refused)."""
    try:
        value: JsonValue = json.loads(body, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as exc:
        where = "text after the JSON" if exc.msg == "Extra data" else exc.msg
        raise ReplyInvalid(f"reply is not valid JSON ({where} at line {exc.lineno} column {exc.colno})") from None
    return value


def check_verdict_object(obj: JsonValue, required: Sequence[str], what: str) -> dict[str, JsonValue]:
    """`obj` as an object with exactly the `required` keys, a boolean `pass` and a non-empty string `reason`;
    ReplyInvalid naming the first problem."""
    if not isinstance(obj, dict):
        raise ReplyInvalid(f"{what} is {_json_type(obj)}, not an object")
    missing = [k for k in required if k not in obj]
    if missing:
        raise ReplyInvalid(f"{what} lacks {', '.join(missing)}")
    extra = sorted(set(obj) - set(required))
    if extra:
        raise ReplyInvalid(f"{what} has unexpected key(s) {', '.join(extra)}")
    if not isinstance(obj["pass"], bool):
        raise ReplyInvalid(f"{what}: pass is {_json_type(obj['pass'])}, not a boolean")
    reason = obj["reason"]
    if not isinstance(reason, str) or not reason.strip():
        raise ReplyInvalid(f"{what}: reason is {_json_type(reason)}, not a non-empty string")
    return obj


def _json_type(value: JsonValue) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"the string {json.dumps(shown)}"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return f"the number {value}"
    return "an array" if isinstance(value, list) else "an object"


def fence(content: str, info: str = "") -> str:
    """`content` in a Markdown code fence longer than any backtick run inside it (an answer may hold ```)."""
    longest = max((len(run) for run in re.findall(r"`+", content)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{info}\n{content}\n{ticks}"


def error_kind_of(exc: ModelCallError) -> ErrorKind:
    """The lane's error kind for a failed judge request: quota and auth as such, the rest by cause — the same
    classifier and the same rules as the agent's steps (`farm.llm.provider_errors.lane_error_kind`)."""
    return lane_error_kind(exc.verdict)


class JudgeSession:
    """The requests behind one verdict: sends them, records each as `ModelCall`s and log lines."""

    def __init__(
        self, *, mode: VerdictMode, client: ModelClient, price: WvPrice | None, log_path: Path, prompt_sha256: str,
    ) -> None:
        self.mode: VerdictMode = mode
        self.client = client
        self.price = price
        self.log_path = log_path
        self.prompt_sha256 = prompt_sha256
        self.calls: list[ModelCall] = []
        self.requests = 0
        self.kind: ErrorKind = "internal"
        """Error kind of the last failed request."""

    @property
    def model(self) -> str:
        """Judge model as configured."""
        return self.client.config.model

    def _log(self, kind: Literal["request", "response", "error"], **fields: object) -> None:
        line = JudgeLogLine.model_validate(
            {"kind": kind, "at": utc_now(), "request": self.requests, "prompt_sha256": self.prompt_sha256} | fields
        )
        append_log(self.log_path, line)

    def ask(self, text: str) -> ModelTurn | str:
        """One independent judge request (one user message, no tools, no history): the turn, or — when the
        request failed for good — its one-line error (logged, its `ModelCall`s recorded, `kind` set)."""
        self.requests += 1
        step = self.requests
        self._log("request", model=self.model, messages=[LoggedMessage(role="user", text=text)])
        started_at = utc_now()
        began = time.monotonic()
        try:
            turn = self.client.complete([Message.user(text)])
        except ModelCallError as exc:
            self.calls += calls_from_error(
                exc, role="judge", step=step, started_at=started_at, price=self.price, model=self.model,
            )
            self.kind = error_kind_of(exc)
            self._log("error", model=self.model, error=exc.message)
            return exc.message
        except Exception as exc:  # noqa: BLE001 - a judge problem must leave the task unjudged, not crash the run
            detail = self.client.scrub(f"{type(exc).__name__}: {exc}")
            # Not classified by the client: the request may have been billed, so its usage stays unknown.
            self.calls.append(ModelCall(
                role="judge", step=step, started_at=started_at, duration_ms=(time.monotonic() - began) * 1000.0,
                outcome="bad_response", model=self.model, usage_expected=True, error=detail,
            ))
            self.kind = "internal"
            self._log("error", model=self.model, error=detail)
            return detail
        self.calls += calls_from_turn(turn, role="judge", step=step, started_at=started_at, price=self.price)
        self._log("response", model=turn.model or self.model, raw=turn.text, usage=turn.usage,
                  stop=turn.raw_stop_reason)
        return turn

    def verdict(
        self,
        result: AgentResult,
        *,
        passed: bool | None = None,
        reason: str | None = None,
        judge_error: str | None = None,
        error_kind: ErrorKind | None = None,
        cited: Sequence[int] = (),
    ) -> JudgeVerdict:
        """The verdict on `result` from the requests made so far, appended to the log as its last line."""
        verdict = JudgeVerdict(
            mode=self.mode,
            passed=passed,
            reason=reason,
            judge_error=judge_error,
            error_kind=error_kind,
            prompt_sha256=self.prompt_sha256,
            model=self.model,
            attempt=result.attempt,
            model_calls=list(self.calls),
            usage=totals(self.calls),
            cited=list(cited),
            judged_at=utc_now(),
        )
        append_log(self.log_path, JudgeLogLine(
            kind="verdict", at=verdict.judged_at, request=self.requests, prompt_sha256=self.prompt_sha256,
            model=self.model, error=judge_error, verdict=verdict,
        ))
        return verdict

    def failed(self, result: AgentResult, error: str) -> JudgeVerdict:
        """The unjudged verdict after a request that failed for good (`ask` returned its error line)."""
        return self.verdict(result, judge_error=f"judge request failed: {error}", error_kind=self.kind)



# The judge entry points, importable from here. The modes import this module's core, so they are loaded on
# first use instead of at import time (no import cycle).

def judge_reference(
    task: WvTask, result: AgentResult, *, client: ModelClient, prompt: PromptText, price: WvPrice | None,
    log_path: Path,
) -> JudgeVerdict:
    """`judge_reference.judge_reference`: the upstream judge-prompt.md on one task and its result line."""
    from web_bench.webvoyager import judge_reference as mode

    return mode.judge_reference(task, result, client=client, prompt=prompt, price=price, log_path=log_path)


def judge_evidence(
    task: WvTask, result: AgentResult, observations: Sequence[BrowserObservation], *, client: ModelClient,
    price: WvPrice | None, log_path: Path,
) -> JudgeVerdict:
    """`judge_evidence.judge_evidence` with the default text bounds: the strict evidence judge."""
    from web_bench.webvoyager import judge_evidence as mode

    return mode.judge_evidence(task, result, observations, client=client, price=price, log_path=log_path)
