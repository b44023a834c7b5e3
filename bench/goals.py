"""One line per issue goal, in one format, so `make bench` can print every goal side by side at the end.

A bench script measures, prints its own detail, then calls `goal(...)` once per target it checks. The
Makefile collects the `GOAL |` lines of every script into one table after the run.
"""

from __future__ import annotations

PREFIX = "GOAL |"


def goal(measure: str, figure: str, target: str, met: bool, gap: str = "") -> str:
    """Print (and return) the goal line: what was measured, the figure, the target, and OK or the gap.

    `gap` says how far from the target a missed goal is (e.g. "1.8× > 1.5×"); it is required when
    `met` is false so the summary never says only "missed".
    """
    if not met and not gap:
        raise ValueError(f"goal {measure!r} missed without saying the gap")
    verdict = "OK" if met else f"GAP {gap}"
    line = f"{PREFIX} {measure} | {figure} | goal {target} | {verdict}"
    print(line, flush=True)
    return line


def table(lines: list[str]) -> str:
    """The `GOAL |` lines of a whole bench run as one aligned table."""
    rows = [[cell.strip() for cell in line[len(PREFIX):].split(" | ")] for line in lines if line.startswith(PREFIX)]
    if not rows:
        return "no goal lines"
    widths = [max(len(row[i]) if i < len(row) else 0 for row in rows) for i in range(max(map(len, rows)))]
    return "\n".join("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows)


if __name__ == "__main__":
    import sys

    with open(sys.argv[1], encoding="utf-8", errors="replace") as fh:
        print(table(fh.read().splitlines()))
