"""A file's DATA payloads gathered into large writes (`SyncSession.reply(gather=True)`), written inline or by the
writer thread of big files, arrive byte for byte as the phone sent them, however the phone cut them, and the stream
stays in step after a refused or failed file.

The phone side is a socket pair written by a thread (a real socket: the pull reads it with its polls)."""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import farm.android.pull as pull
from farm.android.sync_stream import COALESCE, DATA_MAX, SyncFail, SyncSession
from tests.helpers.sync_conn import SyncConn

_HEAD = struct.Struct("<4sI")


class _Phone:
    """A device whose one sync stream answers with `answer`, written by a thread as the reader drains it."""

    def __init__(self, answer: bytes) -> None:
        self.answer = answer
        self.threads: list[threading.Thread] = []

    def open_transport(self, timeout: float | None = None) -> SyncConn:
        here, there = socket.socketpair()

        def write() -> None:
            try:
                there.sendall(self.answer)
                there.shutdown(socket.SHUT_WR)
            except OSError:
                pass

        thread = threading.Thread(target=write, daemon=True)
        thread.start()
        self.threads.append(thread)
        return SyncConn(here)


def _recv_answer(content: bytes, cuts: list[int]) -> bytes:
    """A RECV answer: `content` in DATA payloads of the sizes `cuts` gives in turn (each ≤ DATA_MAX), then DONE."""
    out, at, i = bytearray(), 0, 0
    while at < len(content):
        size = max(1, min(cuts[i % len(cuts)], DATA_MAX))
        out += _HEAD.pack(b"DATA", len(content[at:at + size])) + content[at:at + size]
        at, i = at + size, i + 1
    return bytes(out + _HEAD.pack(b"DONE", 0))


def _content(size: int) -> bytes:
    return (bytes(range(256)) * (size // 256 + 1))[:size]


@given(st.integers(0, 3 * 1024 * 1024), st.lists(st.sampled_from([1, 7, 4096, 65535, DATA_MAX]), min_size=1,
                                                   max_size=4))
def test_gathered_payloads_are_the_file_byte_for_byte(size: int, cuts: list[int]) -> None:
    content = _content(size)
    session = SyncSession(_Phone(_recv_answer(content, cuts)))  # type: ignore[arg-type]
    try:
        got = bytearray()
        for chunk in session.reply(gather=True):
            assert 0 < len(chunk) <= COALESCE
            got += chunk
        assert bytes(got) == content
    finally:
        session.close()


@pytest.mark.parametrize("threaded", [False, True], ids=["written-inline", "written-by-a-thread"])
def test_big_files_arrive_whole_and_one_past_its_cap_is_refused_in_step(tmp_path: Path, threaded: bool,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    write = pull._write_all

    def slow_write(fd: int, chunk: memoryview) -> None:
        time.sleep(0.02)  # a slow disk: the next chunk arrives while this one is still being written
        write(fd, chunk)

    monkeypatch.setattr(pull, "_write_all", slow_write)
    # `odd` ends on the second buffer: the next file must still start on a buffer no write is reading.
    odd, whole, big, small = (_content(1024 * 1024 + 1), _content(5 * 1024 * 1024 + 3), _content(3 * 1024 * 1024 + 5),
                              _content(70_000))
    answer = (_recv_answer(odd, [DATA_MAX]) + _recv_answer(whole, [DATA_MAX, 17]) + _recv_answer(big, [DATA_MAX])
              + _recv_answer(small, [1000, DATA_MAX]))
    session = SyncSession(_Phone(answer))  # type: ignore[arg-type]
    with ThreadPoolExecutor(1) as pool:
        writer = pool if threaded else None
        try:
            assert pull._receive(session, tmp_path / "odd", 1 << 30, "too big", 0o644, writer) == len(odd)
            assert pull._receive(session, tmp_path / "whole", 1 << 30, "too big", 0o644, writer) == len(whole)
            with pytest.raises(pull._Refused, match="too big"):
                pull._receive(session, tmp_path / "big", 2 * 1024 * 1024, "too big", 0o644, writer)
            assert pull._receive(session, tmp_path / "small", 1 << 20, "too big", 0o644, writer) == len(small)
        finally:
            session.close()
    # No temp file left, nothing under the refused name.
    assert sorted(os.listdir(tmp_path)) == ["odd", "small", "whole"]
    assert (tmp_path / "odd").read_bytes() == odd
    assert (tmp_path / "small").read_bytes() == small
    assert (tmp_path / "whole").read_bytes() == whole


@pytest.mark.parametrize("threaded", [False, True], ids=["written-inline", "written-by-a-thread"])
def test_a_fail_after_some_data_leaves_no_file(tmp_path: Path, threaded: bool) -> None:
    message = b"read failed: I/O error"
    answer = _recv_answer(_content(3 * 1024 * 1024), [DATA_MAX])[:-_HEAD.size] + _HEAD.pack(b"FAIL", len(message))
    session = SyncSession(_Phone(answer + message))  # type: ignore[arg-type]
    with ThreadPoolExecutor(1) as pool:
        try:
            with pytest.raises(SyncFail, match="I/O error"):
                pull._receive(session, tmp_path / "f", 1 << 30, "too big", 0o644, pool if threaded else None)
        finally:
            session.close()
    assert os.listdir(tmp_path) == []
