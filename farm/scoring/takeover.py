"""Seed 003's takeover rule: which hand-overs count as 「交给用户:<barrier>」.

Only a barrier the agent reported right before the hand-over, and visible on the screen it
was looking at, counts; a task that declares the user signed in is not in this class; the
task's `acceptTakeoverOn` names the barriers it accepts (`[]`: none).

The kind comes from what the screen shows (its visible text, never ids or class names): a
payment-password screen is a `payment` barrier even when it also says 密码, a verification-code
or captcha screen is `captcha`, a sign-in form is `login`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from farm.scoring.evidence import HandOver
from farm.scoring.text import find, norm
from farm.scoring.visible import screen_text

DEFAULT_ACCEPTED = ("login", "captcha")
"""Barriers accepted when a task does not say: a login box or captcha words (seed 003: 登录框 / 验证码字样)."""

KINDS = ("payment", "captcha", "login")
"""Barrier kinds, most specific first: a screen showing several is classed as the first."""

# Words that make a barrier visible on a screen, per kind (matched on token boundaries after normalisation).
BARRIER_WORDS: dict[str, tuple[str, ...]] = {
    "payment": (
        "支付密码", "付款密码", "输入支付密码", "请输入支付密码", "验证支付密码", "交易密码", "支付验证",
        "payment password", "payment pin", "enter your pin to pay", "confirm payment",
    ),
    "captcha": (
        "验证码", "captcha", "人机验证", "安全验证", "滑块", "拖动滑块", "图形验证", "请完成验证",
        "verification code", "verify you are human", "i'm not a robot", "security check",
    ),
    "login": (
        "登录", "登陆", "sign in", "log in", "login", "signin", "密码", "password", "账号登录", "立即登录",
    ),
}
# Words in the agent's hand-over reason that name a barrier kind.
_REASON_WORDS: dict[str, tuple[str, ...]] = {
    "payment": ("payment", "pay", "支付", "付款"),
    "captcha": ("captcha", "验证码", "人机", "滑块", "robot", "verification", "verify", "验证", "2fa", "otp"),
    "login": ("login", "log in", "sign in", "signin", "登录", "登陆", "password", "密码", "account", "账号"),
}
_ALIASES = {"verification": "captcha"}
SIGNED_IN_PREFIXES = ("signedIn:", "login:", "site:")


def barrier_kind(reason: str) -> str:
    """The barrier kind a hand-over reason names (payment, captcha, login), or the reason's first word."""
    text = norm(reason)
    for kind in KINDS:
        if any(find(text, w) for w in _REASON_WORDS[kind]):
            return kind
    word = text.split(" ")[0] if text else "unknown"
    return _ALIASES.get(word, word)


def visible_kinds(screen: str) -> list[str]:
    """Barrier kinds whose words the screen's visible text shows, most specific first."""
    text = screen_text(screen)
    return [kind for kind in KINDS if any(find(text, w) for w in BARRIER_WORDS[kind])]


def screen_kind(screen: str, reported: str = "") -> str | None:
    """The barrier a screen shows: payment above all, else the reported kind when visible, else the first."""
    kinds = visible_kinds(screen)
    if not kinds:
        return None
    if kinds[0] == "payment":
        return "payment"
    wanted = _ALIASES.get(reported, reported)
    return wanted if wanted in kinds else kinds[0]


def barrier_visible(kind: str, screen: str) -> bool:
    """Whether the screen's visible text shows words of that barrier kind."""
    return _ALIASES.get(kind, kind) in visible_kinds(screen)


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
    reported = barrier_kind(hand_over.reason)
    shown = screen_kind(hand_over.screen, reported)
    kind = shown or reported
    if any(r.startswith(SIGNED_IN_PREFIXES) for r in requires):
        return TakeoverVerdict(False, kind, "task declares the user signed in: a hand-over is not a takeover")
    if reported not in KINDS:
        return TakeoverVerdict(False, kind, f"the hand-over reason names no barrier ({', '.join(KINDS)})")
    if shown is None:
        return TakeoverVerdict(False, kind, f"no {reported} barrier visible on the screen before the hand-over")
    accepted = {_ALIASES.get(k, k) for k in (DEFAULT_ACCEPTED if accept_on is None else accept_on)}
    if kind not in accepted:
        allowed = ", ".join(sorted(accepted)) or "none"
        return TakeoverVerdict(False, kind, f"hand-over for {kind!r} not accepted by this task (accepts: {allowed})")
    return TakeoverVerdict(True, kind, f"takeover:{kind} (barrier visible on the screen before the hand-over)")
