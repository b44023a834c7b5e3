"""Atomic writes and refusal to overwrite."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.errors import FarmError
from farm.fsutil import atomic_write_text, create_new_text


def test_create_new_text_refuses_existing_file_and_keeps_it(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("old")
    with pytest.raises(FarmError, match="already exists"):
        create_new_text(target, "new")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_create_new_text_writes_whole_file(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "out.json"
    create_new_text(target, "中文\\n")
    assert target.read_text(encoding="utf-8") == "中文\\n"


def test_atomic_write_text_replaces_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "m.json"
    atomic_write_text(target, "a")
    atomic_write_text(target, "b")
    assert target.read_text() == "b"
    assert [p.name for p in tmp_path.iterdir()] == ["m.json"]


def test_written_files_take_the_mode_the_umask_gives_not_0600(tmp_path: Path) -> None:
    import os
    import stat

    from farm.fsutil import atomic_write_text, create_new_text

    old = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "a.md", "a")
        create_new_text(tmp_path / "b.md", "b")
        os.umask(0o077)
        atomic_write_text(tmp_path / "c.md", "c")
    finally:
        os.umask(old)
    modes = [stat.S_IMODE((tmp_path / n).stat().st_mode) for n in ("a.md", "b.md", "c.md")]
    assert modes == [0o644, 0o644, 0o600]
