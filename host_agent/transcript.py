"""Writing `<id>/run/`: steps.jsonl as the attempt goes, screenshots, final.json at the end."""

from __future__ import annotations

from pathlib import Path
from typing import IO

from farm.fsutil import atomic_write_text
from farm.scoring.transcript import FinalFile, StepLine


class TranscriptWriter:
    """Appends one line per step (flushed, so a crash keeps what happened) and the final file."""

    def __init__(self, run_dir: Path) -> None:
        self.dir = run_dir
        run_dir.mkdir(parents=True, exist_ok=True)
        self._steps: IO[str] = (run_dir / "steps.jsonl").open("a", encoding="utf-8")

    def screenshot(self, step: int, jpeg: bytes) -> str:
        """Save a JPEG next to steps.jsonl and return its file name."""
        name = f"step-{step:03d}.jpg"
        (self.dir / name).write_bytes(jpeg)
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
