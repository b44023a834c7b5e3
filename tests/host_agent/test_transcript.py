"""The transcript writer's screenshots: content-hash names, stored once, capped per attempt, never overwritten."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from host_agent.transcript import CAP_NOTE, TranscriptWriter, screenshot_name

SHOT_A = b"\xff\xd8" + b"a" * 100
SHOT_B = b"\xff\xd8" + b"b" * 100
SHOT_C = b"\xff\xd8" + b"c" * 10


def test_a_screenshot_is_named_by_its_content_and_an_identical_screen_is_stored_once(tmp_path: Path) -> None:
    writer = TranscriptWriter(tmp_path)
    names = [writer.screenshot(s) for s in (SHOT_A, SHOT_B, SHOT_A)]
    writer.close()
    assert names[0] == f"shot-{hashlib.sha256(SHOT_A).hexdigest()[:16]}.jpg" == names[2] != names[1]
    assert sorted(p.name for p in tmp_path.glob("*.jpg")) == sorted({n for n in names if n})
    assert (tmp_path / str(names[0])).read_bytes() == SHOT_A and writer.screenshot_bytes == len(SHOT_A) + len(SHOT_B)


def test_over_the_cap_later_steps_record_the_note_instead_of_a_file(tmp_path: Path) -> None:
    writer = TranscriptWriter(tmp_path, screenshot_cap=len(SHOT_A) + len(SHOT_C))
    first = writer.screenshot(SHOT_A)
    assert writer.wants_screenshot()
    assert writer.screenshot(SHOT_B) == CAP_NOTE
    # Once over, always over, even for a screen that would still fit; a screen already stored is named again.
    assert writer.screenshot(SHOT_C) == CAP_NOTE and not writer.wants_screenshot()
    assert writer.screenshot(SHOT_A) == first
    assert writer.screenshot(None) == CAP_NOTE  # the loop takes no screenshot for the transcript over the cap
    writer.close()
    assert [p.name for p in tmp_path.glob("*.jpg")] == [first]


def test_no_screenshot_records_nothing(tmp_path: Path) -> None:
    writer = TranscriptWriter(tmp_path)
    assert (writer.screenshot(None), writer.screenshot(b"")) == (None, None)
    writer.close()
    assert list(tmp_path.glob("*.jpg")) == []


def test_an_existing_file_is_never_overwritten(tmp_path: Path) -> None:
    name = screenshot_name(SHOT_A)
    (tmp_path / name).write_bytes(b"kept")
    writer = TranscriptWriter(tmp_path)
    assert writer.screenshot(SHOT_A) == name
    writer.close()
    assert (tmp_path / name).read_bytes() == b"kept"


def test_screenshots_get_the_mode_the_umask_gives(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        writer = TranscriptWriter(tmp_path)
        name = writer.screenshot(SHOT_A)
        writer.close()
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / str(name)).stat().st_mode) == 0o640
