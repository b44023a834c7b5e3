"""The versioned desktop task set. Changing a task, its setup or its verification needs a new suite."""

from __future__ import annotations

import hashlib
import json
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict

SUITE: Final = "desktop-v1"
"""Suite version; bump it whenever a task, a setup or an acceptance condition changes."""

SlotStatus = Literal["pending", "success", "failed", "blocked", "cancelled"]
ResultStatus = Literal["success", "failed", "blocked", "cancelled"]
RESULT_STATUSES: tuple[ResultStatus, ...] = ("success", "failed", "blocked", "cancelled")

BUDGET_SECONDS = 180
"""Wall-clock budget fixed for every slot before it starts."""
BUDGET_ACTIONS = 30
"""Most actions a slot may dispatch (reads do not count)."""

FORM_PAGE = "fixtures/benchmark/form.html"
"""Page of the two browser tasks, opened by its absolute file:// URL."""

TEXTEDIT_TYPE_TEXT = "Deskhand desktop benchmark, line one.\n桌面基准测试第二行。"
"""Exact body textedit-type must produce (two lines, no trailing newline)."""


class DesktopTask(BaseModel):
    """One fixed desktop task: what the operator prepares, asks for and checks."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    """Stable task id (slot ids are `<id>/<repetition>`)."""
    app: Literal["Calculator", "TextEdit", "Chrome"]
    """The one application the task may use."""
    goal: str
    """The goal handed to the agent, verbatim."""
    setup: str
    """How the operator resets the app before the slot (not timed)."""
    verify: str
    """How the operator checks the final state, observed again after the run."""
    expected: str
    """The exact final result the verification compares against."""


TASKS: tuple[DesktopTask, ...] = (
    DesktopTask(
        id="calculator-add",
        app="Calculator",
        goal="In Calculator, compute 12 + 30232.",
        setup="Open Calculator, press Clear (AC) so the display shows 0; close any other Calculator window.",
        verify="Read the Calculator display after the run; it must show exactly 30244.",
        expected="30244",
    ),
    DesktopTask(
        id="calculator-chain",
        app="Calculator",
        goal="In Calculator, compute (48 + 27) × 3.",
        setup="Open Calculator, press Clear (AC) so the display shows 0; close any other Calculator window.",
        verify="Read the Calculator display after the run; it must show exactly 225.",
        expected="225",
    ),
    DesktopTask(
        id="textedit-type",
        app="TextEdit",
        goal=(
            "In the open TextEdit document, type exactly two lines: "
            "'Deskhand desktop benchmark, line one.' and then '桌面基准测试第二行。'"
        ),
        setup="Create a new, empty, unsaved plain-text TextEdit test document; never open an existing file.",
        verify="Select all in the test document and compare the body with the expected text character by character.",
        expected=TEXTEDIT_TYPE_TEXT,
    ),
    DesktopTask(
        id="textedit-replace",
        app="TextEdit",
        goal="In the open TextEdit document, replace the word beta with BETA and change nothing else.",
        setup="Create a new, unsaved plain-text TextEdit test document whose whole body is 'alpha beta gamma'.",
        verify="Compare the whole body of the test document with the expected text exactly.",
        expected="alpha BETA gamma",
    ),
    DesktopTask(
        id="browser-form",
        app="Chrome",
        goal=(
            "On the open benchmark page, choose the Team plan, enter the name Deskhand, "
            "tick the agreement box and show the preview."
        ),
        setup=f"Open the absolute file:// URL of {FORM_PAGE} in a new Chrome tab; reload it so the form is empty.",
        verify="Read the preview line of the page (id form-preview); it must read exactly the expected text.",
        expected="Deskhand | Team | agreed",
    ),
    DesktopTask(
        id="browser-delayed",
        app="Chrome",
        goal=(
            "On the open benchmark page, load the delayed details section, wait for the code field, "
            "enter the code the page shows and verify it."
        ),
        setup=f"Open the absolute file:// URL of {FORM_PAGE} in a new Chrome tab; reload it so nothing is loaded.",
        verify="Read the details status line of the page (id details-status); it must read exactly the expected text.",
        expected="Details verified",
    ),
)


def task_ids() -> list[str]:
    """Task ids in suite order."""
    return [task.id for task in TASKS]


def get_task(task_id: str) -> DesktopTask | None:
    """The task with this id, or None."""
    return next((task for task in TASKS if task.id == task_id), None)


def tasks_digest() -> str:
    """SHA-256 of the task definitions, stored in every batch to catch edits without a suite bump."""
    payload = json.dumps([task.model_dump() for task in TASKS], ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()
