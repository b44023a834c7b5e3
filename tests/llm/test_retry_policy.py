"""Pure retry-policy logic: Retry-After parsing, backoff bounds, status classification."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from email.utils import format_datetime

import pytest

from farm.llm.retry import Failure, backoff_s, kind_for_status, parse_retry_after, wait_s


def test_retry_after_seconds() -> None:
    assert parse_retry_after({"Retry-After": "2.5"}) == 2.5


def test_retry_after_ms_takes_precedence() -> None:
    assert parse_retry_after({"retry-after-ms": "150", "retry-after": "9"}) == pytest.approx(0.15)


def test_retry_after_http_date() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    later = format_datetime(datetime(2026, 1, 1, 12, 0, 30, tzinfo=UTC), usegmt=True)
    assert parse_retry_after({"retry-after": later}, now=now.timestamp()) == pytest.approx(30.0)


def test_retry_after_in_the_past_is_zero() -> None:
    past = "Wed, 21 Oct 2015 07:28:00 GMT"
    assert parse_retry_after({"retry-after": past}) == 0.0


@pytest.mark.parametrize("headers", [None, {}, {"retry-after": "soon"}, {"x-other": "1"}])
def test_absent_or_garbage_retry_after_is_none(headers: dict[str, str] | None) -> None:
    assert parse_retry_after(headers) is None


@pytest.mark.parametrize("attempt", [1, 2, 3, 8, 20])
def test_backoff_stays_within_half_step_and_step(attempt: int) -> None:
    rng = random.Random(attempt)
    step = min(10.0, 0.5 * 2 ** (attempt - 1))
    for _ in range(50):
        value = backoff_s(attempt, initial_s=0.5, max_s=10.0, rng=rng)
        assert step / 2 <= value <= step


def test_retry_after_beats_backoff_and_is_capped() -> None:
    failure = Failure("rate_limit", 429, 7.0, "")
    assert wait_s(failure, 1, initial_s=100, max_s=100, retry_after_max_s=60) == 7.0
    assert wait_s(failure, 1, initial_s=100, max_s=100, retry_after_max_s=3) == 3.0


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (429, "rate_limit"),
        (500, "server"),
        (503, "server"),
        (529, "server"),
        (408, "server"),
        (400, "client"),
        (401, "client"),
        (404, "client"),
    ],
)
def test_status_kinds(status: int, kind: str) -> None:
    assert kind_for_status(status) == kind
    assert Failure(kind_for_status(status), status, None, "").retryable == (kind != "client")
