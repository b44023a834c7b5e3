"""The `eval/<run>/` tree the host executor leaves, in the on-device layout (see farm/results/device_line.py).

`scores.jsonl` (one camelCase line per task), `metrics.json` (运行小结 per task), `summary.md`
(a table, 运行小结, an empty 人工改判 section), and `<id>/run/` written by the transcript.
"""

from __future__ import annotations

import json
from pathlib import Path

from farm.fsutil import atomic_write_text
from farm.results.device_line import WrittenScore


class EvalTree:
    """Accumulates one phone's lines and keeps the tree's files current after every task."""

    def __init__(self, root: Path, run: str) -> None:
        self.root = root
        self.run = run
        self.lines: list[WrittenScore] = []
        root.mkdir(parents=True, exist_ok=True)

    def add(self, line: WrittenScore) -> None:
        """Append a task's line and rewrite metrics.json and summary.md."""
        self.lines.append(line)
        with (self.root / "scores.jsonl").open("a", encoding="utf-8") as fh:
            fh.write(line.model_dump_json(by_alias=True) + "\n")
        metrics = {ln.id: ln.metrics.model_dump(by_alias=True) for ln in self.lines}
        atomic_write_text(self.root / "metrics.json", json.dumps(metrics, indent=2, ensure_ascii=False) + "\n")
        atomic_write_text(self.root / "summary.md", render_summary(self.run, self.lines))


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value / 1000:.1f}s"


def render_summary(run: str, lines: list[WrittenScore]) -> str:
    """summary.md: per-task table, 运行小结, markers to clean up, and the (empty) 人工改判 section."""
    passed = sum(1 for ln in lines if ln.passed)
    out = [f"# eval {run}", "", f"{passed}/{len(lines)} passed (host executor).", "",
           "| id | category | expect | outcome | passed | steps | reason |", "|---|---|---|---|---|---|---|"]
    for ln in lines:
        reason = (ln.reason or "").replace("|", "/").replace("\n", " ")[:120]
        out.append(f"| {ln.id} | {ln.category} | {ln.expect} | {ln.outcome} | {'yes' if ln.passed else 'no'} "
                   f"| {ln.steps} | {reason} |")
    out += ["", "## 运行小结", "",
            "| id | 第一次反馈 | 来回次数 | 模型 | 读屏 | 操作 | 其他 | 总计 | 步数 | tokens (in/cache/out) | cost |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for ln in lines:
        m, t = ln.metrics, ln.tokens
        cost = "—" if ln.cost_usd is None else f"${ln.cost_usd:.4f}"
        tok = "/".join("—" if v is None else str(v) for v in (t.input, t.cache_read, t.output))
        out.append(f"| {ln.id} | {_ms(m.first_feedback_ms)} | {m.round_trips if m.round_trips is not None else '—'} "
                   f"| {_ms(m.model_ms)} | {_ms(m.screen_read_ms)} | {_ms(m.action_ms)} | {_ms(m.other_ms)} "
                   f"| {_ms(m.total_ms)} | {ln.steps} | {tok} | {cost} |")
    markers = [m for ln in lines for m in ln.markers]
    out += ["", "## 标记数据(需人工清理)", "", *([f"- {m}" for m in markers] or ["(无)"])]
    out += ["", "## 人工改判", ""]
    return "\n".join(out) + "\n"
