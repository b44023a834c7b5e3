"""The web lane's latency chart: one backend's successful completion times as dots on a time axis, with its P50
and P90 marked. Inline SVG, no scripts; every piece of text in it is escaped (a backend name comes from a
results file, which is not trusted)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from xml.sax.saxutils import escape

_ROWS = (0, -7, 7, -14, 14)
"""Vertical offsets of consecutive dots (by rank), so equal times stay countable."""


def _text(value: str) -> str:
    return escape(value, {'"': "&quot;", "'": "&#x27;"})


def axis_step(span_ms: float, most: int = 6) -> float:
    """A 1-2-5 tick step (ms) giving at most `most` intervals over `span_ms`."""
    raw = max(span_ms, 1e-9) / most
    base = 10 ** math.floor(math.log10(raw))
    return next(m * base for m in (1, 2, 5, 10) if m * base >= raw)


def _time(ms: float, step: float) -> str:
    if step >= 1000:
        return f"{ms / 1000:,.{0 if step % 1000 == 0 else 1}f} s"
    return f"{ms:,.0f} ms"


def latency_chart(
    backend: str,
    completions_ms: Sequence[float],
    *,
    runs: int,
    p50_ms: float | None,
    p90_ms: float | None,
    axis_ms: float,
    p90_min_samples: int,
    width: int = 640,
) -> str:
    """The distribution of one backend's successful completion times on a 0…`axis_ms` axis (share it between
    backends so their charts compare); P90 is drawn only when the report has one (`p90_min_samples` successes)."""
    left, right, top, height = 14, 14, 30, 104
    plot_w = width - left - right
    axis_y = height - 26
    mid = (top + axis_y) / 2
    span = max(axis_ms, 1.0)

    def x(ms: float) -> float:
        return left + plot_w * min(ms, span) / span

    title = f"{backend}: completion times of {len(completions_ms)} successful of {runs} runs"
    name = backend if len(backend) <= 32 else backend[:31] + "…"
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}"'
        ' role="img" font-family="sans-serif" font-size="12">',
        f"<title>{_text(title)}</title>",
        f'<text x="{left}" y="16" font-weight="bold">{_text(name)}</text>',
    ]
    step = axis_step(span)
    for i in range(int(span // step) + 1):
        tick = i * step
        parts.append(f'<line x1="{x(tick):.1f}" y1="{top - 6}" x2="{x(tick):.1f}" y2="{axis_y}" stroke="#e3e3e3"/>')
        anchor = "start" if i == 0 else "end" if x(tick) > width - right - 30 else "middle"
        parts.append(f'<text x="{x(tick):.1f}" y="{height - 8}" text-anchor="{anchor}" fill="#555">'
                     f"{_text(_time(tick, step))}</text>")
    parts.append(f'<line x1="{left}" y1="{axis_y}" x2="{width - right}" y2="{axis_y}" stroke="#999"/>')
    if not completions_ms:
        parts.append(f'<text x="{width / 2:.1f}" y="{mid + 4:.1f}" text-anchor="middle" fill="#777">'
                     "no successful run: no latency</text></svg>")
        return "".join(parts)
    for rank, ms in enumerate(sorted(completions_ms)):
        parts.append(f'<circle cx="{x(ms):.1f}" cy="{mid + _ROWS[rank % len(_ROWS)]:.1f}" r="3.5" fill="#4c78a8"'
                     f' fill-opacity="0.75"><title>{_text(f"{ms:,.0f} ms")}</title></circle>')
    labels = []
    for mark, value, dash in (("P50", p50_ms, ""), ("P90", p90_ms, ' stroke-dasharray="4 3"')):
        if value is None:
            continue
        labels.append(f"{mark} {value:,.0f} ms")
        parts.append(f'<line x1="{x(value):.1f}" y1="{top - 4}" x2="{x(value):.1f}" y2="{axis_y}" stroke="#d55e00"'
                     f' stroke-width="2"{dash}/>')
    if p90_ms is None:
        labels.append(f"P90 — fewer than {p90_min_samples} successes")
    parts.append(f'<text x="{width - right}" y="16" text-anchor="end" fill="#d55e00">{_text("   ".join(labels))}'
                 "</text></svg>")
    return "".join(parts)
