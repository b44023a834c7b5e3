"""Progress bars draw on stderr at a terminal and are not drawn at all elsewhere (stdout carries the results)."""

from __future__ import annotations

import io
import os
import pty
import select
import sys

import pytest

from farm.android.progress import PhoneProgress, make_progress
from tests.helpers.records import record


def test_no_bars_when_stderr_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert make_progress(True) is None
    assert make_progress(False) is None


def test_bars_draw_on_stderr_at_a_terminal_and_never_on_stdout(monkeypatch: pytest.MonkeyPatch) -> None:
    master, slave = pty.openpty()
    terminal = os.fdopen(slave, "w", encoding="utf-8", closefd=True)
    stdout = io.StringIO()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setattr(sys, "stdout", stdout)
    try:
        bars = make_progress(True)
        assert bars is not None and bars.console.stderr and bars.console.is_terminal
        phone = PhoneProgress(bars, "Pixel 7 #1", 2)
        bars.start()
        phone.task_started("calc-add")
        phone.task_finished("calc-add", "passed")
        phone.recorded(record("calc-add"))
        bars.stop()
        terminal.flush()
        # A pty hands over what was written in pieces: read until it has been quiet for a moment.
        chunks = []
        while select.select([master], [], [], 0.5)[0]:
            chunks.append(os.read(master, 65536))
        drawn = b"".join(chunks).decode("utf-8", "replace")
    finally:
        terminal.close()
        os.close(master)
    assert "Pixel 7 #1" in drawn and "passed 1" in drawn
    assert stdout.getvalue() == ""
