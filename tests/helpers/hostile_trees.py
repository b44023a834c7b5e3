"""Builders of the hostile eval trees a phone can hold: a directory nested deeper than any path the sync protocol
carries, a directory with too many entries, a scores.jsonl of a million tiny lines or one endless line.

They write straight into a virtual phone's root (`SimPhone.root` / `PhoneState.host_path`) or any directory; the
bench uses the same builders so that its figures and the tests describe the same trees.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

TINY_LINE = '{"id":"t%06d","outcome":"ok","passed":true}\n'
"""A short scores line (46 bytes up to a million lines), as in the issue: valid JSON for its own task; every one
becomes a record."""


def deep_dirs(top: Path, depth: int = 300, name_len: int = 20, leaf: str | None = "leaf.txt") -> str:
    """`depth` directories nested under `top`, each named with `name_len` characters, and a file at the bottom;
    returns the first level's name.

    300 levels of 20 characters make a 6 300-byte path: longer than the host's PATH_MAX (4 096), so each level
    is made relative to the one above it (dir_fd), never by its whole path.
    """
    name = "d" * name_len
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir(name, dir_fd=fd)
            below = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = below
        if leaf is not None:
            out = os.open(leaf, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=fd)
            os.write(out, b"at the bottom\n")
            os.close(out)
    finally:
        os.close(fd)
    return name


def wide_dir(path: Path, entries: int, prefix: str = "f") -> None:
    """A directory of `entries` empty files."""
    path.mkdir(parents=True, exist_ok=True)
    for n in range(entries):
        (path / f"{prefix}{n:06d}").touch()


def tiny_scores(path: Path, *, lines: int | None = None, size: int | None = None, same_id: str | None = None) -> int:
    """A scores.jsonl of tiny lines (`lines` of them, or as many whole lines as fit in `size` bytes), each for its
    own task (`t000000`, `t000001`, …) or all for `same_id`; returns the number of lines written."""
    most = lines if lines is not None else (size or 0)  # a line holds at least one byte
    room = size if size is not None else None
    written = 0
    block = 10_000  # written in blocks: a 64 MB file is never built whole in memory
    with path.open("w", encoding="utf-8") as out:
        while written < most:
            count = min(block, most - written)
            if same_id is None:
                chunk = [TINY_LINE % n for n in range(written, written + count)]
            else:
                chunk = [json.dumps({"id": same_id, "outcome": "ok", "passed": True}) + "\n"] * count
            if room is not None:
                fit = 0
                for line in chunk:
                    if len(line) > room:
                        break
                    room -= len(line)
                    fit += 1
                chunk = chunk[:fit]
            out.write("".join(chunk))
            written += len(chunk)
            if len(chunk) < count:
                break
    return written


def endless_line(size: int, task_id: str = "long") -> str:
    """One scores line of about `size` bytes (a huge answer), ending in a newline."""
    head = json.dumps({"id": task_id, "outcome": "succeeded", "passed": True, "answer": ""})[:-2]
    return head + "x" * max(0, size - len(head) - 3) + '"}\n'
