"""Writing `<id>/run/`: steps.jsonl as the attempt goes, screenshots, final.json at the end.

Screenshots are named by their content (`shot-<sha256 prefix>.jpg`), so a screen seen on many steps is
stored once, and an attempt stores at most `SCREENSHOT_CAP_BYTES` of them: a long attempt on a big screen
cannot fill the disk of a farm host.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import IO

from farm.fsutil import atomic_write_text
from farm.scoring.transcript import FinalFile, StepLine

SCREENSHOT_CAP_BYTES = 16 * 1024 * 1024
"""Screenshot bytes one attempt may store; the steps after the cap is reached record `CAP_NOTE` instead."""
CAP_NOTE = "screenshot omitted: cap"
"""What a step's `screenshot` says when the attempt's screenshot budget was spent."""
HASH_CHARS = 16
"""Hex characters of the SHA-256 kept in a screenshot's file name (64 bits: no two screens of an attempt meet)."""


def screenshot_name(jpeg: bytes) -> str:
    """The file name a screenshot is stored under: `shot-<first HASH_CHARS hex of its SHA-256>.jpg`."""
    return f"shot-{hashlib.sha256(jpeg).hexdigest()[:HASH_CHARS]}.jpg"


class TranscriptWriter:
    """Appends one line per step (flushed, so a crash keeps what happened) and the final file."""

    def __init__(self, run_dir: Path, *, screenshot_cap: int = SCREENSHOT_CAP_BYTES) -> None:
        self.dir = run_dir
        self.screenshot_cap = screenshot_cap
        self.screenshot_bytes = 0
        """Bytes of the screenshots this writer stored."""
        self._stored: set[str] = set()
        self._capped = False
        run_dir.mkdir(parents=True, exist_ok=True)
        self._steps: IO[str] = (run_dir / "steps.jsonl").open("a", encoding="utf-8")

    def wants_screenshot(self) -> bool:
        """Whether a new screenshot could still be stored (False once the cap was reached)."""
        return not self._capped

    def screenshot(self, jpeg: bytes | None) -> str | None:
        """Store a step's screen next to steps.jsonl and return what the step records: the file name, `CAP_NOTE`
        when the attempt's budget is spent, or None without a screenshot.

        A screen already stored is named again without costing anything, even over the cap. Over the cap no
        screenshot is taken for the transcript (`wants_screenshot`), so a step without one still says why.
        """
        if not jpeg:
            return CAP_NOTE if self._capped else None
        name = screenshot_name(jpeg)
        if name in self._stored:
            return name
        if self._capped or self.screenshot_bytes + len(jpeg) > self.screenshot_cap:
            # Once over, always over: a later small screen does not make the transcript look complete.
            self._capped = True
            return CAP_NOTE
        try:
            # "x": never replaces a file; the mode follows the umask like every other output.
            with (self.dir / name).open("xb") as handle:
                handle.write(jpeg)
        except FileExistsError:
            pass  # the same name is the same content: this directory holds that screen already
        self._stored.add(name)
        self.screenshot_bytes += len(jpeg)
        return name

    def step(self, line: StepLine) -> None:
        """Append one step."""
        self._steps.write(line.model_dump_json(by_alias=True) + "\n")
        self._steps.flush()

    def final(self, final: FinalFile) -> None:
        """Write final.json (atomically) and close the steps file."""
        self.close()
        atomic_write_text(self.dir / "final.json", final.model_dump_json(by_alias=True, indent=2) + "\n")

    def close(self) -> None:
        """Close the steps file (idempotent)."""
        if not self._steps.closed:
            self._steps.close()
