"""Offline charts: inline SVG drawn from numbers, no scripts, no network."""

from __future__ import annotations

import unicodedata
from xml.sax.saxutils import escape

from farm.report.glance import Timeline, Verdict
from farm.report.model import RateRow, SumRow


def rate_chart(rows: list[RateRow], *, width: int = 640, bar_height: int = 18) -> str:
    """Horizontal bars of pass rates with Wilson 95 % whiskers; an empty string when there are no rows."""
    if not rows:
        return ""
    label_w, pad, right = 200, 6, 100
    plot_w = width - label_w - right
    height = pad + len(rows) * (bar_height + pad) + 20
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img"'
        f' viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">'
    ]
    for tick in (0, 25, 50, 75, 100):
        x = label_w + plot_w * tick / 100
        parts.append(f'<line x1="{x:.1f}" y1="0" x2="{x:.1f}" y2="{height - 18}" stroke="#ddd"/>')
        parts.append(f'<text x="{x:.1f}" y="{height - 4}" text-anchor="middle" fill="#666">{tick}%</text>')
    for i, row in enumerate(rows):
        y = pad + i * (bar_height + pad)
        mid = y + bar_height / 2
        label = escape(fit(row.key, 27))
        parts.append(f'<text x="{label_w - 6}" y="{mid + 4:.1f}" text-anchor="end">'
                     f"<title>{escape(row.key)}</title>{label}</text>")
        if row.rate is None:
            parts.append(f'<text x="{label_w + 4}" y="{mid + 4:.1f}" fill="#999">not attempted</text>')
            continue
        w = plot_w * row.rate
        parts.append(
            f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_height}" fill="#4c78a8">'
            f"<title>{label}: {row.passed}/{row.attempted}</title></rect>"
        )
        if row.low is not None and row.high is not None:
            x1, x2 = label_w + plot_w * row.low, label_w + plot_w * row.high
            parts.append(f'<line x1="{x1:.1f}" y1="{mid:.1f}" x2="{x2:.1f}" y2="{mid:.1f}" stroke="#222"/>')
            for x in (x1, x2):
                parts.append(f'<line x1="{x:.1f}" y1="{mid - 5:.1f}" x2="{x:.1f}" y2="{mid + 5:.1f}" stroke="#222"/>')
        text = f"{row.rate * 100:.0f}% ({row.passed}/{row.attempted})"
        parts.append(f'<text x="{label_w + plot_w + 4}" y="{mid + 4:.1f}">{escape(text)}</text>')
    parts.append("</svg>")
    return "".join(parts)


VERDICT_COLOURS: dict[Verdict, str] = {"pass": "#009e73", "fail": "#d55e00", "skip": "#bbbbbb", "error": "#0072b2"}
"""Okabe–Ito colours, told apart with the common colour-vision deficiencies; the grid adds a symbol too."""
VERDICT_SYMBOLS: dict[Verdict, str] = {"pass": "✓", "fail": "✗", "skip": "⊘", "error": "!"}
"""What a grid cell shows besides its colour (readable in print and without colour)."""
VERDICT_WORDS: dict[Verdict, str] = {"pass": "pass", "fail": "fail", "skip": "skipped",
                                     "error": "infrastructure error"}
PART_COLOURS: dict[str, str] = {"model_ms": "#0072b2", "screen_read_ms": "#e69f00", "action_ms": "#56b4e9",
                                "other_ms": "#999999"}
"""Time split parts, in the order they are stacked."""


def _cells(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def fit(text: str, cells: int) -> str:
    """`text` cut in the middle to about `cells` half-width cells (a CJK character takes two), keeping its end:
    labels such as `Xiaomi … 5G #3` differ only there."""
    if _cells(text) <= cells:
        return text
    tail = text[-max(4, cells // 3):]
    head = ""
    for c in text:
        if _cells(head + c) + _cells(tail) + 1 > cells:
            break
        head += c
    return f"{head.rstrip()}…{tail}"


def duration(seconds: float) -> str:
    """`45 s`, `12.5 min`, `3.2 h`."""
    if seconds < 60:
        return f"{seconds:.3g} s"
    if seconds < 3600:
        return f"{seconds / 60:.3g} min"
    return f"{seconds / 3600:.3g} h"


_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)


def _tick_step(span: float, most: int = 8) -> float:
    for step in _STEPS:
        if span / step <= most:
            return float(step)
    return span / most


def timeline_chart(timeline: Timeline | None, *, width: int = 720, lane_height: int = 18) -> str:
    """One lane per phone with its units as bars on the run's time axis (verdict colours; each bar's title
    names the unit); an empty string without a timeline."""
    if timeline is None or not timeline.lanes:
        return ""
    label_w, pad, right, axis = 160, 5, 14, 22
    plot_w = width - label_w - right
    height = pad + len(timeline.lanes) * (lane_height + pad) + axis
    span = max(timeline.span_s, 1e-9)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="wide" width="{width}" height="{height}" role="img"'
        f' viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="13">'
        f"<title>Units per phone over time, from {escape(timeline.start)}</title>"
    ]
    step = _tick_step(span)
    ticks = [step * i for i in range(int(span // step) + 1)]
    for tick in ticks:
        x = label_w + plot_w * tick / span
        parts.append(f'<line x1="{x:.1f}" y1="0" x2="{x:.1f}" y2="{height - axis + 4}" stroke="#ddd"/>')
        anchor = "start" if tick == 0 else "middle"
        parts.append(f'<text x="{x:.1f}" y="{height - 6}" text-anchor="{anchor}" fill="#555">'
                     f"{escape('0' if tick == 0 else '+' + duration(tick))}</text>")
    for i, lane in enumerate(timeline.lanes):
        y = pad + i * (lane_height + pad)
        parts.append(f'<text x="{label_w - 6}" y="{y + lane_height - 4}" text-anchor="end">'
                     f"<title>{escape(lane.phone)}</title>{escape(fit(lane.phone, 19))}</text>")
        parts.append(f'<rect x="{label_w}" y="{y}" width="{plot_w}" height="{lane_height}" fill="#f4f4f4"/>')
        for bar in lane.bars:
            x1 = label_w + plot_w * bar.start / span
            w = max(plot_w * (bar.end - bar.start) / span, 1.5)
            x1 = min(x1, label_w + plot_w - w)
            what = (f"{bar.label}: {VERDICT_WORDS[bar.verdict]}" if bar.units == 1
                    else f"{bar.units} units, {bar.not_passed} not passed")
            title = f"{what}, +{duration(bar.start)} – +{duration(bar.end)}"
            parts.append(f'<rect x="{x1:.1f}" y="{y}" width="{w:.1f}" height="{lane_height}"'
                         f' fill="{VERDICT_COLOURS[bar.verdict]}"><title>{escape(title)}</title></rect>')
    parts.append("</svg>")
    return "".join(parts)


_DARK = {"#0072b2"}
"""Part colours that take white text."""


def time_split_chart(rows: list[SumRow], *, width: int = 480, height: int = 30) -> str:
    """Model / screen read / action / other as one stacked bar of their known totals (share written in each
    part wide enough to hold it); an empty string when no time is known."""
    known = [(r, r.total) for r in rows if r.total is not None and r.total > 0]
    total = sum(t for _, t in known)
    if not total:
        return ""
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img"'
        f' viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="14">'
        "<title>Where the time went</title>"
    ]
    x = 0.0
    for row, value in known:
        w = width * value / total
        colour = PART_COLOURS.get(row.name, "#777777")
        share = f"{value / total * 100:.0f}%"
        parts.append(f'<rect x="{x:.1f}" y="0" width="{w:.1f}" height="{height}" fill="{colour}">'
                     f"<title>{escape(row.name)}: {value:,.0f} ms ({share})</title></rect>")
        if w >= 44:
            ink = "#fff" if colour in _DARK else "#000"
            parts.append(f'<text x="{x + w / 2:.1f}" y="{height / 2 + 5:.1f}" text-anchor="middle" fill="{ink}">'
                         f"{share}</text>")
        x += w
    parts.append("</svg>")
    return "".join(parts)
