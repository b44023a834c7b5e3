"""The simulated agent's run record (`<id>/run/`), written the way docs/agent-app.md asks an agent app to.

Every step reads the phone's real screen (its text and a PNG screenshot, stored once per distinct screen), and
records the tool call with its arguments, the model's message, timings and tokens. Only the first step's
`launch` is performed: the simulated agent decides its outcome up front (`simagent.attempt`), so its other
calls are recorded as not performed and never change an app's data. The last screen of an answer or a hand-over
is the agent's own (what it answers with, the barrier it met), as the scoring evidence of the attempt;
`final.json` carries that evidence, with the questions it asked and the confirmation card it showed.
"""

from __future__ import annotations

import hashlib
import io
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from PIL import Image, ImageDraw

from farm.scoring.dialogue import reply_for
from farm.sim import screen

if TYPE_CHECKING:
    from farm.sim.apps.base import Node
    from farm.sim.phone import PhoneState

SHOT_SCALE = 0.4
"""Screenshots are the screen at 40 %: readable in the viewer, a few tens of KB each."""
SHOT_CAP_BYTES = 16 * 1024 * 1024
"""Screenshot bytes one attempt stores at most (as the host executor); later steps say `CAP_NOTE`."""
CAP_NOTE = "screenshot omitted: cap"
NOT_PERFORMED = "simulated: not performed on the phone"
# Attempt end (record vocabulary) → evidence end (the harness's vocabulary), and the tool that ends it.
_END = {"answer": "answer", "give_up": "give_up", "confirm": "confirmation", "takeover": "hand_over",
        "max_steps": "max_steps"}
_TERMINAL_TOOL = {"answer": "answer", "give_up": "give_up", "confirm": "confirm", "takeover": "hand_over"}
LOGIN_SCREEN = '[1] TextView "请先登录"\n[2] Button "登录" click'
"""What the simulated agent met when it hands over: a sign-in wall."""


@dataclass
class Screen:
    """One read of the screen."""

    text: str
    package: str
    png: bytes


@dataclass
class RunWriter:
    """Builds one attempt's steps and evidence, storing its screenshots in `run_dir` (a device path)."""

    phone: PhoneState
    run_dir: str
    stored: set[str] = field(default_factory=set)
    shot_bytes: int = 0

    def shot(self, png: bytes) -> str:
        """The screenshot's file name next to steps.jsonl (content-addressed: a screen is stored once)."""
        name = f"shot-{hashlib.sha256(png).hexdigest()[:16]}.png"
        if name in self.stored:
            return name
        if self.shot_bytes + len(png) > SHOT_CAP_BYTES:
            return CAP_NOTE
        self.phone.write_atomic(f"{self.run_dir}/{name}", png)
        self.stored.add(name)
        self.shot_bytes += len(png)
        return name

    def transcript(self, task: dict[str, Any], rec: dict[str, Any], run: str, start: datetime
                   ) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        """(steps.jsonl lines, final.json `evidence`) of a finished attempt; no evidence for a skipped one."""
        n = int(rec.get("steps") or 0)
        end = str(rec.get("endReason") or "")
        if n == 0 or end not in _END:
            return [], None
        rng = random.Random(f"steps:{rec['id']}:{run}")
        total = float(rec["metrics"].get("totalMs") or 0)
        app = str(rec.get("appPackage") or "")
        ask_at = 2 if rec["passed"] and n >= 3 and _wants_ask(task) else None
        steps: list[dict[str, Any]] = []
        evidence: dict[str, Any] = {"end": _END[end], "answer": rec.get("answer"), "endReason": rec.get("reason") or "",
                                    "screenReads": [], "asks": [], "confirmations": [], "handOver": None,
                                    "packagesUsed": [], "steps": n, "stepErrors": 0}
        for number in range(1, n + 1):
            last = number == n
            shown = self._screen(rec, end) if last and (rec.get("answer") or end == "takeover") else self.read()
            if number == ask_at:
                call, result = self._ask(task, number, evidence)
            elif last and end in _TERMINAL_TOOL:
                call, result = self._terminal(task, rec, end, evidence, number, shown)
            elif number == 1 and app:
                call, result = self._launch(app)
            else:
                call, result = _simulated(rng, shown)
            evidence["screenReads"].append({"step": number, "text": shown.text, "package": shown.package})
            if shown.package and shown.package not in evidence["packagesUsed"]:
                evidence["packagesUsed"].append(shown.package)
            steps.append({
                "step": number, "atMs": round(total * (number - 1) / n),
                "at": _iso(start + timedelta(milliseconds=total * (number - 1) / n)),
                "observation": {"digest": hashlib.sha1(shown.text.encode("utf-8")).hexdigest(), "text": shown.text,
                                "package": shown.package, "screenshot": self.shot(shown.png)},
                "action": call, "result": result,
                "timings": {"screenReadMs": round(total * 0.1 / n), "modelMs": round(total * 0.65 / n),
                            "actionMs": round(total * 0.08 / n), "otherMs": round(total * 0.17 / n)},
                "tokens": _share(rec["tokens"], number, n), "execution": "simulated",
            })
        return steps, evidence

    def read(self) -> Screen:
        """The phone's screen now: compact text (as an agent reads it) and a PNG."""
        ui = self.phone.ui
        package, activity = ui.foreground()
        lines = [f"app: {package}/{activity}"] + _lines([n for root in ui.roots() for n in root.walk()])
        return Screen("\n".join(lines), package, screen.render(ui, "PNG", scale=SHOT_SCALE))

    def _screen(self, rec: dict[str, Any], end: str) -> Screen:
        """The agent's own last screen: its answer, or the sign-in wall it hands over at."""
        if end == "takeover":
            text, package = LOGIN_SCREEN, str(rec.get("appPackage") or "")
        else:
            package = str(rec.get("appPackage") or "")
            text = f'app: {package}\n[1] TextView "{str(rec["answer"]).replace(chr(34), chr(39))}"'
        ui = self.phone.ui
        return Screen(text, package, _card(text, round(ui.width * SHOT_SCALE), round(ui.height * SHOT_SCALE)))

    def _launch(self, app: str) -> tuple[dict[str, Any], dict[str, Any]]:
        # An `{app:<capability>}` the harness could not resolve (no standard intent) is the agent's to choose.
        capability = app[5:-1] if app.startswith("{app:") and app.endswith("}") else None
        args = {"capability": capability} if capability else {"package": app}
        call = {"tool": "launch", "args": args, "message": f"(模拟)先打开 {capability or app}"}
        if app and capability is None and self.phone.ui.launch(app):
            return call, {"ok": True, "text": f"opened {app}"}
        return call, {"ok": False, "text": "", "error": f"{app}: no such app on this phone"}

    def _ask(self, task: dict[str, Any], number: int, evidence: dict[str, Any]
             ) -> tuple[dict[str, Any], dict[str, Any]]:
        answers = {str(k): str(v) for k, v in (task.get("answers") or {}).items()}
        key = next(iter(answers), "哪一个")
        question = f"(模拟)请问{key.split('|')[0]}?"
        # The app answers its own questions from the task's `answers`, by the harness's rule (docs/agent-app.md).
        reply, matched = reply_for(question, answers)
        evidence["asks"].append({"step": number, "question": question, "reply": reply, "matched": matched})
        return ({"tool": "ask_user", "args": {"question": question}, "message": "(模拟)缺的信息只有用户知道"},
                {"ok": True, "text": reply})

    def _terminal(self, task: dict[str, Any], rec: dict[str, Any], end: str, evidence: dict[str, Any], number: int,
                  shown: Screen) -> tuple[dict[str, Any], dict[str, Any]]:
        tool = _TERMINAL_TOOL[end]
        if end == "confirm":
            card = _card_fields(task)
            evidence["confirmations"].append(card)
            return ({"tool": tool, "args": card, "message": "(模拟)不可逆的一步:先出确认卡片"},
                    {"ok": True, "text": "confirmation card shown; the task ends here"})
        if end == "takeover":
            kind = str(rec.get("takeoverKind") or "login")
            evidence["handOver"] = {"step": number, "reason": kind, "screen": shown.text}
            return ({"tool": tool, "args": {"reason": kind}, "message": "(模拟)遇到登录墙,交给用户"},
                    {"ok": True, "text": "handed over"})
        key = "text" if end == "answer" else "reason"
        return ({"tool": tool, "args": {key: rec.get("answer") or rec.get("reason") or ""},
                 "message": "(模拟)回答用户"}, {"ok": True, "text": "answer recorded"})


def _iso(when: datetime) -> str:
    return when.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _wants_ask(task: dict[str, Any]) -> bool:
    return any(isinstance(c, dict) and c.get("type") == "asked_user" and c.get("expected", True)
               for c in task.get("checks") or [])


def _card_fields(task: dict[str, Any]) -> dict[str, str]:
    """The card a right attempt shows: what the task's confirmation_shows check names."""
    for check in task.get("checks") or []:
        if isinstance(check, dict) and check.get("type") == "confirmation_shows":
            return {k: str(check.get(k) or "") for k in ("action", "target", "content", "amount")}
    return {"action": "发送", "target": "", "content": "", "amount": ""}


def _lines(nodes: list[Node]) -> list[str]:
    """`[ref] Class "text" desc="…" (id) flags` for each meaningful node (the contract's screen-text format)."""
    out: list[str] = []
    for node in nodes:
        left, top, right, bottom = node.bounds
        if right <= left or bottom <= top or not (node.text or node.desc or node.clickable or node.scrollable):
            continue
        line = f"[{len(out) + 1}] {node.cls.rsplit('.', 1)[-1]}"
        if node.text:
            line += ' "' + node.text.replace('"', "'").replace("\n", " ") + '"'
        if node.desc and node.desc != node.text:
            line += ' desc="' + node.desc.replace('"', "'").replace("\n", " ") + '"'
        if node.rid:
            line += f" ({node.rid.rsplit(':id/', 1)[-1]})"
        flags = [("click", node.clickable), ("scroll", node.scrollable), ("checked", node.checkable and node.checked)]
        out.append(line + "".join(f" {name}" for name, on in flags if on))
    return out


def _simulated(rng: random.Random, shown: Screen) -> tuple[dict[str, Any], dict[str, Any]]:
    """A call the simulated agent records but does not perform (its outcome is already decided)."""
    clickable = [line for line in shown.text.splitlines() if line.endswith(" click") or " click " in line]
    kind = rng.choice(("tap", "tap", "swipe", "type", "back"))
    if kind == "tap" and clickable:
        ref = int(rng.choice(clickable).split("]", 1)[0].lstrip("["))
        call = {"tool": "tap", "args": {"ref": ref}, "message": f"(模拟)点第 {ref} 项"}
    elif kind == "type":
        call = {"tool": "type", "args": {"text": "(模拟)"}, "message": "(模拟)输入"}
    elif kind == "back":
        call = {"tool": "back", "args": {}, "message": "(模拟)返回"}
    else:
        call = {"tool": "swipe", "args": {"direction": "up"}, "message": "(模拟)往下看"}
    return call, {"ok": True, "text": NOT_PERFORMED}


def _share(tokens: dict[str, Any], number: int, n: int) -> dict[str, int | None]:
    """This step's part of the attempt's tokens (the last step takes the remainder)."""
    out: dict[str, int | None] = {}
    for key, value in tokens.items():
        if not isinstance(value, int):
            out[key] = None
            continue
        part = value // n
        out[key] = value - part * (n - 1) if number == n else part
    return out


def _card(text: str, width: int, height: int) -> bytes:
    """The agent's own screen drawn as a PNG: one row per visible text (buttons as buttons)."""
    img = Image.new("RGB", (width, height), screen.BG)
    draw = ImageDraw.Draw(img)
    row, size = max(24, height // 14), max(10, height // 40)
    top = row
    for line in text.splitlines():
        if line.startswith("app: "):
            draw.rectangle((0, 0, width, row * 3 // 4), fill=(230, 230, 230))
            draw.text((8, row // 6), line[5:] or "agent", fill=screen.MUTED, font=screen.font(size))
            continue
        shown = line.split('"')[1] if line.count('"') >= 2 else line
        if " Button " in f" {line} ":
            draw.rounded_rectangle((16, top + 4, width - 16, top + row - 4), radius=row // 4, fill=screen.BUTTON)
        draw.text((24, top + (row - size) // 2), shown[:80], fill=screen.INK, font=screen.font(size))
        top += row
    buf = io.BytesIO()
    img.save(buf, "PNG", optimize=False, compress_level=1)
    return buf.getvalue()
