"""Provider-neutral conversation types: what agents build and what a model turn returns."""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

from farm.results.record import Tokens

Role = Literal["system", "user", "assistant", "tool"]


def image_media_type(data: bytes) -> str:
    """MIME type of an attached image: JPEG is the contract; PNG and WebP are recognised so a stray one
    is labelled truthfully instead of being rejected by the API."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return "image/jpeg"


StopKind = Literal["end", "tool_calls", "max_tokens", "refusal", "other"]


class ToolCall(BaseModel):
    """One tool invocation requested by the model. Arguments stay as the raw string the model produced."""

    model_config = ConfigDict(extra="forbid")

    id: str
    """Provider's call id; the tool result must quote it (`Message.tool_call_id`)."""
    name: str
    """Tool name."""
    arguments_json: str
    """Arguments exactly as sent by the model; may be malformed JSON."""

    def arguments(self) -> dict[str, JsonValue]:
        """Parsed arguments; ValueError when they are not a JSON object."""
        try:
            value = json.loads(self.arguments_json) if self.arguments_json.strip() else {}
        except json.JSONDecodeError as exc:
            raise ValueError(f"tool {self.name}: arguments are not valid JSON ({exc.msg})") from None
        if not isinstance(value, dict):
            raise ValueError(f"tool {self.name}: arguments are not a JSON object")
        return value


class ThinkingBlock(BaseModel):
    """Opaque reasoning a provider requires back verbatim on the next turn (Anthropic thinking blocks)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["thinking", "redacted_thinking"]
    """Block type as the provider names it."""
    text: str = ""
    """Thinking text (empty for redacted blocks)."""
    signature: str | None = None
    """Provider signature of a thinking block."""
    data: str | None = None
    """Encrypted payload of a redacted block."""


class Message(BaseModel):
    """One conversation message. Images are JPEG bytes (screenshots)."""

    model_config = ConfigDict(extra="forbid", ser_json_bytes="base64", val_json_bytes="base64")

    role: Role
    """system | user | assistant | tool (a tool result)."""
    text: str | None = None
    """Text content."""
    images: list[bytes] = Field(default_factory=list)
    """JPEG images attached to a user or tool message."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """Tool calls made by an assistant message."""
    tool_call_id: str | None = None
    """For role=tool: the id of the call this result answers."""
    thinking: list[ThinkingBlock] = Field(default_factory=list)
    """Assistant reasoning blocks to send back unchanged (Anthropic with thinking enabled)."""

    @model_validator(mode="after")
    def _fits_role(self) -> Message:
        if self.role == "tool" and not self.tool_call_id:
            raise ValueError("a tool message needs the tool_call_id it answers")
        if self.role != "tool" and self.tool_call_id is not None:
            raise ValueError("tool_call_id belongs on tool messages only")
        if self.role != "assistant" and (self.tool_calls or self.thinking):
            raise ValueError("tool_calls and thinking belong on assistant messages only")
        if self.role in ("system", "assistant") and self.images:
            raise ValueError("images go on user or tool messages")
        if self.role in ("system", "user") and not self.text and not self.images:
            raise ValueError(f"a {self.role} message needs text or images")
        return self

    @classmethod
    def system(cls, text: str) -> Message:
        """A system prompt."""
        return cls(role="system", text=text)

    @classmethod
    def user(cls, text: str | None = None, images: list[bytes] | None = None) -> Message:
        """A user message with optional JPEG images."""
        return cls(role="user", text=text, images=list(images or []))

    @classmethod
    def tool_result(cls, tool_call_id: str, text: str, images: list[bytes] | None = None) -> Message:
        """The result of a tool call (text plus optional JPEG images)."""
        return cls(role="tool", tool_call_id=tool_call_id, text=text, images=list(images or []))


def _empty_schema() -> dict[str, JsonValue]:
    return {"type": "object", "properties": {}}


class ToolSpec(BaseModel):
    """A tool offered to the model."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    """Tool name (letters, digits, `_`, `-`; at most 64), as both APIs require."""
    description: str
    """What the tool does, for the model."""
    parameters: dict[str, JsonValue] = Field(default_factory=_empty_schema)
    """JSON schema of the arguments object."""


AttemptOutcome = Literal[
    "ok", "rate_limit", "server", "timeout", "connection", "client", "bad_response", "quota", "auth",
]


class Attempt(BaseModel):
    """One HTTP request of a model call (seed 002 counts these as requests, retries included)."""

    model_config = ConfigDict(extra="forbid")

    outcome: AttemptOutcome
    """`ok`, or the kind of failure."""
    status: int | None = None
    """HTTP status when a response arrived."""
    duration_ms: float
    """Time from sending the request to its response or failure."""
    wait_after_ms: float = 0.0
    """Sleep before the next attempt (Retry-After or backoff); 0 for the last attempt."""


class ModelTurn(BaseModel):
    """One completed model call (after any retries)."""

    model_config = ConfigDict(extra="forbid")

    text: str | None = None
    """Text the model produced; null when it only called tools."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """Tool calls requested, in order."""
    usage: Tokens = Field(default_factory=Tokens)
    """Token usage of the successful attempt; fields null when the provider did not report them."""
    cost_usd: float | None = None
    """Cost of the successful attempt; null when the price or a needed token count is unknown."""
    latency_ms: float = 0.0
    """Wall time of the whole call, retries and waits included (time the agent spent on the model)."""
    raw_stop_reason: str | None = None
    """Provider's finish_reason / stop_reason verbatim."""
    stop: StopKind = "other"
    """Stop reason mapped to a neutral kind."""
    model: str | None = None
    """Model name reported by the provider."""
    retries: int = 0
    """Attempts that failed and were retried before this one succeeded."""
    retry_wait_ms: float = 0.0
    """Time slept between attempts (backoff or Retry-After)."""
    attempts: list[Attempt] = Field(default_factory=list)
    """Every request made for this turn, in order; the last one succeeded."""
    thinking: list[ThinkingBlock] = Field(default_factory=list)
    """Reasoning blocks to send back with the assistant message (Anthropic)."""
    streamed: bool = False
    """Whether the reply was streamed."""
    first_delta_ms: float | None = None
    """Streamed calls: time from the call's start to the first non-empty delta (text, reasoning, a tool
    call's name or arguments), whichever attempt delivered it; null when not streamed or nothing came."""

    def as_message(self) -> Message:
        """The assistant message to append to the conversation."""
        return Message(role="assistant", text=self.text, tool_calls=list(self.tool_calls), thinking=list(self.thinking))
