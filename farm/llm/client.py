"""The model client every agent uses: one `complete()` call, retries in one place, usage and cost."""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import TracebackType

from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt

from farm.errors import FarmError
from farm.llm.model_config import LLMConfig
from farm.llm.pricing import cost_usd
from farm.llm.provider_errors import ProviderVerdict, call_verdict
from farm.llm.retry import Failure, FailureKind, wait_s
from farm.llm.types import Attempt, Message, ModelTurn, StopKind, ThinkingBlock, ToolCall, ToolSpec
from farm.results.record import Tokens

log = logging.getLogger(__name__)

PREFLIGHT_TIMEOUT_S = 15.0
"""Longest wait for the preflight's answer (the model's own timeout when shorter)."""


class ModelCallError(FarmError):
    """A model call failed for good: a non-transient error, or transient ones past `max_retries`."""

    def __init__(
        self,
        message: str,
        *,
        kind: FailureKind,
        status: int | None,
        attempt_log: list[Attempt],
        hint: str | None = None,
        verdict: ProviderVerdict | None = None,
        provider: str = "",
        endpoint: str | None = None,
    ) -> None:
        self.kind: FailureKind = kind
        self.status = status
        self.attempt_log = attempt_log
        last = verdict or Failure(kind, status, None, message).verdict
        self.verdict: ProviderVerdict = call_verdict(last, [a.outcome for a in attempt_log[:-1]])
        """The classifier's verdict on the call (`farm.llm.provider_errors`): kind, whether it stops dispatch, and
        a one-line reason; a transient failure after a quota refusal of the same step is the quota."""
        self.provider = provider
        """`openai` or `anthropic` (the API the client speaks)."""
        self.endpoint = endpoint
        """The base URL's host (and port), when one was configured; None for the provider's default endpoint."""
        super().__init__(message, hint=hint)

    @property
    def stops_dispatch(self) -> bool:
        """Whether the run must start no new work (quota or key): every request would fail the same way."""
        return self.verdict.stops_dispatch

    def stop_line(self) -> str:
        """One line naming the provider and why the run stops dispatching (for progress notes and records)."""
        where = f"{self.provider} at {self.endpoint}" if self.endpoint else self.provider or "model provider"
        return f"model provider {where}: {self.verdict.reason}"

    @property
    def attempts(self) -> int:
        """Requests made, the failed last one included."""
        return len(self.attempt_log)

    @property
    def retry_wait_ms(self) -> float:
        """Time slept between the attempts."""
        return sum(a.wait_after_ms for a in self.attempt_log)


def _ms_since(began: float) -> float:
    return (time.monotonic() - began) * 1000.0


@dataclass
class ProviderReply:
    """What a provider module extracts from one successful response."""

    text: str | None
    tool_calls: list[ToolCall]
    usage: Tokens
    raw_stop_reason: str | None
    stop: StopKind
    model: str | None
    thinking: list[ThinkingBlock] = field(default_factory=list)


class _Transient(Exception):
    """Carries a retryable failure through tenacity."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.detail)
        self.failure = failure


class ModelClient(ABC):
    """Base of the provider clients. Subclasses convert messages and parse responses; this class retries."""

    provider: str = ""

    def __init__(self, cfg: LLMConfig, *, sleep: Callable[[float], None] = time.sleep) -> None:
        self.config = cfg
        self._sleep = sleep
        self._secret = ""  # set by subclasses; used only to scrub error text

    @abstractmethod
    def _send(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], on_delta: Callable[[], None] | None = None,
    ) -> ProviderReply:
        """One request, no retries. SDK errors propagate; `_classify` maps them.

        With `on_delta` the reply is streamed and `on_delta()` is called on every non-empty delta (text,
        reasoning, a tool call's name or argument fragment); a stream that ends before the provider's end
        event raises `StreamCut`, so a cut reply is a transport failure like any other.
        """

    @abstractmethod
    def _classify(self, exc: Exception) -> Failure | None:
        """Map an SDK exception to a Failure; None for exceptions that are not API failures."""

    @abstractmethod
    def close(self) -> None:
        """Release the HTTP connection pool."""

    @abstractmethod
    def _probe(self, timeout_s: float) -> None:
        """One cheap authenticated request: the provider's model list."""

    def preflight(self) -> None:
        """Check the key and the endpoint before a run creates anything: one model-list request, no retries.

        A key the endpoint refuses (401/403) or an endpoint that does not answer is a FarmError naming it; an
        endpoint that answers without a model list (some OpenAI-compatible servers: 404/405) or is busy (429,
        5xx) passes, since the run's own calls retry those.
        """
        try:
            self._probe(min(self.config.timeout_s, PREFLIGHT_TIMEOUT_S))
            return
        except Exception as exc:  # noqa: BLE001 - SDK errors are classified below
            failure = self._classify(exc)
            if failure is None:
                raise
        where = f"llm {self.provider}:{self.config.model} at {self.config.base_url or 'the default endpoint'}"
        if failure.kind == "auth":
            status = f" (HTTP {failure.status})" if failure.status is not None else ""
            raise FarmError(f"{where}: the API key in {self.config.api_key_env} was refused{status}",
                            hint=f"export a valid key in {self.config.api_key_env}, or pass --api-key-env NAME")
        if failure.kind == "quota":
            # Seed 002: while the quota is still used up, a resumed run creates no new attempt.
            why = self.scrub(failure.verdict.reason)
            raise FarmError(f"{where}: the provider's quota or balance is used up ({why})",
                            hint="wait for the provider's quota window or top up, then run again (or --resume)")
        if failure.kind in ("connection", "timeout"):
            raise FarmError(f"{where}: the endpoint does not answer ({self.scrub(failure.detail)})",
                            hint="check --base-url (or FARM_LLM_BASE_URL / farm.yaml llm.base_url) and the network")

    def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        *,
        stream: bool = False,
        on_first_delta: Callable[[], None] | None = None,
    ) -> ModelTurn:
        """Send the conversation, retrying transient failures; raises ModelCallError when it gives up.

        `stream=True` streams the reply (same ModelTurn as without) and records when its first non-empty
        delta arrived; `on_first_delta()` is called then, once per call, whichever attempt delivered it.
        """
        if not messages:
            raise FarmError("llm: complete() needs at least one message")
        cfg = self.config
        log_: list[Attempt] = []
        started = time.monotonic()
        first_delta_ms: list[float] = []

        def delta() -> None:
            if not first_delta_ms:
                first_delta_ms.append(_ms_since(started))
                if on_first_delta is not None:
                    on_first_delta()

        def attempt() -> ProviderReply:
            began = time.monotonic()
            try:
                reply = self._send(messages, tools, delta if stream else None)
            except Exception as exc:  # noqa: BLE001 - SDK errors are classified below
                failure = self._classify(exc)
                if failure is None:
                    raise
            else:
                log_.append(Attempt(outcome="ok", status=200, duration_ms=_ms_since(began)))
                return reply
            log_.append(Attempt(outcome=failure.kind, status=failure.status, duration_ms=_ms_since(began)))
            # Raised outside the handler so no SDK exception (which holds the request and its
            # auth header) stays chained as __context__.
            if failure.retryable:
                raise _Transient(failure)
            raise self._error(failure, log_)

        def wait(state: RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome else None
            assert isinstance(exc, _Transient)
            return wait_s(
                exc.failure,
                state.attempt_number,
                initial_s=cfg.backoff_initial_s,
                max_s=cfg.backoff_max_s,
                retry_after_max_s=cfg.retry_after_max_s,
            )

        def before_sleep(state: RetryCallState) -> None:
            pause = state.next_action.sleep if state.next_action else 0.0
            log_[-1] = log_[-1].model_copy(update={"wait_after_ms": pause * 1000.0})
            log.warning("model %s: %s on attempt %d, retrying in %.2fs", cfg.model, log_[-1].outcome, len(log_), pause)

        retrying = Retrying(
            stop=stop_after_attempt(cfg.max_retries + 1),
            wait=wait,
            retry=retry_if_exception_type(_Transient),
            before_sleep=before_sleep,
            sleep=self._sleep,
            reraise=True,
        )
        given_up: Failure | None = None
        try:
            reply = retrying(attempt)
        except _Transient as exc:
            given_up = exc.failure
        if given_up is not None:
            raise self._error(given_up, log_)
        return ModelTurn(
            text=reply.text,
            tool_calls=reply.tool_calls,
            usage=reply.usage,
            cost_usd=cost_usd(cfg.pricing, reply.usage),
            latency_ms=_ms_since(started),
            raw_stop_reason=reply.raw_stop_reason,
            stop=reply.stop,
            model=reply.model,
            retries=len(log_) - 1,
            retry_wait_ms=sum(a.wait_after_ms for a in log_),
            attempts=log_,
            thinking=reply.thinking,
            streamed=stream,
            first_delta_ms=first_delta_ms[0] if first_delta_ms else None,
        )

    def _error(self, failure: Failure, attempts: list[Attempt]) -> ModelCallError:
        detail = self.scrub(failure.detail)
        status = f" (HTTP {failure.status})" if failure.status is not None else ""
        # The reason may quote the provider's message, which could echo the key.
        verdict = replace(failure.verdict, reason=self.scrub(failure.verdict.reason))
        settled = call_verdict(verdict, [a.outcome for a in attempts[:-1]])
        kind = "quota" if settled.kind == "quota" else failure.kind
        hint = {
            "client": f"check the model name, the request and the API key variable {self.config.api_key_env}",
            "bad_response": "the endpoint answered with something that is not a model response",
            "quota": "the provider's quota or balance is used up; wait for its quota window or top up, then resume",
            "auth": f"the key in {self.config.api_key_env} was refused; export a valid key",
        }.get(kind, "the provider is unavailable or rate-limiting; retry later or raise max_retries")
        return ModelCallError(
            f"llm {self.provider}:{self.config.model}: {failure.kind}{status} after {len(attempts)} "
            f"attempt(s): {detail}",
            kind=failure.kind,
            status=failure.status,
            attempt_log=list(attempts),
            hint=hint,
            verdict=verdict,
            provider=self.provider,
            endpoint=_host(self.config.base_url),
        )

    def scrub(self, text: str) -> str:
        """One line, bounded, with the API key blanked out in case an endpoint echoed it."""
        if self._secret:
            text = text.replace(self._secret, "***")
        line = " ".join(text.split())
        return line if len(line) <= 300 else line[:297] + "..."

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.config.model!r}, base_url={self.config.base_url!r})"

    def __enter__(self) -> ModelClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _host(base_url: str | None) -> str | None:
    """`host[:port]` of a base URL (never its path or credentials), for lines that name the endpoint."""
    if not base_url:
        return None
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(base_url)
        host = parts.hostname
        port = parts.port
    except ValueError:
        return None
    if not host:
        return None
    return f"{host}:{port}" if port else host


def make_client(cfg: LLMConfig, *, environ: Mapping[str, str] | None = None) -> ModelClient:
    """A client for `cfg.provider`; reads the API key from `cfg.api_key_env` now (FarmError if unset)."""
    key = cfg.api_key(environ)
    if cfg.provider == "openai":
        from farm.llm.openai_client import OpenAIModelClient

        return OpenAIModelClient(cfg, key)
    from farm.llm.anthropic_client import AnthropicModelClient

    return AnthropicModelClient(cfg, key)
