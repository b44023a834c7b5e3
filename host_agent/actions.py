"""Performing a parsed tool call on the phone and collecting the evidence it leaves."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from farm.scoring.dialogue import reply_for
from farm.scoring.evidence import AskEvent, ConfirmationCard, EndKind, HandOver
from host_agent import tools as t
from host_agent.observation import Observation
from host_agent.phone import Phone

# Buttons that perform the final, irreversible step. The harness never presses them during an
# evaluation: the agent must call confirm(...) instead, which ends the task with a card.
_FINAL_STEP = re.compile(
    r"(确认)?(发送|删除|支付|付款|购买|发布|下单|提交订单|立即购买|立即支付)|"
    r"send|delete|pay|pay now|buy|buy now|post|publish|place order|submit order|confirm (send|delete|payment)",
    re.IGNORECASE,
)


def is_final_step(label: str) -> bool:
    """Whether a button label names an irreversible final step (send, buy, delete, pay, post)."""
    return bool(_FINAL_STEP.fullmatch(label.strip()))


@dataclass
class ActionResult:
    """What happened when a call was performed."""

    ok: bool
    text: str
    error: str | None = None
    end: EndKind | None = None
    end_reason: str = ""
    answer: str | None = None
    ask: AskEvent | None = None
    card: ConfirmationCard | None = None
    hand_over: HandOver | None = None
    action_ms: float = 0.0
    waited_ms: float = 0.0


@dataclass
class ActionEnv:
    """What actions may use besides the phone."""

    answers: Mapping[str, str] = field(default_factory=dict)
    """The task's auto replies for ask_user."""
    apps: Mapping[str, str] = field(default_factory=dict)
    """Capability → package on this phone."""
    installed: frozenset[str] = frozenset()
    """Packages on the phone (empty = unknown, then any package may be launched)."""


def _point(args: t.Tap | t.LongPress, obs: Observation) -> tuple[int, int] | str:
    if args.ref is not None:
        node = obs.node(args.ref)
        if node is None:
            return f"no element [{args.ref}] on this screen (refs go from 1 to {len(obs.rows)})"
        return node.center
    assert args.x is not None and args.y is not None
    return args.x, args.y


def _swipe_points(args: t.Swipe, size: tuple[int, int]) -> tuple[int, int, int, int]:
    if args.direction is None:
        assert args.x1 is not None and args.y1 is not None and args.x2 is not None and args.y2 is not None
        return args.x1, args.y1, args.x2, args.y2
    w, h = size
    cx, cy = w // 2, h // 2
    dy, dx = int(h * 0.3), int(w * 0.35)
    return {
        "up": (cx, cy + dy, cx, cy - dy),
        "down": (cx, cy - dy, cx, cy + dy),
        "left": (cx + dx, cy, cx - dx, cy),
        "right": (cx - dx, cy, cx + dx, cy),
    }[args.direction]


def perform(args: t._Args, obs: Observation, phone: Phone, env: ActionEnv, step: int) -> ActionResult:
    """Do one call. Bad refs or names are step errors; PhoneError (infrastructure) propagates."""
    t0 = time.perf_counter()
    result = _perform(args, obs, phone, env, step)
    result.action_ms = (time.perf_counter() - t0) * 1000 - result.waited_ms
    return result


def _perform(args: t._Args, obs: Observation, phone: Phone, env: ActionEnv, step: int) -> ActionResult:
    if isinstance(args, (t.Tap, t.LongPress)):
        point = _point(args, obs)
        if isinstance(point, str):
            return ActionResult(False, point, error=point)
        node = obs.node(args.ref) if args.ref is not None else None
        if node is not None and (is_final_step(node.text) or is_final_step(node.desc)):
            msg = (f"not performed: [{args.ref}] {node.text or node.desc!r} is an irreversible step; "
                   "call confirm(action, target, content, amount) instead")
            return ActionResult(False, msg, error=msg)
        if isinstance(args, t.Tap):
            phone.tap(*point)
        else:
            phone.long_press(*point)
        return ActionResult(True, f"{t.tool_name(args)} at {point[0]},{point[1]}")
    if isinstance(args, t.TypeText):
        if args.ref is not None:
            node = obs.node(args.ref)
            if node is None:
                return ActionResult(False, f"no element [{args.ref}]", error=f"no element [{args.ref}]")
            phone.tap(*node.center)
        phone.type_text(args.text)
        if args.enter:
            phone.press("enter")
        return ActionResult(True, f"typed {args.text!r}")
    if isinstance(args, t.Swipe):
        x1, y1, x2, y2 = _swipe_points(args, phone.size())
        phone.swipe(x1, y1, x2, y2)
        return ActionResult(True, f"swiped {args.direction or 'from ' + str((x1, y1)) + ' to ' + str((x2, y2))}")
    if isinstance(args, t.Back):
        phone.press("back")
        return ActionResult(True, "pressed back")
    if isinstance(args, t.Home):
        phone.press("home")
        return ActionResult(True, "pressed home")
    if isinstance(args, t.Launch):
        package = args.package or env.apps.get(args.capability or "")
        if not package:
            known = ", ".join(sorted(env.apps)) or "none"
            msg = f"no app for capability {args.capability!r} on this phone (known: {known}); try a package"
            return ActionResult(False, msg, error=msg)
        if env.installed and package not in env.installed:
            msg = f"package {package!r} is not installed"
            return ActionResult(False, msg, error=msg)
        phone.launch(package)
        return ActionResult(True, f"launched {package}")
    if isinstance(args, t.Wait):
        t0 = time.perf_counter()
        time.sleep(args.seconds)
        return ActionResult(True, f"waited {args.seconds:g}s", waited_ms=(time.perf_counter() - t0) * 1000)
    if isinstance(args, t.AskUser):
        reply, key = reply_for(args.question, env.answers)
        event = AskEvent(step=step, question=args.question, reply=reply, matched=key)
        return ActionResult(True, f"user replied: {reply}", ask=event)
    if isinstance(args, t.Answer):
        return ActionResult(True, "answer recorded", end="answer", answer=args.text)
    if isinstance(args, t.GiveUp):
        return ActionResult(True, "gave up", end="give_up", end_reason=args.reason)
    if isinstance(args, t.HandOver):
        reason = args.reason + (f": {args.detail}" if args.detail else "")
        hand = HandOver(step=step, reason=args.reason, screen=obs.text)
        return ActionResult(True, "handed over to the user", end="hand_over", end_reason=reason, hand_over=hand)
    if isinstance(args, t.Confirm):
        card = ConfirmationCard(action=args.action, target=args.target, content=args.content, amount=args.amount)
        # The harness shows the card and stops: the irreversible step itself is never performed.
        return ActionResult(True, "confirmation card shown; the action was not performed", end="confirmation",
                            end_reason=f"confirm {args.action}", card=card)
    msg = f"unsupported tool {type(args).__name__}"
    return ActionResult(False, msg, error=msg)
