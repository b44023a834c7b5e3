"""Property tests of the host's sync client (`farm.android.pull`): whatever a phone answers — any bytes, a
hostile tree, lies about sizes, a stream cut or garbled anywhere — the session raises only its own errors
(SyncLost, SyncFail) after bounded reads, and a pull never raises, never writes outside its destination,
never leaves a temp file, and only stops when the stream itself is broken."""

from __future__ import annotations

import io
import os
import stat
import struct
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from adbutils import AdbError
from hypothesis import example, given
from hypothesis import strategies as st

from farm.android.pull import pull_tree, refuse_reason
from farm.android.sync_stream import _NAME_MAX, DATA_MAX, Entry, SyncFail, SyncLost, SyncSession
from farm.config import PullLimits

_HEAD = struct.Struct("<4sI")
_STAT = struct.Struct("<4sIII")
_DENT = struct.Struct("<4sIIII")
DIR, FILE, LINK, FIFO = stat.S_IFDIR | 0o755, stat.S_IFREG | 0o644, stat.S_IFLNK | 0o777, stat.S_IFIFO | 0o644


class _Raw(io.RawIOBase):
    """A socket's receive side: at most `most` bytes per read; the bytes come from `source` as it answers."""

    def __init__(self, source: _Session, most: int) -> None:
        self.source, self.most = source, most

    def readable(self) -> bool:
        return True

    def readinto(self, buf: memoryview) -> int:  # type: ignore[override]
        data = self.source.take(min(len(buf), self.most))
        buf[: len(data)] = data
        return len(data)


class _Reads:
    """The session's buffered reader, noting every size it asks for (an unchecked length would show here)."""

    def __init__(self, inner: io.BufferedReader, sizes: list[int]) -> None:
        self.inner, self.sizes = inner, sizes

    def read(self, n: int) -> bytes:
        self.sizes.append(n)
        return self.inner.read(n)

    def readinto(self, view: memoryview) -> int:
        self.sizes.append(len(view))
        return self.inner.readinto(view)

    def close(self) -> None:
        self.inner.close()


class _Session:
    """One `sync:` stream of a phone: canned bytes, or a phone answering each request from its tree."""

    def __init__(self, phone: FakePhone, canned: bytes | None) -> None:
        self.phone, self.canned = phone, canned
        self.requests = bytearray()
        self.out = bytearray(canned or b"")
        self.sent_total = 0
        self.ended = False
        self.sizes: list[int] = []

    # -- the socket the session uses --
    def makefile(self, mode: str, buffering: int) -> _Reads:
        return _Reads(io.BufferedReader(_Raw(self, self.phone.most), buffering), self.sizes)

    def sendall(self, data: bytes) -> None:
        self.requests += data

    def take(self, n: int) -> bytes:
        while not self.out and self.canned is None and not self.ended and self._answer():
            pass
        data = bytes(self.out[:n])
        del self.out[:n]
        return data

    def _answer(self) -> bool:
        if len(self.requests) < 8:
            return False
        ident, length = _HEAD.unpack_from(self.requests)
        if len(self.requests) < 8 + length:
            return False
        path = bytes(self.requests[8 : 8 + length]).decode("utf-8", "surrogateescape")
        del self.requests[: 8 + length]
        reply = self.phone.answer(ident, path)
        if reply.startswith(b"FAIL"):
            self.ended = True  # adbd ends the session after a FAIL
        self.out += self.phone.damage(reply, self)
        return True


class _Connection:
    def __init__(self, session: _Session) -> None:
        self.conn = session

    def send_command(self, command: str) -> None:
        assert command == "sync:"

    def check_okay(self) -> None:
        pass

    def close(self) -> None:
        pass


@dataclass
class FakePhone:
    """A phone for SyncSession: `tree` maps a device path to (mode, announced size, content); `lie` damages its
    answers (see `damage`)."""

    tree: dict[str, tuple[int, int, bytes]] = field(default_factory=dict)
    listing: dict[str, list[tuple[str, int, int]]] = field(default_factory=dict)
    canned: list[bytes] | None = None
    most: int = 1 << 20
    lie: str = "none"
    lie_at: int = 0
    garbage: bytes = b""
    opens: int = 0
    max_opens: int = 64
    sessions: list[_Session] = field(default_factory=list)

    # -- the AdbDevice the pull uses --
    def open_transport(self, timeout: float | None = None) -> _Connection:
        self.opens += 1
        if self.opens > self.max_opens or (self.canned is not None and not self.canned):
            raise AdbError("closed")
        session = _Session(self, self.canned.pop(0) if self.canned is not None else None)
        self.sessions.append(session)
        return _Connection(session)

    def answer(self, ident: bytes, path: str) -> bytes:
        if len(path.encode("utf-8", "surrogateescape")) > 1024:
            return _HEAD.pack(b"FAIL", 13) + b"path too long"  # as adbd's handle_sync_command, whatever the request
        mode, size, content = self.tree.get(path, (0, 0, b""))
        if ident == b"STAT":
            return _STAT.pack(b"STAT", mode, size, 0)
        if ident == b"LIST":
            if not stat.S_ISDIR(mode):
                return _DENT.pack(b"DONE", 0, 0, 0, 0)
            out = b""
            for name, emode, esize in [(".", DIR, 0), ("..", DIR, 0), *self.listing.get(path, [])]:
                raw = name.encode("utf-8", "surrogateescape")
                out += _DENT.pack(b"DENT", emode, esize, 0, len(raw)) + raw
            return out + _DENT.pack(b"DONE", 0, 0, 0, 0)
        if ident == b"RECV":
            if not stat.S_ISREG(mode) or (self.lie == "fail" and len(content) % 2):
                msg = b"open failed: No such file or directory"
                return _HEAD.pack(b"FAIL", len(msg)) + msg
            chunk = DATA_MAX + 1 if self.lie == "big-chunk" else DATA_MAX
            out = b"".join(_HEAD.pack(b"DATA", len(content[i : i + chunk])) + content[i : i + chunk]
                           for i in range(0, len(content), chunk))
            return out + _HEAD.pack(b"DONE", 0)
        return b""

    def damage(self, reply: bytes, session: _Session) -> bytes:
        """A cut (the phone goes away) or garbage at byte `lie_at` of what this session has sent so far."""
        start, session.sent_total = session.sent_total, session.sent_total + len(reply)
        if self.lie in ("cut", "garbage") and start <= self.lie_at < session.sent_total:
            at = self.lie_at - start
            if self.lie == "cut":
                session.ended = True
                return reply[:at]
            return reply[:at] + self.garbage + reply[at:]
        return reply


# --- the session on any bytes -------------------------------------------------------------------------------

_OPS = st.sampled_from(["stat", "list", "recv"])
_LIMIT = max(_NAME_MAX, DATA_MAX, _DENT.size)


@given(_OPS, st.binary(max_size=200), st.integers(1, 64))
@example("list", _DENT.pack(b"DENT", FILE, 1, 0, 2**32 - 1), 64)  # a name length no name has
@example("recv", _HEAD.pack(b"DATA", 2**32 - 1), 64)
@example("recv", _HEAD.pack(b"FAIL", 2**31), 64)
@example("list", _HEAD.pack(b"FAIL", 13) + b"path too long", 64)  # read by its id: the directory's error, no DENT
@example("list", _HEAD.pack(b"FAIL", 2**31), 64)
@example("stat", _HEAD.pack(b"FAIL", 13) + b"path too long", 64)
def test_any_answer_raises_only_the_sessions_own_errors_after_bounded_reads(op: str, raw: bytes, most: int) -> None:
    phone = FakePhone(canned=[raw], most=most)
    session = SyncSession(phone)  # type: ignore[arg-type]
    try:
        if op == "stat":
            session.stat("/x")
        elif op == "list":
            session.list("/x")
        else:
            for _ in session.recv("/x"):
                pass
    except (SyncLost, SyncFail):
        pass
    assert max(phone.sessions[0].sizes, default=0) <= _LIMIT


_NAME = st.text(max_size=10) | st.sampled_from(
    ["", ".", "..", "../x", "a/b", "/abs", "..\\x", "x" * 255, "ü" * 128, "y" * 300, "ctl\x01", "nul\0x",
     "\udcff\udcfe", "report.md", "报告.md"])


@given(st.lists(st.tuples(_NAME, st.sampled_from([DIR, FILE, LINK, FIFO, 0]) | st.integers(0, 2**32 - 1),
                          st.integers(0, 2**32 - 1)), max_size=6), st.integers(1, 64))
def test_a_listing_reads_back_exactly_in_any_read_sizes(entries: list[tuple[str, int, int]], most: int) -> None:
    phone = FakePhone(tree={"/d": (DIR, 0, b"")}, listing={"/d": entries}, most=most)
    names = [(".", DIR, 0), ("..", DIR, 0), *entries]
    assert SyncSession(phone).list("/d").entries == [Entry(n, m, s) for n, m, s in names]  # type: ignore[arg-type]


@given(st.binary(max_size=300) | st.sampled_from([b"z" * (DATA_MAX + 5), b""]), st.integers(1, 64))
def test_a_file_reads_back_exactly_in_any_read_sizes(content: bytes, most: int) -> None:
    phone = FakePhone(tree={"/f": (FILE, len(content), content)}, most=most)
    assert b"".join(bytes(c) for c in SyncSession(phone).recv("/f")) == content  # type: ignore[arg-type]


# --- a whole pull from a hostile phone ----------------------------------------------------------------------

REMOTE = "/sdcard/eval/r1"


@st.composite
def hostile_phone(draw: st.DrawFn) -> FakePhone:
    """A phone whose eval tree has hostile names, special files, size lies and duplicates, and whose stream may
    fail a file, carry an oversized chunk, be cut, or carry garbage."""
    phone = FakePhone(most=draw(st.sampled_from([1, 7, 4096, 1 << 20])))
    phone.tree[REMOTE] = (DIR, 0, b"")
    dirs = [REMOTE]
    for _ in range(draw(st.integers(0, 8))):
        parent = draw(st.sampled_from(dirs))
        name = draw(_NAME)
        kind = draw(st.sampled_from([FILE, FILE, FILE, DIR, LINK, FIFO]))
        content = draw(st.binary(max_size=40) | st.just(b"q" * (DATA_MAX + 3)))
        size = len(content) if draw(st.booleans()) else draw(st.integers(0, 2**32 - 1))
        path = f"{parent}/{name}"
        phone.listing.setdefault(parent, []).append((name, kind, size))
        phone.tree.setdefault(path, (kind, size, content))
        if kind == DIR and refuse_reason(name) is None:
            dirs.append(path)
    phone.lie = draw(st.sampled_from(["none", "none", "fail", "big-chunk", "cut", "garbage"]))
    phone.lie_at = draw(st.integers(0, 400))
    phone.garbage = draw(st.binary(min_size=1, max_size=12))
    return phone


def _walk(root: Path) -> list[Path]:
    return sorted(root.rglob("*")) if root.exists() else []


@given(hostile_phone(), st.sampled_from([PullLimits(), PullLimits(max_file_mb=0.00005, max_total_mb=0.0001)]))
@example(FakePhone(tree={REMOTE: (DIR, 0, b""), f"{REMOTE}/{'n' * 300}": (FILE, 1, b"x"),
                         f"{REMOTE}/ok": (FILE, 1, b"y")},
                   listing={REMOTE: [("n" * 300, FILE, 1), ("ok", FILE, 1)]}), PullLimits())
@example(FakePhone(tree={REMOTE: (DIR, 0, b""), f"{REMOTE}/{'d' * 256}": (DIR, 0, b""),
                         f"{REMOTE}/ok": (FILE, 1, b"y")},
                   listing={REMOTE: [("d" * 256, DIR, 0), ("ok", FILE, 1)]}), PullLimits())
def test_a_pull_from_a_hostile_phone_keeps_to_its_destination(phone: FakePhone, limits: PullLimits) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        dest = Path(tmp) / "raw"
        beside = Path(tmp) / "beside"
        beside.mkdir()
        result = pull_tree(phone, REMOTE, dest, limits)  # type: ignore[arg-type]
        assert list(beside.iterdir()) == []
        pulled = _walk(dest)
        for path in pulled:
            assert not path.is_symlink() and (path.is_dir() or path.is_file())
            assert path.resolve().is_relative_to(dest.resolve())
            assert not path.name.startswith(".pull."), "a temp file was left behind"
            assert refuse_reason(path.name) is None
        files = [p for p in pulled if p.is_file()]
        assert result.files == len(files) and result.bytes == sum(p.stat().st_size for p in files)
        for path in files:
            device_path = REMOTE + "/" + str(path.relative_to(dest))
            assert path.read_bytes() == phone.tree[device_path][2]
            assert path.stat().st_size <= limits.max_file_mb * 1024 * 1024
        assert result.bytes <= limits.max_total_mb * 1024 * 1024
        stopped = [e for e in result.refused if e.startswith(f"{REMOTE}: ")]
        if phone.lie in ("none", "fail"):
            # The stream stayed in step: every entry is pulled or refused by name, and the pull went to the end.
            assert stopped == [], stopped


def test_fake_phone_answers_a_clean_pull_completely() -> None:
    phone = FakePhone(tree={REMOTE: (DIR, 0, b""), f"{REMOTE}/a": (FILE, 2, b"hi"), f"{REMOTE}/d": (DIR, 0, b""),
                            f"{REMOTE}/d/b": (FILE, 70000, b"b" * 70000)},
                      listing={REMOTE: [("a", FILE, 2), ("d", DIR, 0)], f"{REMOTE}/d": [("b", FILE, 70000)]}, most=5)
    with tempfile.TemporaryDirectory() as tmp:
        result = pull_tree(phone, REMOTE, Path(tmp), PullLimits())  # type: ignore[arg-type]
        assert (result.files, result.bytes, result.refused) == (2, 70002, [])
        assert (Path(tmp) / "d" / "b").read_bytes() == b"b" * 70000
        assert sorted(os.listdir(tmp)) == ["a", "d"]

