"""Seed 003's takeover rule: which hand-overs count as 「交给用户:<barrier>」.

Only a barrier the agent reported right before the hand-over, and visible on the screen it
was looking at, counts; a task that declares the user signed in is not in this class; the
task's `acceptTakeoverOn` names the barriers it accepts (`[]`: none).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from farm.scoring.evidence import HandOver
from farm.scoring.text import norm

DEFAULT_ACCEPTED = ("login", "captcha")
"""Barriers accepted when a task does not say: a login box or captcha words (seed 003)."""

# Words that make a barrier visible on a screen, per kind (matched after normalisation).
BARRIER_WORDS: dict[str, tuple[str, ...]] = {
    "login": ("登录", "登陆", "sign in", "signin", "log in", "login", "密码", "password", "账号登录", "验证码登录"),
    "captcha": (
        "验证码", "captcha", "人机验证", "安全验证", "滑块", "拖动滑块", "verify you are human", "i'm not a robot"
    ),
    "verification": ("验证码", "短信验证", "身份验证", "verification code", "verify", "验证"),
}
# Words in the agent's hand-over reason that name a barrier kind.
_REASON_WORDS: dict[str, tuple[str, ...]] = {
    "captcha": ("captcha", "验证码", "人机", "滑块", "robot"),
    "login": ("login", "log in", "sign in", "signin", "登录", "登陆", "password", "密码", "account", "账号"),
    "verification": ("verification", "verify", "验证", "2fa", "otp"),
}
SIGNED_IN_PREFIXES = ("signedIn:", "login:", "site:")


def barrier_kind(reason: str) -> str:
    """The barrier kind a hand-over reason names (login, captcha, verification), or the reason itself."""
    text = norm(reason)
    for kind, words in _REASON_WORDS.items():
        if any(w in text for w in words):
            return kind
    return text.split(" ")[0] if text else "unknown"


def barrier_visible(kind: str, screen: str) -> bool:
    """Whether the screen text shows words of that barrier kind."""
    text = norm(screen)
    words = BARRIER_WORDS.get(kind, (kind,))
    return any(norm(w) in text for w in words)


@dataclass(frozen=True)
class TakeoverVerdict:
    """Whether a hand-over counts as a takeover, and why."""

    accepted: bool
    kind: str
    reason: str


def judge_hand_over(
    hand_over: HandOver, *, requires: Sequence[str], accept_on: Sequence[str] | None
) -> TakeoverVerdict:
    """Apply the takeover rule to the hand-over that ended an attempt."""
    kind = barrier_kind(hand_over.reason)
    if any(r.startswith(SIGNED_IN_PREFIXES) for r in requires):
        return TakeoverVerdict(False, kind, "task declares the user signed in: a hand-over is not a takeover")
    accepted = tuple(DEFAULT_ACCEPTED if accept_on is None else accept_on)
    if kind not in accepted:
        allowed = ", ".join(accepted) or "none"
        return TakeoverVerdict(False, kind, f"hand-over for {kind!r} not accepted by this task (accepts: {allowed})")
    if not barrier_visible(kind, hand_over.screen):
        return TakeoverVerdict(False, kind, f"no {kind} barrier visible on the screen before the hand-over")
    return TakeoverVerdict(True, kind, f"takeover:{kind} (barrier visible on the screen before the hand-over)")
