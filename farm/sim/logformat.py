"""How logcat filters and prints an entry: filter specs (`TAG:P`, `*:S`) and the `-v` formats, as liblog's logprint.

Lines are byte-for-byte logprint's: `threadtime` is `MM-DD HH:MM:SS.mmm  PID  TID P TAG     : message`, a message of
several lines prints each line with the same prefix, `long` prints a header, the whole message and a blank line.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo

from farm.sim.logbuf import DEBUG, ERROR, FATAL, INFO, PRIORITIES, SILENT, VERBOSE, WARN, LogEntry

VERBS = ("brief", "long", "process", "raw", "tag", "thread", "threadtime", "time")
ADVERBS = ("color", "descriptive", "epoch", "monotonic", "printable", "uid", "usec", "UTC", "year", "zone")
_FILTER_PRI = {"v": VERBOSE, "d": DEBUG, "i": INFO, "w": WARN, "e": ERROR, "f": FATAL, "s": SILENT}
_COLORS = {DEBUG: 75, INFO: 40, WARN: 166, ERROR: 196, FATAL: 196}
"""logprint's 256-colour codes by priority (`-v color`); anything else is 231."""
_SPLIT = re.compile(r"[ \t,]+")


@dataclass
class LogFilter:
    """android_log_addFilterRule / shouldPrintLine: a priority per tag, and one for every other tag."""

    default: int = VERBOSE
    rules: dict[str, int] = field(default_factory=dict)

    def add_rule(self, expression: str) -> bool:
        """One `TAG[:P]` (or `*[:P]`); False for an expression logcat refuses."""
        tag, colon, rest = expression.partition(":")
        if not tag:
            return False
        priority: int | None = None
        if colon:
            letter = rest[:1].lower()
            if letter == "*":
                priority = None  # ANDROID_LOG_DEFAULT, as a bare tag
            elif letter in _FILTER_PRI:
                priority = _FILTER_PRI[letter]
            else:
                return False
        if tag == "*":
            self.default = DEBUG if priority is None else priority
        else:
            self.rules[tag] = VERBOSE if priority is None else priority
        return True

    def add_string(self, text: str) -> bool:
        """A whitespace- or comma-separated list of rules (one argument of logcat, or $ANDROID_LOG_TAGS)."""
        return all(self.add_rule(expr) for expr in _SPLIT.split(text) if expr)

    def allows(self, tag: str, priority: int) -> bool:
        return priority >= self.rules.get(tag, self.default)


@dataclass
class LogFormat:
    """The `-v` verb and adverbs in force."""

    verb: str = "threadtime"
    adverbs: set[str] = field(default_factory=set)

    def set(self, word: str) -> int:
        """android_log_setPrintFormat: 1 for a verb, 0 for an adverb, -1 for anything else."""
        if word in VERBS:
            self.verb = word
            return 1
        if word in ADVERBS:
            self.adverbs.add(word)
            return 0
        return -1

    def stamp(self, entry: LogEntry, zone: ZoneInfo, booted_at: float) -> str:
        """The time column: local (or UTC) date and time, or seconds since the epoch or since boot."""
        seconds = entry.wall - booted_at if "monotonic" in self.adverbs else entry.wall
        whole = int(seconds)
        fraction = f".{int((seconds - whole) * 1e6):06d}" if "usec" in self.adverbs else \
            f".{int((seconds - whole) * 1e3):03d}"
        if "epoch" in self.adverbs or "monotonic" in self.adverbs:
            return f"{whole:{6 if 'monotonic' in self.adverbs else 19}d}{fraction}"
        when = dt.datetime.fromtimestamp(entry.wall, dt.UTC if "UTC" in self.adverbs else zone)
        text = when.strftime("%Y-%m-%d %H:%M:%S" if "year" in self.adverbs else "%m-%d %H:%M:%S") + fraction
        return text + when.strftime(" %z") if "zone" in self.adverbs else text

    def render(self, entry: LogEntry, zone: ZoneInfo, booted_at: float) -> str:
        """The entry as logcat prints it, newline-terminated."""
        p = PRIORITIES[entry.priority] if 0 <= entry.priority < len(PRIORITIES) else "?"
        tag, pid, tid = entry.tag, entry.pid, entry.tid
        verb = self.verb
        stamp = self.stamp(entry, zone, booted_at) if verb in ("time", "threadtime", "long") else ""
        if verb == "long":
            text = f"[ {stamp} {pid:5d}:{tid:5d} {p}/{tag:<8} ]\n{entry.message}\n\n"
            return self._colour(entry, text)
        if verb == "tag":
            prefix, suffix = f"{p}/{tag:<8}: ", ""
        elif verb == "process":
            prefix, suffix = f"{p}({pid:5d}) ", f"  ({tag})"
        elif verb == "thread":
            prefix, suffix = f"{p}({pid:5d}:{tid:5d}) ", ""
        elif verb == "raw":
            prefix, suffix = "", ""
        elif verb == "time":
            prefix, suffix = f"{stamp} {p}/{tag:<8}({pid:5d}): ", ""
        elif verb == "threadtime":
            prefix, suffix = f"{stamp} {pid:5d} {tid:5d} {p} {tag:<8}: ", ""
        else:
            prefix, suffix = f"{p}/{tag:<8}({pid:5d}): ", ""
        lines = entry.message.split("\n")
        if len(lines) > 1 and lines[-1] == "":
            lines.pop()  # a trailing newline ends the last line rather than starting an empty one
        return "".join(self._colour(entry, f"{prefix}{line}{suffix}\n") for line in lines)

    def _colour(self, entry: LogEntry, text: str) -> str:
        if "color" not in self.adverbs:
            return text
        body = text[:-1] if text.endswith("\n") else text
        return f"\x1b[38;5;{_COLORS.get(entry.priority, 231)}m{body}\x1b[0m" + text[len(body):]


def parse_time(text: str, zone: ZoneInfo, now: dt.datetime) -> float | None:
    """`-t`/`-T TIME`: 'MM-DD hh:mm:ss.mmm', 'YYYY-MM-DD hh:mm:ss.mmm' or 'sssss.mmm'; None when it is neither."""
    match = re.fullmatch(r"(?:(\d{4})-)?(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d+))?", text)
    if match:
        year, month, day, hour, minute, sec, frac = match.groups()
        try:
            when = dt.datetime(int(year) if year else now.year, int(month), int(day), int(hour), int(minute),
                               int(sec), tzinfo=zone)
        except ValueError:
            return None
        return when.timestamp() + (float("0." + frac) if frac else 0.0)
    match = re.fullmatch(r"(\d+)(?:\.(\d+))?", text)
    if match:
        return float(match.group(1)) + (float("0." + match.group(2)) if match.group(2) else 0.0)
    return None
