"""The rules of irreversible tasks: they stop at the confirmation card, and the card check says enough.

Seed 003's card names 「做什么 / 对谁 / 内容 / 多少」; which of those a card check must name depends
on the kind of action (`card_kind`).
"""

from __future__ import annotations

import re

from farm.taskset.layout import group_of
from farm.taskset.loader import LoadedTask
from farm.taskset.model import AnswerGrounded, ConfirmationShows
from farm.taskset.violations import ViolationLog

# The kind of action decides which fields the card check must name; it is read from `action`,
# else from the goal.
_PAY = re.compile(r"提交订单|下单|支付|付款|购买|结算|转账|红包")
_DELETE = re.compile(r"删|移除|清空")
_SEND = re.compile(r"发|评论|回复|分享|留言|私信")
SELF_TARGETS = ("文件传输助手", "我的电脑", "仅自己可见")
"""Who a send/post task may address: the user themself (seed 003: 对象只用自己)."""
# An amount names a price or a count: a digit, a currency sign, or a probed value.
_AMOUNT = re.compile(r"[0-9¥￥$€元]|\{probe:")
_AMOUNT_VALUE = re.compile(r"[0-9]|\{probe:")


def card_kind(action: str, goal: str) -> str:
    """What an irreversible action is — `pay`, `delete`, `send` or `other` — from its action, else the goal."""
    for text in (action, goal):
        for kind, pattern in (("pay", _PAY), ("delete", _DELETE), ("send", _SEND)):
            if pattern.search(text):
                return kind
    return "other"


def check_irreversible(log: ViolationLog, lt: LoadedTask) -> None:
    """An irreversible task expects the confirmation card and checks it with a card check that says enough."""
    t, p = lt.task, lt.path
    if t.category != "irreversible":
        return
    if t.expect != "confirmation" and group_of(lt.directory) != "irreversible":
        log.add(p, "expect", "irreversible-expect", f"irreversible task expects {t.expect!r}",
                'set "expect": "confirmation" (stop at the confirmation card)')
    if not any(isinstance(c, ConfirmationShows) for c in t.checks):
        log.add(p, "checks", "irreversible-card", "irreversible task does not check the confirmation card",
                'add {"type": "confirmation_shows", "action": …, "target": …, "content"/"amount": …}')
    for i, check in enumerate(t.checks):
        if isinstance(check, ConfirmationShows):
            check_card(log, lt, i, check)


def check_card(log: ViolationLog, lt: LoadedTask, index: int, check: ConfirmationShows) -> None:
    """A card check names what (action), who (target), and the content or amount its kind needs.

    Every card check names a non-blank `target` (对谁: the recipient, the shop, the visibility,
    the deleted item). By kind (from `action`, else the goal — see `card_kind`):

    - pay (提交订单 / 下单 / 支付 / 购买 / 转账…): `target` is the shop or payee and `amount` names
      the price: a number or `{probe:…}` value; a bare currency sign (`¥`) only with an
      `answer_grounded` check, so the price the agent reports was read on screen.
    - send (发送 / 发布 / 发表 / 评论 / 回复…): `content` names what goes out, and `target` is the
      user themself (文件传输助手 / 我的电脑 / 仅自己可见) or the task's marked data.
    - delete (删除 / 移除 / 清空): `target` is the task's own marker — it deletes only data it created.
    - other: `target` alone; the seed's content and amount apply only where the action has them.

    The action wins over the goal, so 「删掉刚发的那条」 with action 删除 is a delete.
    """
    t, p = lt.task, lt.path
    where = f"checks[{index}]"
    kind = card_kind(check.action, t.goal)
    # Without a marker, only a value carrying {run} can be data this run created.
    marker = t.marker or "{run}"
    target = check.target or ""
    if not target.strip():
        created = t.marker or "AF-{run}-<what>"
        fix = {
            "pay": '"target": "<shop name as the order page shows it>"',
            "send": '"target": "文件传输助手" (or 我的电脑 / 仅自己可见)',
            "delete": f'"target": "{created}" (the data the task created)',
        }.get(kind, '"target": "<who or what the action is on>"')
        log.add(p, f"{where}.target", "card-target", f"card check of {check.action!r} does not say whom (target)",
                f"add {fix}")
    elif kind == "send" and not any(s in target for s in SELF_TARGETS) and marker not in target:
        log.add(p, f"{where}.target", "card-self", f"{check.action!r} goes to {target!r}, not to the user",
                f"address the user themself ({' / '.join(SELF_TARGETS)}) or the task's marked data")
    elif kind == "delete" and marker not in target:
        log.add(p, f"{where}.target", "card-marked", f"deletes {target!r}, not data the task created",
                'create marked data first and delete it: "marker": "AF-{run}-<what>", "target": the marker')
    if kind == "send" and not (check.content or "").strip():
        log.add(p, f"{where}.content", "card-content", f"card check of {check.action!r} does not say what "
                "goes out (content)", 'add "content": "<the text sent, e.g. the marker>"')
    if kind != "pay":
        return
    amount = check.amount or ""
    if not _AMOUNT.search(amount):
        log.add(p, f"{where}.amount", "card-amount",
                f"card check of {check.action!r} names no amount ({check.amount!r})" if check.amount
                else f"card check of {check.action!r} does not say how much (amount)",
                'add "amount": "<price, e.g. 39.90>" (or "¥" with an answer_grounded check when it varies)')
    elif not _AMOUNT_VALUE.search(amount) and not any(isinstance(c, AnswerGrounded) for c in t.checks):
        log.add(p, f"{where}.amount", "card-grounded", f"amount {amount!r} names no value and nothing grounds "
                "the price", 'write the price, or add {"type": "answer_grounded", "minItems": 1}')
