"""Where the Notes app keeps its notes: one text file per note in shared storage, as file-based notes apps do.

`/sdcard/Documents/Notes/<title>.txt` holds a note's body; the file name is its title, the file's mtime when it was
last saved (the list shows the newest first). Deleting moves the file to `Documents/Notes/.trash/` (最近删除), so
what a person did in the app — a note written, renamed, deleted — is what `ls`/`stat`/`head` read from the shell,
and a note created and then deleted leaves its trace where a real "recently deleted" folder would.

A fresh virtual phone has the folder with the two sample notes the app shows and an empty `.trash/`, so the shell
reads a note's folder before and after any attempt. Everything read back is bounded: at most `MAX_NOTES` notes,
`MAX_BODY` bytes each.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from farm.sim.phone import PhoneState

PACKAGE = "dev.agentfarm.notes"
NOTES_DIR = "/sdcard/Documents/Notes"
TRASH_DIR = f"{NOTES_DIR}/.trash"
MAX_NOTES = 500
"""Most notes the list reads (newest first)."""
MAX_BODY = 65_536
"""Most bytes of a note's body read back."""
SAMPLES = (("读书清单", "《百年孤独》《活着》《三体》"), ("会议纪要", "周三讨论季度预算,下周一前提交方案"))
"""The sample notes of a fresh app, oldest first."""
_UNSAFE = re.compile(r"[/\\\x00-\x1f]")
_MAX_NAME = 120


def seed_samples(phone: PhoneState) -> None:
    """A fresh phone's Notes folder: the sample notes (older first in time, so the list shows them in order) and
    an empty 最近删除. A phone whose folder exists already (restarted on its old files) is left as it is."""
    try:
        if phone.host_path(NOTES_DIR).exists():
            return
    except (OSError, ValueError):
        return
    phone.makedirs(TRASH_DIR)
    for age, (title, body) in enumerate(reversed(SAMPLES)):
        phone.write_atomic(f"{NOTES_DIR}/{title}.txt", body)
        host = phone.host_path(f"{NOTES_DIR}/{title}.txt")
        os.utime(host, (host.stat().st_mtime - 60 * (age + 1),) * 2)


def _entries(phone: PhoneState, folder: str) -> list[tuple[float, str]]:
    """(mtime, name) of each regular `.txt` file directly in `folder`, newest first (links and others skipped)."""
    try:
        host = phone.host_path(folder)
        names = os.listdir(host)
    except (OSError, ValueError):
        return []
    out = []
    for name in names:
        if not name.endswith(".txt") or name.startswith("."):
            continue
        try:
            st = os.lstat(host / name)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            out.append((st.st_mtime, name))
    return sorted(out, key=lambda e: (-e[0], e[1]))[:MAX_NOTES]


def saved_notes(phone: PhoneState) -> list[dict[str, Any]]:
    """The notes, newest first: `{"id": file name, "title", "text"}`."""
    notes = []
    for _mtime, name in _entries(phone, NOTES_DIR):
        try:
            body = phone.read_bytes(f"{NOTES_DIR}/{name}", MAX_BODY).decode("utf-8", errors="replace")
        except (OSError, ValueError):
            continue
        notes.append({"id": name, "title": name.removesuffix(".txt"), "text": body})
    return notes


def deleted_notes(phone: PhoneState) -> list[str]:
    """Titles of the notes in 最近删除, newest first."""
    return [name.removesuffix(".txt") for _m, name in _entries(phone, TRASH_DIR)]


def _free_name(phone: PhoneState, folder: str, base: str, keep: str | None = None) -> str:
    taken = {name for _m, name in _entries(phone, folder)} - ({keep} if keep else set())
    name, n = f"{base}.txt", 2
    while name in taken:
        name, n = f"{base} ({n}).txt", n + 1
    return name


def file_title(title: str, text: str) -> str:
    """The file name (without `.txt`) a note is saved under: its title, else its first line, made safe."""
    first = title.strip() or (text.strip().splitlines() or [""])[0]
    safe = _UNSAFE.sub("_", first).strip().lstrip(".")[:_MAX_NAME].strip()
    return safe or "无标题笔记"


def store_note(phone: PhoneState, note_id: str | None, title: str, text: str) -> str:
    """Save a note (a new one when `note_id` is None, else the one with that id, renamed if its title changed);
    its new id."""
    phone.makedirs(NOTES_DIR)  # a folder removed from the shell is made again, as the app does on save
    name = _free_name(phone, NOTES_DIR, file_title(title, text), keep=note_id)
    phone.write_atomic(f"{NOTES_DIR}/{name}", text)
    if note_id is not None and note_id != name:
        _remove(phone, f"{NOTES_DIR}/{note_id}")
    return name


def trash_note(phone: PhoneState, note_id: str) -> None:
    """Move a note to 最近删除 (`.trash/`), under a free name there."""
    if posixpath.basename(note_id) != note_id:
        return
    try:
        body = phone.read_bytes(f"{NOTES_DIR}/{note_id}", MAX_BODY)
    except (OSError, ValueError):
        return
    phone.makedirs(TRASH_DIR)
    phone.write_atomic(f"{TRASH_DIR}/{_free_name(phone, TRASH_DIR, note_id.removesuffix('.txt'))}", body)
    _remove(phone, f"{NOTES_DIR}/{note_id}")


def _remove(phone: PhoneState, device_path: str) -> None:
    try:
        phone.host_path(device_path, follow=False).unlink()
    except (OSError, ValueError):
        pass
