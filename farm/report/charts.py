"""Offline charts: inline SVG drawn from numbers, no scripts, no network."""

from __future__ import annotations

from xml.sax.saxutils import escape

from farm.report.model import RateRow


def rate_chart(rows: list[RateRow], *, width: int = 640, bar_height: int = 18) -> str:
    """Horizontal bars of pass rates with Wilson 95 % whiskers; an empty string when there are no rows."""
    if not rows:
        return ""
    label_w, pad, right = 200, 6, 70
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
        label = escape(row.key if len(row.key) <= 28 else row.key[:27] + "…")
        parts.append(f'<text x="{label_w - 6}" y="{mid + 4:.1f}" text-anchor="end">{label}</text>')
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
