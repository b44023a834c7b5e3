"""The agent's actions as tools: one pydantic model per tool, JSON schemas for the model, parsing of calls."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from farm.llm.types import ToolSpec

Direction = Literal["up", "down", "left", "right"]


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Point(_Args):
    ref: int | None = Field(default=None, ge=1, description="Element ref from the screen listing, e.g. 12.")
    x: int | None = Field(default=None, ge=0, description="Screen x in pixels (when there is no ref).")
    y: int | None = Field(default=None, ge=0, description="Screen y in pixels (when there is no ref).")

    @model_validator(mode="after")
    def _ref_or_xy(self) -> _Point:
        if self.ref is None and (self.x is None or self.y is None):
            raise ValueError("give a ref, or both x and y")
        return self


class Tap(_Point):
    """Tap an element (by ref) or a point."""


class LongPress(_Point):
    """Touch and hold an element (by ref) or a point."""


class TypeText(_Args):
    """Type text; with a ref, tap that field first."""

    text: str = Field(description="Text to type.")
    ref: int | None = Field(default=None, ge=1, description="Field to tap before typing.")
    enter: bool = Field(default=False, description="Press Enter after typing.")


class Swipe(_Args):
    """Swipe: `direction` is where the finger moves (up shows what is further down), or give coordinates."""

    direction: Direction | None = None
    x1: int | None = None
    y1: int | None = None
    x2: int | None = None
    y2: int | None = None

    @model_validator(mode="after")
    def _direction_or_points(self) -> Swipe:
        points = (self.x1, self.y1, self.x2, self.y2)
        if self.direction is None and any(p is None for p in points):
            raise ValueError("give a direction, or x1, y1, x2 and y2")
        return self


class Back(_Args):
    """Press Back."""


class Home(_Args):
    """Press Home."""


class Launch(_Args):
    """Open an app by capability (calculator, notes, clock…) or by package name."""

    capability: str | None = Field(default=None, description="calculator, clock, contacts, notes, settings…")
    package: str | None = Field(default=None, description="Android package name.")

    @model_validator(mode="after")
    def _one(self) -> Launch:
        if not (self.capability or self.package):
            raise ValueError("give a capability or a package")
        return self


class Wait(_Args):
    """Wait for the screen to settle."""

    seconds: float = Field(default=1.0, ge=0, le=30)


class AskUser(_Args):
    """Ask the user something only they know (who, which one, what time)."""

    question: str = Field(min_length=1)


class Answer(_Args):
    """Finish the task with the final answer for the user (what was found, or what was done)."""

    text: str = Field(min_length=1)


class GiveUp(_Args):
    """Stop: the task cannot be done (say why)."""

    reason: str = Field(min_length=1)


class HandOver(_Args):
    """Stop and hand the phone to the user because of a barrier on screen (login, captcha…)."""

    reason: str = Field(min_length=1, description="login | captcha | verification | other")
    detail: str = ""


class Confirm(_Args):
    """Before an irreversible step (send, buy, delete): show the user a confirmation card; ends the task."""

    action: str = Field(min_length=1, description="What would be done: 发送, 提交订单, 删除…")
    target: str = Field(default="", description="To whom / on what.")
    content: str = Field(default="", description="What would be sent, bought or deleted.")
    amount: str = Field(default="", description="Money or count, when relevant.")


TOOLS: dict[str, type[_Args]] = {
    "tap": Tap,
    "long_press": LongPress,
    "type": TypeText,
    "swipe": Swipe,
    "back": Back,
    "home": Home,
    "launch": Launch,
    "wait": Wait,
    "ask_user": AskUser,
    "answer": Answer,
    "give_up": GiveUp,
    "hand_over": HandOver,
    "confirm": Confirm,
}
TERMINAL = frozenset({"answer", "give_up", "hand_over", "confirm"})
"""Tools that end the task."""


def _clean_schema(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean_schema(v) for k, v in value.items() if k != "title"}
    if isinstance(value, list):
        return [_clean_schema(v) for v in value]
    return value


def tool_specs() -> list[ToolSpec]:
    """The tools offered to a model, with JSON schemas of their arguments."""
    specs = []
    for name, model in TOOLS.items():
        schema = _clean_schema(model.model_json_schema())
        schema.pop("description", None)
        specs.append(ToolSpec(name=name, description=(model.__doc__ or name).strip(), parameters=schema))
    return specs


class ToolCallError(ValueError):
    """A tool call that cannot be performed as given (unknown tool, bad JSON, invalid arguments)."""


def parse_call(name: str, arguments: str | dict[str, Any]) -> _Args:
    """Validate one tool call; ToolCallError with a message the agent can act on."""
    model = TOOLS.get(name)
    if model is None:
        raise ToolCallError(f"unknown tool {name!r}; tools are: {', '.join(TOOLS)}")
    if isinstance(arguments, str):
        try:
            data = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise ToolCallError(f"{name}: arguments are not valid JSON ({exc.msg})") from None
    else:
        data = arguments
    if not isinstance(data, dict):
        raise ToolCallError(f"{name}: arguments must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ToolCallError(f"{name}: {where + ': ' if where else ''}{first['msg']}") from None


def tool_name(args: _Args) -> str:
    """The tool name of parsed arguments."""
    for name, model in TOOLS.items():
        if type(args) is model:
            return name
    raise KeyError(type(args).__name__)
