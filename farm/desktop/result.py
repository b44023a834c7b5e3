"""One slot's result, written by the operator as `result.json` and checked before it is recorded."""

from __future__ import annotations

import datetime as dt
import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from farm.desktop.batch_config import control_character_in, placeholder_in
from farm.desktop.tasks import BUDGET_ACTIONS, BUDGET_SECONDS, ResultStatus

# ASCII digits only: `\d` would also take other scripts' digits, which no UTC clock writes.
_ISO_UTC = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?(Z|\+00:00)$", re.ASCII)
MAX_COUNT = 10_000
"""Largest count a result may hold: far past anything a 180 s run can dispatch, so a bigger number is a typo."""
Count = Annotated[int, Field(ge=0, le=MAX_COUNT, strict=True)]
"""A JSON integer 0..MAX_COUNT; strict, so true, 2.0 and NaN are refused rather than read as numbers."""


def parse_utc(text: str) -> dt.datetime:
    """Parse an ISO-8601 UTC timestamp (`2026-01-01T00:00:00.000Z`); ValueError otherwise."""
    if not _ISO_UTC.fullmatch(text):
        shown = text if len(text) <= 40 else text[:40] + "…"
        raise ValueError(f"{shown!r} is not an ISO-8601 UTC timestamp like 2026-01-01T00:00:00.000Z")
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


class RunResult(BaseModel):
    """What happened in one slot, as observed and verified by the operator."""

    model_config = ConfigDict(extra="forbid")

    status: ResultStatus
    """success: verified final state within the budget; failed (a run past the time budget: reason=timeout);
    blocked: no permission/environment or an official refusal; cancelled: stopped by the operator or by reaching
    the action budget."""
    startedAt: str
    """ISO UTC time just before the full goal was handed over."""
    endedAt: str
    """ISO UTC time the outcome was established (verified, failed, blocked or cancelled)."""
    humanInterventions: Count
    """Corrections, next-step hints or manual task actions by the user; one continuous help counts once."""
    plannerHandoffs: Count
    """Times Jev handed back to the main model for re-planning (usually 0 in native mode)."""
    actions: Count
    """Dispatched actions (clicks, typing, keys, scrolls, drags, attempts with unknown outcome); reads excluded."""
    wrongActions: Count
    """Dispatched actions that departed from the goal, even if corrected later (human-reviewed)."""
    evidence: list[str] = Field(min_length=1)
    """References to local evidence (session id, trace/screenshot paths, time ranges); never the content."""
    verification: str = ""
    """The final state as observed again, compared with the acceptance condition."""
    reason: str = ""
    """Why the slot did not succeed (`timeout` for a failed run that hit the budget)."""

    @field_validator("startedAt", "endedAt")
    @classmethod
    def _iso_utc(cls, value: str) -> str:
        parse_utc(value)
        return value

    @field_validator("evidence")
    @classmethod
    def _real_evidence(cls, value: list[str]) -> list[str]:
        for item in value:
            if not item.strip():
                raise ValueError("holds a blank reference; every entry must point at real local evidence")
            marker = placeholder_in(item)
            if marker is not None:
                raise ValueError(f"still holds example placeholder text ({marker!r}); cite the real evidence")
            control = control_character_in(item)
            if control is not None:
                raise ValueError(f"holds the control character {control}; write each reference on one plain line")
        return value

    @field_validator("verification")
    @classmethod
    def _real_verification(cls, value: str) -> str:
        marker = placeholder_in(value)
        if marker is not None:
            raise ValueError(f"still holds example placeholder text ({marker!r}); write what was observed")
        return value

    @field_validator("verification", "reason")
    @classmethod
    def _plain_text(cls, value: str) -> str:
        control = control_character_in(value, allow="\n\t")
        if control is not None:
            raise ValueError(f"holds the control character {control}; only line breaks and tabs are allowed")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> RunResult:
        if parse_utc(self.endedAt) < parse_utc(self.startedAt):
            raise ValueError("endedAt: is earlier than startedAt")
        if self.wrongActions > self.actions:
            raise ValueError("wrongActions: exceeds actions (a wrong action is a dispatched action)")
        if self.status != "success" and not self.reason.strip():
            raise ValueError(f"reason: required when status is {self.status}")
        if self.reason.strip().lower() == "timeout" and self.status != "failed":
            raise ValueError(f"status: a timeout is recorded as failed with reason=timeout, not {self.status}")
        if self.status == "success" and not self.verification.strip():
            raise ValueError("verification: required for a success (observed final state vs. acceptance)")
        self._within_budget()
        return self

    def _within_budget(self) -> None:
        # Seed 000: the budget (180 s, 30 actions) is fixed before the slot starts and "整个任务不得超过总预算";
        # reaching it stops the run ("预算到达即正常取消"), and "超时记 failed/reason=timeout". So a run past the
        # time budget is a timeout whatever else happened, and a run past either budget is never a success.
        if self.duration_ms() > BUDGET_SECONDS * 1000:
            if self.status == "success":
                raise ValueError(
                    f"status: success took {self.duration_ms()} ms, past the {BUDGET_SECONDS} s budget; "
                    "a run past the budget is not a success: record it as failed with reason=timeout"
                )
            if self.status != "failed" or self.reason.strip().lower() != "timeout":
                raise ValueError(
                    f"reason: the run took {self.duration_ms()} ms, past the {BUDGET_SECONDS} s budget; "
                    f"a run past the budget is a timeout: record it as failed with reason=timeout, not {self.status} "
                    "with another reason"
                )
        if self.status == "success" and self.actions > BUDGET_ACTIONS:
            raise ValueError(
                f"actions: {self.actions} exceed the {BUDGET_ACTIONS}-action budget, so the run is not a success; "
                "the budget stops the run: record it as cancelled (or failed) with the reason"
            )

    def duration_ms(self) -> int | float:
        """Wall-clock duration in milliseconds (an int unless the timestamps carry sub-millisecond digits)."""
        delta = parse_utc(self.endedAt) - parse_utc(self.startedAt)
        micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
        return micros // 1000 if micros % 1000 == 0 else micros / 1000

    def autonomous_success(self) -> bool:
        """A success with no human intervention and no wrong action (planner handoffs allowed)."""
        return self.status == "success" and self.humanInterventions == 0 and self.wrongActions == 0

    def budget_warnings(self) -> list[str]:
        """Departures from the budget that are recorded (never as a success) but an operator should double-check."""
        if self.actions > BUDGET_ACTIONS:
            return [
                f"{self.actions} actions exceed the {BUDGET_ACTIONS}-action budget; the run should have been stopped "
                f"at {BUDGET_ACTIONS}"
            ]
        return []
