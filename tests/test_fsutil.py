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
