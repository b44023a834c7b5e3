"""Per-run server-side state: every run gets its own session, the state API serves it."""

from __future__ import annotations

import secrets
import threading
from typing import Literal

from pydantic import Field

from farm.camel import CamelModel

TaskName = Literal[
    "order_lookup", "notification_toggle", "contact_form", "inventory_filter", "cart_checkout", "lazy_load"
]


class ContactSubmission(CamelModel):
    """What the contact form received."""


    name: str
    """Name field."""
    email: str
    """Email field."""
    message: str
    """Message field."""


class SessionState(CamelModel):
    """Everything the pages of one session changed; validators read only this."""


    session_id: str
    """Session id (part of every page URL of the run)."""
    task: TaskName
    """Task of the session."""
    seed: int
    """Seed of the session's data."""
    orders_viewed: list[str] = Field(default_factory=list)
    """order_lookup: order ids whose detail page was opened."""
    notifications: dict[str, bool] = Field(default_factory=dict)
    """notification_toggle: saved switch states (initial values until the first save)."""
    notification_saves: int = 0
    """notification_toggle: how many times the settings were saved."""
    contact: ContactSubmission | None = None
    """contact_form: the last submission."""
    inventory_filter: str | None = None
    """inventory_filter: the last category filter the server applied."""
    cart: dict[str, int] = Field(default_factory=dict)
    """cart_checkout: SKU → quantity in the cart."""
    order_placed: dict[str, int] | None = None
    """cart_checkout: SKU → quantity of the checked-out order."""
    load_actions: int = 0
    """lazy_load: how many times more entries were requested."""


class SessionStore:
    """Thread-safe map of session id → state (the site runs in a server thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[str, SessionState] = {}

    def create(self, task: TaskName, seed: int, notifications: dict[str, bool] | None = None) -> SessionState:
        """Start a new session with an unguessable id."""
        state = SessionState(
            session_id=secrets.token_hex(8), task=task, seed=seed, notifications=dict(notifications or {})
        )
        with self._lock:
            self._sessions[state.session_id] = state
        return state.model_copy(deep=True)

    def get(self, session_id: str) -> SessionState | None:
        """A copy of a session's state, or None."""
        with self._lock:
            state = self._sessions.get(session_id)
            return state.model_copy(deep=True) if state else None

    def update(self, state: SessionState) -> None:
        """Replace a session's state."""
        with self._lock:
            self._sessions[state.session_id] = state.model_copy(deep=True)
