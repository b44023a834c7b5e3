"""Tasks the virtual agent app runs in tests of its trees and of their unit pages."""

from __future__ import annotations

from typing import Any

CALC_ADD: tuple[str, dict[str, Any]] = (
    "read/content", {"id": "calc-add", "goal": "用手机自带的计算器算 2+3,告诉我结果", "apps": ["{app:calculator}"],
                     "category": "read", "partition": "tune", "requires": ["app:calculator"], "expect": "succeeded",
                     "checks": [{"type": "answer_contains", "text": "5"}]})
"""A read task answered from the calculator."""
ALARM_ASK: tuple[str, dict[str, Any]] = (
    "write", {"id": "alarm-ask", "goal": "帮我定个闹钟,标签写 AF-{run}-a", "apps": ["{app:alarm}"],
              "category": "write", "partition": "tune", "requires": ["app:alarm"], "expect": "succeeded",
              "marker": "AF-{run}-a", "answers": {"几点|什么时间": "早上7点"},
              "checks": [{"type": "asked_user"},
                         {"type": "screen_has", "marker": True, "packageName": "{app:alarm}"}]})
"""A write task that asks the user first and leaves a marked alarm."""
