"""The Notes app's files: a note is a text file named by its title in shared storage, deleted notes go to
`.trash/`; names from a user's title stay inside the folder, and what the app reads back is bounded and never
leaves the phone."""

from __future__ import annotations

import os
from pathlib import Path

from farm.sim.apps.notes_store import (
    MAX_BODY,
    NOTES_DIR,
    TRASH_DIR,
    deleted_notes,
    saved_notes,
    store_note,
    trash_note,
)
from farm.sim.phone import PhoneState


def _phone() -> PhoneState:
    return PhoneState()


def test_a_fresh_phone_has_the_sample_notes_as_files_newest_first() -> None:
    phone = _phone()
    try:
        assert [n["title"] for n in saved_notes(phone)] == ["会议纪要", "读书清单"]
        assert phone.read_text(f"{NOTES_DIR}/会议纪要.txt") == "周三讨论季度预算,下周一前提交方案"
        assert deleted_notes(phone) == []
    finally:
        phone.close()


def test_saving_renaming_and_deleting_move_the_files() -> None:
    phone = _phone()
    try:
        first = store_note(phone, None, "AF-r1-a", "买牛奶")
        assert first == "AF-r1-a.txt" and saved_notes(phone)[0] == {"id": first, "title": "AF-r1-a", "text": "买牛奶"}
        # The same title again is a second note, not an overwrite.
        assert store_note(phone, None, "AF-r1-a", "买鸡蛋") == "AF-r1-a (2).txt"
        renamed = store_note(phone, first, "AF-r1-b", "买牛奶和面包")
        names = sorted(os.listdir(phone.host_path(NOTES_DIR)))
        assert renamed == "AF-r1-b.txt" and "AF-r1-a.txt" not in names and "AF-r1-b.txt" in names
        trash_note(phone, renamed)
        assert deleted_notes(phone) == ["AF-r1-b"]
        assert phone.read_text(f"{TRASH_DIR}/AF-r1-b.txt") == "买牛奶和面包"
        assert "AF-r1-b" not in [n["title"] for n in saved_notes(phone)]
    finally:
        phone.close()


def test_a_title_that_looks_like_a_path_stays_a_name_in_the_folder() -> None:
    phone = _phone()
    try:
        for title in ("../../data/evil", "/sdcard/x", ".hidden", "a\x00b", "\n\n"):
            name = store_note(phone, None, title, "正文")
            assert "/" not in name and not name.startswith(".") and "\x00" not in name, title
            assert phone.host_path(f"{NOTES_DIR}/{name}").is_file(), title
        # No title and no text line: a default name, never an empty one.
        assert store_note(phone, None, "", "   ") == "无标题笔记.txt"
        # A note id from outside never moves a file from elsewhere.
        trash_note(phone, "../会议纪要.txt")
        assert deleted_notes(phone) == []
    finally:
        phone.close()


def test_a_link_or_a_huge_file_in_the_folder_is_not_read_past_the_bounds(tmp_path: Path) -> None:
    phone = _phone()
    try:
        secret = tmp_path / "secret.txt"
        secret.write_text("host secret", encoding="utf-8")
        folder = phone.host_path(NOTES_DIR)
        (folder / "link.txt").symlink_to(secret)
        (folder / "big.txt").write_bytes(b"x" * (MAX_BODY * 4))
        notes = {n["title"]: n["text"] for n in saved_notes(phone)}
        assert "link" not in notes  # a symlink is not a note
        assert len(notes["big"]) == MAX_BODY
        assert "host secret" not in "".join(notes.values())
    finally:
        phone.close()
