"""The one `browser_*` tool contract both backends implement: names, descriptions, JSON schemas,
argument models, the post-action settle budget, and the backend/session protocols.

The model sees exactly these tools whatever the backend, so a difference in results is a
difference of the backend, not of the contract.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

# The tool result of every lane; the backends and the browser lanes import it from here.
from farm.llm.loop import ToolResult as ToolResult
from farm.llm.types import ToolSpec

BackendName = Literal["playwright", "extension", "android-chrome"]
BACKEND_NAMES: tuple[BackendName, ...] = ("playwright", "extension", "android-chrome")
DEFAULT_BACKENDS: tuple[BackendName, ...] = ("playwright", "extension")
"""Seed 001's pair: the Playwright baseline against the MV3 extension."""
TOOL_PREFIX = "browser_"

# Post-action settle: wait for the DOM to stay quiet for SETTLE_QUIET_MS, at most SETTLE_BUDGET_MS.
SETTLE_BUDGET_MS = 1500
SETTLE_QUIET_MS = 120
ACTION_TIMEOUT_MS = 5000
NAVIGATION_TIMEOUT_MS = 20000
WAIT_FOR_MAX_S = 30.0
# Same page geometry, locale and time zone on both backends.
VIEWPORT = {"width": 1280, "height": 800}
LOCALE = "en-US"
TIMEZONE = "UTC"


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NavigateArgs(_Args):
    """browser_navigate arguments."""

    url: str = Field(description="The URL to navigate to")
    """Absolute URL."""


class NoArgs(_Args):
    """Arguments of tools that take none."""


class ClickArgs(_Args):
    """browser_click arguments."""

    element: str | None = Field(default=None, description="Human-readable element description")
    """What the model thinks it clicks (not used to act)."""
    ref: str = Field(description="Exact target element reference from the page snapshot")
    """Element ref, e.g. `e12`."""


class TypeArgs(_Args):
    """browser_type arguments."""

    element: str | None = Field(default=None, description="Human-readable element description")
    """Description (not used to act)."""
    ref: str = Field(description="Exact target element reference from the page snapshot")
    """Element ref."""
    text: str = Field(description="Text to type into the element")
    """Text that replaces the field's value."""
    submit: bool = Field(default=False, description="Whether to submit entered text (press Enter after)")
    """Press Enter afterwards."""


class SelectArgs(_Args):
    """browser_select_option arguments."""

    element: str | None = Field(default=None, description="Human-readable element description")
    """Description (not used to act)."""
    ref: str = Field(description="Exact target element reference from the page snapshot")
    """Ref of the select/combobox."""
    values: list[str] = Field(description="Array of values or labels to select in the dropdown")
    """Option values or labels."""


class PressKeyArgs(_Args):
    """browser_press_key arguments."""

    key: str = Field(description="Name of the key to press or a character, such as `ArrowLeft` or `a`")
    """Key name."""


class WaitForArgs(_Args):
    """browser_wait_for arguments (at least one)."""

    time: float | None = Field(default=None, description="The time to wait in seconds")
    """Seconds to wait."""
    text: str | None = Field(default=None, description="The text to wait for")
    """Text that must appear."""
    textGone: str | None = Field(default=None, description="The text to wait for to disappear")  # noqa: N815
    """Text that must disappear (the name is the contract's)."""


class ToolDef(BaseModel):
    """A tool as the model sees it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """Tool name (`browser_*`)."""
    description: str
    """What it does."""
    args: type[_Args]
    """Argument model; its JSON schema is what the model sees."""
    read_only: bool
    """Whether it leaves the page as it was."""

    def parameters(self) -> dict[str, JsonValue]:
        """The JSON schema of the arguments, without pydantic's titles."""
        schema = self.args.model_json_schema()
        schema.pop("title", None)
        schema.pop("description", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        schema["additionalProperties"] = False
        return schema


TOOLS: tuple[ToolDef, ...] = (
    ToolDef(name="browser_navigate", args=NavigateArgs, read_only=False,
            description="Navigate to a URL. Returns the page snapshot after the page settles."),
    ToolDef(name="browser_snapshot", args=NoArgs, read_only=True,
            description="Capture an accessibility snapshot of the current page, with element refs. "
                        "Use it to find elements; act on them by ref."),
    ToolDef(name="browser_click", args=ClickArgs, read_only=False,
            description="Click an element of the page by its ref from the latest snapshot."),
    ToolDef(name="browser_type", args=TypeArgs, read_only=False,
            description="Type text into an editable element (replacing its value), optionally pressing Enter."),
    ToolDef(name="browser_select_option", args=SelectArgs, read_only=False,
            description="Select one or more options in a dropdown."),
    ToolDef(name="browser_press_key", args=PressKeyArgs, read_only=False,
            description="Press a key on the keyboard."),
    ToolDef(name="browser_wait_for", args=WaitForArgs, read_only=True,
            description="Wait for text to appear or disappear or a specified time to pass."),
    ToolDef(name="browser_navigate_back", args=NoArgs, read_only=False,
            description="Go back to the previous page."),
    ToolDef(name="browser_take_screenshot", args=NoArgs, read_only=True,
            description="Take a screenshot of the current page (JPEG). Use browser_snapshot to act on elements."),
)
TOOLS_BY_NAME: dict[str, ToolDef] = {t.name: t for t in TOOLS}


def tool_specs() -> list[ToolSpec]:
    """The browser tools as the model sees them (the same for every backend and every browser lane)."""
    return [ToolSpec(name=t.name, description=t.description, parameters=t.parameters()) for t in TOOLS]

SYSTEM_PROMPT = (
    "You operate a web browser to complete the user's task. Use only the browser_* tools you are given; "
    "any other tool is forbidden and makes the task fail. Pages are described by accessibility snapshots "
    "whose elements carry refs like [ref=e12]; act on elements by ref, and take a new snapshot when the "
    "page changes. When the task is done, reply with a short final answer (include any value the task "
    "asks for) and do not call more tools."
)


def parse_args(name: str, arguments: Mapping[str, JsonValue]) -> _Args:
    """Validate a call's arguments against the contract (ValueError with one line on failure)."""
    tool = TOOLS_BY_NAME.get(name)
    if tool is None:
        raise ValueError(f"unknown tool {name!r}")
    try:
        return tool.args.model_validate(dict(arguments))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "arguments"
        raise ValueError(f"{name}: {where}: {first['msg']}") from None


class BrowserSession(Protocol):
    """One run's browser page (isolated from every other run)."""

    backend: BackendName

    def call(self, name: str, arguments: Mapping[str, JsonValue]) -> ToolResult:
        """Execute a `browser_*` tool; errors come back as `is_error` results, never raised."""
        ...

    def close(self) -> None:
        """Release the page/context."""
        ...


class BrowserBackend(Protocol):
    """A way of getting browser sessions (one Chromium, or Chrome on a phone)."""

    name: BackendName

    def new_session(self) -> BrowserSession:
        """A fresh, isolated session for one run."""
        ...

    def close(self) -> None:
        """Release the browser and any forwards."""
        ...
