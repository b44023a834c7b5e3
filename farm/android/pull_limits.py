"""Hard limits on what a pull takes from a phone, and the bounded reader of the scores file it pulled.

Nothing a phone holds is ours: a tree can nest past any path the sync protocol carries or hold a million
entries, and a 46 MB scores.jsonl of a million tiny lines once cost the controller 10 GB (every line became a
record held in memory). Every cap below has a documented default; farm.yaml's `pull:` section sets each
(`farm.config.PullLimits`, read by `caps_of`). What a cap refuses is never silent: a pull lists
each refused entry, and `read_scores` returns one line per cap that refused lines, with the counts, for the run's
notes.

`read_scores` streams the file: one line at a time, each at most `max_line_bytes` long, and never more than
`max_records` records built, so the controller's memory stays flat whatever the file holds.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from pydantic_core import from_json

from farm.results.normalise import Context, Normalised, error_record, normalise_lines
from farm.results.record import Record

if TYPE_CHECKING:
    from farm.config import PullLimits

_MiB = 1024 * 1024

MAX_DEPTH = 24
"""Directory levels pulled below the tree's root; a directory deeper is refused unlisted (an eval tree is
`<task>/run/…`, a few levels)."""
MAX_DIR_ENTRIES = 10_000
"""Entries read from one directory listing (besides `.` and `..`); the rest of that listing is refused."""
MAX_TREE_ENTRIES = 100_000
"""Entries listed in the whole tree; directories not yet listed when it is reached are refused."""
MAX_LINES = 100_000
"""Lines read from one pulled line file (scores.jsonl), blank ones included; the rest are counted, not read."""
MAX_LINE_BYTES = 1 * _MiB
"""Longest line read; a longer one is skipped in bounded reads and kept as an error record naming it."""
MAX_RECORDS_PER_UNIT = 10
"""Lines taken for one unit (task) from one scores file: a phone writes one per task; past this, they are counted."""
MAX_RECORDS = 10_000
"""Records built from one pull's scores file (a task set is hundreds of tasks); past this, lines are counted."""
MAX_BUNDLE_BYTES = 8 * _MiB
"""Largest task bundle read back from the phone (`farm run` pushes a few hundred KB)."""


@dataclass(frozen=True)
class PullCaps:
    """The caps in force for one pull (defaults: the module constants above)."""

    max_depth: int = MAX_DEPTH
    max_dir_entries: int = MAX_DIR_ENTRIES
    max_tree_entries: int = MAX_TREE_ENTRIES
    max_lines: int = MAX_LINES
    max_line_bytes: int = MAX_LINE_BYTES
    max_records_per_unit: int = MAX_RECORDS_PER_UNIT
    max_records: int = MAX_RECORDS
    max_bundle_bytes: int = MAX_BUNDLE_BYTES


def caps_of(limits: PullLimits | None) -> PullCaps:
    """The caps for a pull under farm.yaml's `pull:` section (the defaults without one)."""
    if limits is None:
        return PullCaps()
    return PullCaps(
        max_depth=limits.max_depth, max_dir_entries=limits.max_dir_entries, max_tree_entries=limits.max_tree_entries,
        max_lines=limits.max_lines, max_line_bytes=limits.max_line_bytes,
        max_records_per_unit=limits.max_records_per_unit, max_records=limits.max_records,
        max_bundle_bytes=limits.max_bundle_bytes,
    )


# --- bounded line reading -----------------------------------------------------------------------------------

_HEAD_BYTES = 4096
"""Bytes of an over-long line kept to name its task."""
_SKIP = 64 * 1024
"""Read size while skipping the rest of an over-long line, or counting lines past a cap."""
# The task id of a line never parsed (as `farm.results.normalise` finds one in a corrupt line).
_ID_IN_TEXT = re.compile(rb'"id"\s*:\s*"([^"\\]{1,200})"')


@dataclass(frozen=True)
class TooLong:
    """A line longer than the cap: its first bytes (to name its task) and its length, never the line itself."""

    head: bytes
    size: int


def bounded_lines(handle: BinaryIO, max_bytes: int) -> Iterator[bytes | TooLong]:
    """Each line of `handle` (ending at b"\\n" only, as scores.jsonl lines do), without its newline; a line longer
    than `max_bytes` comes as `TooLong`, skipped in reads of at most 64 KiB. No read asks for more than
    `max_bytes + 1` bytes, so memory holds one line whatever the file holds."""
    while True:
        line = handle.readline(max_bytes + 1)
        if not line:
            return
        if line.endswith(b"\n"):
            yield line[:-1]
            continue
        if len(line) <= max_bytes:  # the last line, without a newline
            yield line
            return
        size = len(line)
        while True:
            more = handle.readline(_SKIP)
            size += len(more)
            if not more:
                break
            if more.endswith(b"\n"):
                size -= 1
                break
        yield TooLong(line[:_HEAD_BYTES], size)


def count_lines(handle: BinaryIO) -> int:
    """Lines left in `handle` (a last one without a newline counts), counted in 64 KiB reads."""
    count = 0
    last = b"\n"
    while chunk := handle.read(_SKIP):
        count += chunk.count(b"\n")
        last = chunk[-1:]
    return count + (last != b"\n")


@dataclass
class ScoreRefusals:
    """Lines of one scores file that a cap kept out, by cap."""

    past_lines: int = 0
    """Lines after the first `max_lines` (never read)."""
    too_long: int = 0
    """Lines over `max_line_bytes` (each kept as an error record naming it)."""
    past_unit: int = 0
    """Lines for a unit that already had `max_records_per_unit`."""
    past_records: int = 0
    """Lines after `max_records` records were built (never parsed)."""
    units_capped: int = 0
    """Units that hit `max_records_per_unit`."""

    def notes(self, source: str, caps: PullCaps, kept: int) -> list[str]:
        """One line per cap that refused lines, with the counts (the run's notes; `farm pull` prints them)."""
        out: list[str] = []
        if self.past_records:
            out.append(f"{source}: {self.past_records} lines past the cap of {caps.max_records} records per pull "
                       f"(max_records) not read; the first {kept} records kept")
        if self.past_lines:
            out.append(f"{source}: {self.past_lines} lines past the cap of {caps.max_lines} lines (max_lines) "
                       f"not read")
        if self.past_unit:
            out.append(f"{source}: {self.past_unit} lines for {self.units_capped} unit(s) past the cap of "
                       f"{caps.max_records_per_unit} lines per unit (max_records_per_unit) not taken")
        if self.too_long:
            out.append(f"{source}: {self.too_long} lines longer than {caps.max_line_bytes} bytes (max_line_bytes) "
                       f"not parsed (each kept as an error record)")
        return out


@dataclass
class BoundedScores:
    """What `read_scores` kept and what its caps refused."""

    normalised: Normalised
    refusals: ScoreRefusals
    notes: list[str]
    """`ScoreRefusals.notes`: empty when no cap was reached."""


def _unit_of(text: str) -> str | None:
    """The task a line is for, when it parses as an object with a string id (only to apply the per-unit cap before
    building its record; the line is parsed again, and judged, by `normalise_lines`)."""
    try:
        data = from_json(text)
    except ValueError:
        return None
    task_id = data.get("id") if isinstance(data, dict) else None
    return task_id if isinstance(task_id, str) else None


def read_scores(path: Path, ctx: Context, source: str, caps: PullCaps | None = None) -> BoundedScores:
    """Normalise a pulled scores.jsonl as `normalise_file` does, streaming and within `caps`: the first lines are
    kept up to each cap and the rest counted (see `ScoreRefusals`). A missing file gives no records."""
    caps = caps or PullCaps()
    refusals = ScoreRefusals()
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        return BoundedScores(Normalised([], []), refusals, [])
    taken: list[int] = []  # line numbers handed to normalise_lines, one record each, in order
    long_lines: list[tuple[int, Record, str]] = []
    per_unit: Counter[str] = Counter()

    def admit(unit: str | None) -> bool:
        """Whether one more line fits under the per-unit cap (counted when it does); `lines` stops at the records
        cap itself."""
        if unit is None:  # not an object with an id: it becomes one error record, under the records cap only
            return True
        if per_unit[unit] == caps.max_records_per_unit:
            refusals.units_capped += 1
        per_unit[unit] += 1
        if per_unit[unit] > caps.max_records_per_unit:
            refusals.past_unit += 1
            return False
        return True

    def lines() -> Iterator[str]:
        # Every line is yielded (refused ones as blank, which normalise_lines skips) so that its numbers are the
        # file's; after the records cap nothing more is yielded and the rest is only counted.
        for number, line in enumerate(bounded_lines(handle, caps.max_line_bytes), start=1):
            if number > caps.max_lines:
                refusals.past_lines += 1 + count_lines(handle)
                return
            if isinstance(line, TooLong):
                found = _ID_IN_TEXT.search(line.head)
                task_id = found.group(1).decode("utf-8", "replace") if found else None
                if admit(task_id):
                    refusals.too_long += 1
                    where = f"{source}:{number}"
                    what = f"longer than {caps.max_line_bytes} bytes ({line.size} bytes), not parsed"
                    reason = f"corrupt scores.jsonl line {number}: {what}"
                    long_lines.append((number, error_record(ctx, task_id or where, reason, source=where),
                                       f"{where}: {what}"))
                yield ""
            else:
                text = line.decode("utf-8", "replace")
                if text.strip() and admit(_unit_of(text)):
                    taken.append(number)
                    yield text
                else:
                    yield ""
            if len(taken) + len(long_lines) >= caps.max_records:
                refusals.past_records += count_lines(handle)
                return

    with handle:
        # normalise_lines iterates its argument once, in order: given this generator, it parses line by line and
        # never holds the file.
        parsed = normalise_lines(lines(), ctx, source)
    return BoundedScores(_merge(parsed, taken, long_lines, source), refusals,
                         refusals.notes(source, caps, len(taken) + len(long_lines)))


def _merge(parsed: Normalised, taken: list[int], long_lines: list[tuple[int, Record, str]], source: str) -> Normalised:
    """The parsed records and the over-long lines' error records, in the file's line order."""
    if not long_lines:
        return parsed
    records: list[Record] = []
    rest = iter(zip(taken, parsed.records, strict=True))
    pending = next(rest, None)
    for number, record, _problem in long_lines:
        while pending is not None and pending[0] < number:
            records.append(pending[1])
            pending = next(rest, None)
        records.append(record)
    while pending is not None:
        records.append(pending[1])
        pending = next(rest, None)
    # Each problem names its line (`source:N: what`): sorted by that number, they stay in the file's order.
    problems = [*parsed.problems, *(p for _n, _r, p in long_lines)]
    problems.sort(key=lambda p: int(p[len(source) + 1:].split(":", 1)[0]))
    return Normalised(records, problems)


# --- an attempt's transcript files (`<id>/run/`) ---------------------------------------------------------------
# They come from the phone as the scores file does, and are read when the host re-scores the attempt and when an
# override's evidence is looked for: never whole past these caps, and what a cap keeps out is said.

MAX_FINAL_JSON_BYTES = 8 * _MiB
"""Largest `final.json` read (the viewer's and `farm agent check`'s bound too): a larger one is not read, and its
attempt is scored as one whose final.json is unreadable, the reason saying so."""
MAX_HARNESS_LOOK_BYTES = 8 * _MiB
"""Largest `harness-look.json` read (the viewer's bound): farm writes it, but it sits in a tree the phone filled."""
MAX_STEP_LINES = 10_000
"""Lines read from one `steps.jsonl`, blank ones included (an attempt takes tens of steps; the viewer shows 2 000);
the rest are counted, not read. Each line is at most `MAX_LINE_BYTES`: a longer one is skipped and counted."""


def read_at_most(path: Path, max_bytes: int) -> bytes | None:
    """The bytes of `path`, or None when it holds more than `max_bytes`: its size is looked at first, and no read asks
    for more than `max_bytes + 1` bytes (a file growing meanwhile is refused too). OSError as `read_bytes`."""
    if path.stat().st_size > max_bytes:
        return None
    with path.open("rb") as handle:
        data = handle.read(max_bytes + 1)
    return data if len(data) <= max_bytes else None


def size_text(size: int) -> str:
    """A cap in bytes as people read it (`8 MiB`, `512 KiB`, `1000 bytes`)."""
    for unit, name in ((_MiB, "MiB"), (1024, "KiB")):
        if size >= unit and size % unit == 0:
            return f"{size // unit} {name}"
    return f"{size} bytes"
