"""Property tests of the virtual phone's `sync:` service (device side): whatever the host sends, in whatever
WRTEs, the service answers each request in order with a well-formed reply or ends the session, never fails
with anything but the stream closing, never reads a length it has not checked, and never touches a byte
outside the phone's root."""

from __future__ import annotations

import asyncio
import os
import struct
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from farm.sim import sync
from farm.sim.adbd import A_WRTE, Stream, StreamClosed
from farm.sim.phone import PhoneState
from tests.helpers.fuzz import byte_mutations, chunkings

_REQ = struct.Struct("<4sI")
_IDS = (b"STAT", b"STA2", b"LST2", b"LIST", b"LIS2", b"RECV", b"SEND", b"QUIT")
_FILE = b"alpha\n" * 5
_BIG = bytes(range(256)) * 300  # more than one 64 KiB DATA chunk


class _Conn:
    """The transport under one stream: takes the service's WRTEs and acknowledges each at once."""

    def __init__(self, max_payload: int) -> None:
        self.max_payload = max_payload
        self.out = bytearray()
        self.streams: dict[int, Stream] = {}
        self.stream: Stream | None = None

    async def send(self, command: int, arg0: int, arg1: int, data: bytes = b"") -> None:
        if command == A_WRTE:
            self.out += data
            assert self.stream is not None
            self.stream._on_okay()


@dataclass
class Session:
    """One run of the service: what it wrote, how it ended, the largest read it asked for, the phone's root."""

    out: bytes
    ended: str
    largest_read: int
    root: Path
    outside: Path
    reads: list[int] = field(default_factory=list)


@pytest.fixture(scope="module")
def any_phone(tmp_path_factory: pytest.TempPathFactory) -> PhoneState:
    """One phone state for the module; `phone_with_files` gives it a fresh root per example."""
    return PhoneState(root=tmp_path_factory.mktemp("phone"))


@contextmanager
def phone_with_files(phone: PhoneState) -> Iterator[tuple[PhoneState, Path]]:
    """`phone` on a fresh small file system (a file, a directory, a big file, links in and out), and a directory
    beside its root. The phone is reused with a new root: building a whole phone per example would cost most of
    the test's time, and the sync service only needs the root and the limits."""
    with tempfile.TemporaryDirectory() as tmp:
        outside = Path(tmp) / "outside"
        outside.mkdir()
        (outside / "secret").write_bytes(b"host file")
        phone.root = Path(tmp).resolve() / "fs"
        sdcard = phone.root / "sdcard"
        (sdcard / "dir").mkdir(parents=True)
        (phone.root / "proc").mkdir()
        (sdcard / "a.txt").write_bytes(_FILE)
        (sdcard / "dir" / "b.bin").write_bytes(_BIG)
        os.symlink("/sdcard/dir", sdcard / "link")
        os.symlink("../../../../outside", sdcard / "escape")
        yield phone, outside


def serve(phone: PhoneState, chunks: list[bytes], outside: Path, max_payload: int = 4096) -> Session:
    """Feed the chunks as the host's WRTEs, then the host's end of input; run the service to its end."""
    reads: list[int] = []
    conn = _Conn(max_payload)

    async def main() -> str:
        stream = Stream(cast(Any, conn), 1, 7, "sync:")
        conn.stream = stream
        original = stream.read_exactly

        async def read_exactly(n: int) -> bytes:
            reads.append(n)
            return await original(n)

        stream.read_exactly = read_exactly  # type: ignore[method-assign]
        for chunk in chunks:
            if chunk:
                stream._on_data(chunk)
        stream._inbox.put_nowait(None)  # the host has nothing more to say (it still reads the answers)
        try:
            await asyncio.wait_for(sync.serve_sync(phone, stream), 20)
            ended = "returned"
        except StreamClosed:
            ended = "input ended"
        await stream.flush()
        return ended

    ended = asyncio.run(main())
    return Session(bytes(conn.out), ended, max(reads, default=0), phone.root, outside, reads)


def assert_contained(session: Session) -> None:
    """Nothing outside the root changed, and no temp file of an interrupted SEND was left behind."""
    assert sorted(p.name for p in session.outside.iterdir()) == ["secret"]
    assert (session.outside / "secret").read_bytes() == b"host file"
    leftovers = [p for p in session.root.rglob("*") if p.name.endswith(".farm-sync-tmp")]
    assert leftovers == []
    assert session.largest_read <= max(sync._MAX_PATH, sync.CHUNK, 8)


# --- request sequences -----------------------------------------------------------------------------------

_PATHS = st.sampled_from([
    b"/sdcard/a.txt", b"/sdcard/dir", b"/sdcard/dir/b.bin", b"/sdcard/missing", b"/sdcard/link", b"/sdcard/link/b.bin",
    b"/sdcard/escape", b"/sdcard/escape/secret", b"/", b"", b".", b"/sdcard/../../..", b"/sdcard/a.txt/child",
    b"/sdcard/a.txt\0junk", b"\0", b"/sdcard/\xff\xfe", b"/proc", b"/" + b"x" * 300, b"/sdcard/" + b"d/" * 60,
]) | st.binary(max_size=24)
_SEND_PATHS = _PATHS.flatmap(
    lambda p: st.sampled_from([p, p + b",33188", p + b",420", p + b",", p + b",x", p + b",-1", p + b",99999999999"]))


@dataclass(frozen=True)
class Request:
    """One sync request as the host sends it; `data` and `end` only for SEND."""

    ident: bytes
    path: bytes
    data: tuple[bytes, ...] = ()
    end: bytes = b"DONE"
    length: int | None = None
    """A header length other than the path's own (a lie the service must survive)."""

    def encode(self) -> bytes:
        out = _REQ.pack(self.ident, len(self.path) if self.length is None else self.length) + self.path
        if self.ident == b"SEND":
            for chunk in self.data:
                out += _REQ.pack(b"DATA", len(chunk)) + chunk
            out += _REQ.pack(self.end, 1_700_000_000 if self.end == b"DONE" else 0)
        return out


REQUEST = st.one_of(
    st.builds(Request, st.sampled_from(_IDS[:6]), _PATHS),
    st.builds(Request, st.just(b"SEND"), _SEND_PATHS,
              st.lists(st.binary(max_size=40) | st.sampled_from([b"z" * 5000, b"z" * (sync.CHUNK + 1)]),
                       max_size=3).map(tuple),
              st.sampled_from([b"DONE", b"DONE", b"DATA", b"QUIT", b"\0\0\0\0"])),
    st.builds(Request, st.sampled_from([b"QUIT", b"XXXX", b"stat", b"\0\0\0\0", b"DATA", b"DONE"]), _PATHS),
    st.builds(Request, st.sampled_from(_IDS), _PATHS, length=st.sampled_from([1025, 2**31, 2**32 - 1])),
)


def _take(out: bytes, at: int, n: int) -> tuple[bytes, int]:
    assert at + n <= len(out), f"reply cut short at {at}: needed {n} more bytes"
    return out[at : at + n], at + n


def check_replies(out: bytes, requests: list[Request], phone: PhoneState) -> None:
    """Each request's reply, in order, shaped as its request demands; nothing after the session ends."""
    at = 0
    for req in requests:
        length = len(req.path) if req.length is None else req.length
        if req.ident == b"QUIT":
            break
        if req.ident not in _IDS or length > sync._MAX_PATH:
            head, at = _take(out, at, 8)
            ident, n = _REQ.unpack(head)
            assert ident == b"FAIL"
            _, at = _take(out, at, n)
            break
        if req.ident == b"STAT":
            reply, at = _take(out, at, 16)
            assert reply[:4] == b"STAT"
        elif req.ident in (b"STA2", b"LST2"):
            reply, at = _take(out, at, 72)
            assert reply[:4] == b"STA2"
        elif req.ident in (b"LIST", b"LIS2"):
            size = 20 if req.ident == b"LIST" else 76
            entry = b"DENT" if req.ident == b"LIST" else b"DNT2"
            names = []
            while True:
                head, at = _take(out, at, size)
                if head[:4] == b"DONE":
                    assert head[4:] == bytes(size - 4)
                    break
                assert head[:4] == entry
                name, at = _take(out, at, struct.unpack_from("<I", head, size - 4)[0])
                names.append(name)
            assert names == [] or names[:2] == [b".", b".."]
        elif req.ident == b"RECV":
            data = bytearray()
            while True:
                head, at = _take(out, at, 8)
                ident, n = _REQ.unpack(head)
                if ident == b"DONE":
                    assert n == 0
                    break
                assert ident in (b"DATA", b"FAIL") and n <= sync.CHUNK
                chunk, at = _take(out, at, n)
                if ident == b"FAIL":
                    break
                data += chunk
            if req.path in (b"/sdcard/a.txt", b"/sdcard/dir/b.bin", b"/sdcard/link/b.bin") and ident == b"DONE":
                assert bytes(data) == (_FILE if req.path.endswith(b"a.txt") else _BIG)
        else:
            head, at = _take(out, at, 8)
            ident, n = _REQ.unpack(head)
            assert ident in (b"OKAY", b"FAIL")
            if ident == b"OKAY":
                assert n == 0
            else:
                _, at = _take(out, at, n)
                bad = any(len(c) > sync.CHUNK for c in req.data) or req.end not in (b"DONE", b"DATA")
                if bad:
                    break
    assert at == len(out), f"{len(out) - at} bytes after the last reply"


@given(st.lists(REQUEST, max_size=6))
@example([Request(b"STAT", b"/sdcard/a.txt\0junk")])  # a NUL in the path: adbd reads it as a C string
@example([Request(b"SEND", b"\0,420", (b"x",))])
@example([Request(b"LIST", b"/sdcard/\0")])
@example([Request(b"SEND", b"/sdcard/a.txt,-1")])  # a mode no unsigned int holds
@example([Request(b"SEND", b"/sdcard/a.txt,99999999999")])
@example([Request(b"RECV", b"\x80")])  # not UTF-8: the FAIL message names it as sent
def test_request_sequences_get_well_formed_replies_in_order(any_phone: PhoneState, requests: list[Request]) -> None:
    complete = [r for r in requests if not (r.ident == b"SEND" and r.end == b"DATA")]
    with phone_with_files(any_phone) as (phone, outside):
        session = serve(phone, [b"".join(r.encode() for r in complete)], outside)
        assert_contained(session)
        check_replies(session.out, complete, phone)


@given(st.lists(REQUEST, min_size=1, max_size=4), st.data())
def test_any_chunking_of_the_requests_gives_the_same_replies(
    any_phone: PhoneState, requests: list[Request], data: st.DataObject
) -> None:
    raw = b"".join(r.encode() for r in requests)
    with phone_with_files(any_phone) as (phone, outside):
        whole = serve(phone, [raw], outside)
    with phone_with_files(any_phone) as (phone, outside):
        pieces = serve(phone, data.draw(chunkings(raw)), outside, max_payload=data.draw(st.sampled_from([4096, 65536])))
    # Two phones differ in times and inode numbers (STAT answers carry them): the parse itself must not differ.
    assert (pieces.reads, pieces.ended, len(pieces.out)) == (whole.reads, whole.ended, len(whole.out))


@given(st.binary(max_size=200) | st.lists(REQUEST, max_size=4).map(lambda rs: b"".join(r.encode() for r in rs)),
       st.data())
def test_any_bytes_end_the_session_cleanly(any_phone: PhoneState, raw: bytes, data: st.DataObject) -> None:
    if data.draw(st.booleans()):
        raw = data.draw(byte_mutations(raw))
    with phone_with_files(any_phone) as (phone, outside):
        session = serve(phone, data.draw(chunkings(raw)), outside)
        assert session.ended in ("returned", "input ended")
        assert_contained(session)
