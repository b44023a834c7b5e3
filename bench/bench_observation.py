"""P7: hierarchy XML of 1000 nodes → observation text (goal ≤ 5 ms median), and per-step harness
overhead on the virtual phone (observation + action, model excluded).

Prints the expat converter side by side with a plain ElementTree walk, so the ratio is measured in
one run on one machine.
"""

from __future__ import annotations

import statistics
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from host_agent.observation import observe_xml  # noqa: E402

GOAL_MS = 5.0


def synthetic_dump(count: int) -> str:
    """A uiautomator-style dump with `count` nodes: nested lists of rows with text, ids and buttons."""
    rows: list[str] = []
    for i in range(count - 1):
        clickable = "true" if i % 3 == 0 else "false"
        text = f"Item {i} — ¥{i * 7}.50" if i % 2 == 0 else ""
        desc = f"icon {i}" if i % 5 == 0 else ""
        top = (i * 37) % 2300
        rows.append(
            f'<node index="{i % 9}" text="{text}" resource-id="com.example.shop:id/row_{i % 40}" '
            f'class="android.widget.{"Button" if clickable == "true" else "TextView"}" package="com.example.shop" '
            f'content-desc="{desc}" checkable="false" checked="false" clickable="{clickable}" enabled="true" '
            f'focusable="{clickable}" focused="false" scrollable="false" long-clickable="false" password="false" '
            f'selected="false" visible-to-user="true" bounds="[0,{top}][1080,{top + 36}]" drawing-order="{i}" '
            f'hint="" display-id="0" />'
        )
    body = "\r\n    ".join(rows)
    return (
        "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>\r\n<hierarchy rotation=\"0\">\r\n"
        '  <node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="com.example.shop" '
        'content-desc="" checkable="false" checked="false" clickable="false" enabled="true" focusable="false" '
        'focused="false" scrollable="true" long-clickable="false" password="false" selected="false" '
        f'visible-to-user="true" bounds="[0,0][1080,2400]">\r\n    {body}\r\n  </node>\r\n</hierarchy>'
    )


def etree_baseline(xml: str) -> str:
    """The obvious implementation: build a tree, walk it, format the same fields."""
    lines = []
    for n, el in enumerate(ET.fromstring(xml.encode()).iter("node")):
        a = el.attrib
        if a.get("text") or a.get("content-desc") or a.get("clickable") == "true":
            short = a.get("class", "").rsplit(".", 1)[-1]
            lines.append(f'[{n}] {short} "{a.get("text", "")}" ({a.get("resource-id")})')
    return "\n".join(lines)


def median_ms(fn: object, arg: str, repeat: int) -> float:
    assert callable(fn)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(arg)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def bench_conversion() -> None:
    xml = synthetic_dump(1000)
    for _ in range(20):
        observe_xml(xml)
    ours = median_ms(observe_xml, xml, 300)
    base = median_ms(etree_baseline, xml, 300)
    lines = observe_xml(xml).text.count("\n")
    print(f"P7 hierarchy → text, 1000 nodes ({len(xml) // 1024} KiB, {lines} lines out)")
    print(f"  host_agent.observation (expat): median {ours:.2f} ms   goal ≤ {GOAL_MS} ms   "
          f"{'OK' if ours <= GOAL_MS else 'MISSED'}")
    print(f"  ElementTree walk (baseline):    median {base:.2f} ms   ratio ours/baseline {ours / base:.2f}")


def bench_virtual_phone(steps: int = 30) -> None:
    try:
        from host_agent.phone_io import bench_step_overhead
    except ImportError as exc:
        print(f"per-step overhead on the virtual phone: not measured ({exc})")
        return
    result = bench_step_overhead(steps)
    print(f"per-step harness overhead on the virtual phone ({steps} steps, observation + tap, no model):")
    for key, value in result.items():
        print(f"  {key}: median {value:.1f} ms")


if __name__ == "__main__":
    bench_conversion()
    bench_virtual_phone()
