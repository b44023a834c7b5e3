"""Property tests of the virtual phone's adbd transport (the device side of the adb wire protocol): whatever the
adb server sends — bad magic, lying or huge lengths, unknown commands, streams it never opened, cut anywhere —
the transport never reads a length it has not checked, never fails a service with an unexpected exception,
keeps its streams consistent, and only ever sends well-formed packets."""

from __future__ import annotations

import asyncio
import logging
import os
import struct
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from farm.sim import adbd
from farm.sim.adbd import (
    A_AUTH,
    A_CLSE,
    A_CNXN,
    A_OKAY,
    A_OPEN,
    A_STLS,
    A_VERSION,
    A_WRTE,
    MAX_PAYLOAD,
    AdbTransport,
    Service,
    Stream,
)
from farm.sim.phone import PhoneState
from farm.sim.services import serve_reverse
from farm.sim.sync import serve_sync
from tests.helpers.fuzz import byte_mutations, chunkings

_HEADER = struct.Struct("<6I")
_COMMANDS = {A_CNXN: "CNXN", A_AUTH: "AUTH", A_OPEN: "OPEN", A_OKAY: "OKAY", A_CLSE: "CLSE", A_WRTE: "WRTE"}
_U32 = st.integers(0, 2**32 - 1)


async def _echo(phone: PhoneState, stream: Stream) -> None:
    await stream.accept()
    while data := await stream.read():
        await stream.write(data)
        await stream.flush()


def _router(service: str) -> Service | None:
    # The services whose framing rides on the transport's: sync (lengths inside WRTEs), an echo (flow control
    # both ways) and reverse (a one-shot answer). Everything else is refused, as adbd refuses unknown services.
    if service == "sync:":
        return serve_sync
    if service == "echo:":
        return _echo
    if service.startswith("reverse:"):
        return serve_reverse
    return None


def packet(command: int, arg0: int, arg1: int, data: bytes = b"", *, magic: int | None = None,
           length: int | None = None, crc: int | None = None) -> bytes:
    """A packet as the adb server frames it, or with a lying magic, length or checksum."""
    return _HEADER.pack(command, arg0, arg1, len(data) if length is None else length,
                        sum(data) & 0xFFFFFFFF if crc is None else crc,
                        command ^ 0xFFFFFFFF if magic is None else magic) + data


CONNECT = packet(A_CNXN, A_VERSION, MAX_PAYLOAD, b"host::features=shell_v2,cmd,stat_v2,ls_v2\0")
_SYNC_REQUESTS = st.sampled_from([
    b"STAT\x0d\0\0\0/sdcard/a.txt", b"LIST\x07\0\0\0/sdcard", b"RECV\x0d\0\0\0/sdcard/a.txt", b"QUIT\0\0\0\0",
    b"STA2\x01\0\0\0/", b"SEND\x13\0\0\0/sdcard/new.txt,420DATA\x02\0\0\0hiDONE\0\0\0\0", b"STAT\xff\xff\xff\xff",
])
_SERVICES = st.sampled_from([b"sync:", b"echo:", b"reverse:list-forward", b"reverse:forward:tcp:1;tcp:2",
                             b"reverse:killforward-all", b"shell-not-served:", b""]) | st.binary(max_size=12)
_IDS = st.integers(0, 4) | _U32


@st.composite
def host_packet(draw: st.DrawFn) -> bytes:
    """One packet from the adb server: plausible for its command, sometimes with a lie in its header."""
    kind = draw(st.sampled_from(["CNXN", "OPEN", "OPEN", "WRTE", "WRTE", "OKAY", "OKAY", "CLSE", "AUTH", "STLS",
                                 "other"]))
    arg0, arg1 = draw(_IDS), draw(_IDS)
    data = b""
    if kind == "CNXN":
        command, data = A_CNXN, b"host::features=shell_v2\0"
        arg0 = draw(st.sampled_from([A_VERSION, 0x01000000]) | _U32)
        arg1 = draw(st.sampled_from([MAX_PAYLOAD, 4096, 0, 256 * 1024]) | _U32)
    elif kind == "OPEN":
        command, data = A_OPEN, draw(_SERVICES) + draw(st.sampled_from([b"\0", b"", b"\0trailing"]))
        arg1 = 0
    elif kind == "WRTE":
        command, data = A_WRTE, draw(_SYNC_REQUESTS | st.binary(max_size=40))
    else:
        command = {"OKAY": A_OKAY, "CLSE": A_CLSE, "AUTH": A_AUTH, "STLS": A_STLS}.get(kind) or draw(_U32)
    lie = draw(st.sampled_from(["none"] * 6 + ["magic", "length", "huge", "crc"]))
    if lie == "magic":
        return packet(command, arg0, arg1, data, magic=draw(_U32))
    if lie == "length":
        return packet(command, arg0, arg1, data, length=draw(st.integers(0, 64)))
    if lie == "huge":
        return packet(command, arg0, arg1, data, length=draw(st.sampled_from([MAX_PAYLOAD + 1, 2**31, 2**32 - 1])))
    if lie == "crc":
        return packet(command, arg0, arg1, data, crc=draw(_U32))
    return packet(command, arg0, arg1, data)


HOST_STREAM = st.builds(
    lambda connect, packets, tail: (CONNECT if connect else b"") + b"".join(packets) + tail,
    st.booleans() | st.just(True), st.lists(host_packet(), max_size=8), st.binary(max_size=8) | st.just(b""),
)


class _Writer:
    """The TCP side of the transport: collects what the phone sends; optionally acknowledges every WRTE at once."""

    def __init__(self, reader: asyncio.StreamReader, ack: bool) -> None:
        self.reader, self.ack = reader, ack
        self.out = bytearray()
        self.transport = self
        self.aborted = False
        self.eof = False

    def write(self, data: bytes) -> None:
        assert len(data) >= _HEADER.size, "the transport writes whole packets"
        self.out += data
        command, arg0, arg1 = _HEADER.unpack_from(data)[:3]
        if self.ack and command == A_WRTE and not self.eof:
            self.reader.feed_data(packet(A_OKAY, arg1, arg0))

    def get_write_buffer_size(self) -> int:
        return 0

    def abort(self) -> None:
        self.aborted = True

    async def drain(self) -> None:
        pass

    def close(self) -> None:
        pass


class _Errors(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@dataclass
class Run:
    """What one transport did with one host stream."""

    out: bytes
    reads: list[int]
    errors: list[str]
    streams_left: int
    tasks_left: int
    host_max: list[int] = field(default_factory=list)


@pytest.fixture(scope="module")
def any_phone(tmp_path_factory: pytest.TempPathFactory) -> PhoneState:
    """One phone state for the module; `transport_run` gives it a fresh root per example."""
    return PhoneState(root=tmp_path_factory.mktemp("phone"))


def transport_run(phone: PhoneState, chunks: list[bytes], ack: bool) -> Run:
    """Serve the host's bytes (in these reads) on one transport until the host goes away."""
    reads: list[int] = []
    errors = _Errors()
    log = logging.getLogger(adbd.__name__)
    log.addHandler(errors)

    async def main() -> Run:
        reader = asyncio.StreamReader()
        original = reader.readexactly

        async def readexactly(n: int) -> bytes:
            reads.append(n)
            return await original(n)

        reader.readexactly = readexactly  # type: ignore[method-assign]
        writer = _Writer(reader, ack)
        transport = AdbTransport(phone, reader, writer, _router)  # type: ignore[arg-type]
        runner = asyncio.ensure_future(transport.run())
        for chunk in chunks:
            reader.feed_data(chunk)
            for _ in range(5):
                await asyncio.sleep(0)  # let the services answer between the host's reads
        for _ in range(50):
            await asyncio.sleep(0)
        writer.eof = True
        reader.feed_eof()
        await asyncio.wait_for(runner, 10)
        pending = list(transport._tasks)
        await asyncio.wait_for(asyncio.gather(*pending, return_exceptions=True), 10)
        return Run(bytes(writer.out), reads, [], len(transport.streams), len(transport._tasks))

    try:
        with tempfile.TemporaryDirectory() as tmp:
            phone.root = Path(tmp).resolve()
            (phone.root / "sdcard").mkdir()
            (phone.root / "sdcard" / "a.txt").write_bytes(b"alpha\n")
            os.symlink("/sdcard", phone.root / "sdcard" / "loop")
            run = asyncio.run(main())
    finally:
        log.removeHandler(errors)
    run.errors = [r.getMessage() for r in errors.records]
    return run


def check_device_packets(out: bytes, announced: int) -> None:
    """Every packet the phone sent is well-formed, and its streams follow the protocol: a WRTE only on a stream it
    accepted and has not closed, one CLSE per stream, a fresh id per accepted stream."""
    at = 0
    accepted: set[int] = set()
    closed: set[int] = set()
    while at < len(out):
        assert at + _HEADER.size <= len(out)
        command, arg0, arg1, length, crc, magic = _HEADER.unpack_from(out, at)
        at += _HEADER.size
        data = out[at : at + length]
        at += length
        assert len(data) == length and magic == command ^ 0xFFFFFFFF and command in _COMMANDS
        assert crc in (0, sum(data) & 0xFFFFFFFF)
        if command == A_OKAY and arg0 not in accepted:
            assert arg0 not in closed and arg0 != 0, "a stream id is never reused"
            accepted.add(arg0)
        elif command == A_WRTE:
            assert arg0 in accepted and arg0 not in closed, f"WRTE on stream {arg0} it has not open"
            assert length <= max(4096, min(announced, MAX_PAYLOAD))
        elif command == A_CLSE and arg0 != 0:
            assert arg0 in accepted and arg0 not in closed, f"second CLSE of stream {arg0}"
            closed.add(arg0)


def assert_run_is_sound(run: Run, announced: int = MAX_PAYLOAD) -> None:
    assert max(run.reads, default=0) <= MAX_PAYLOAD, "a length was read before it was checked"
    assert run.errors == []
    assert run.streams_left == 0 and run.tasks_left == 0
    check_device_packets(run.out, announced)


@given(HOST_STREAM, st.booleans(), st.data())
@example(CONNECT + packet(A_OPEN, 1, 0, b"sync:\0") + packet(A_WRTE, 1, 1, b"STAT\x03\0\0\0/\0x"), True, None)
def test_any_host_stream_is_served_or_dropped_cleanly(any_phone: PhoneState, raw: bytes, ack: bool,
                                                      data: st.DataObject | None) -> None:
    if data is not None and data.draw(st.booleans()):
        raw = data.draw(byte_mutations(raw))
    chunks = data.draw(chunkings(raw)) if data is not None else [raw]
    assert_run_is_sound(transport_run(any_phone, chunks, ack))


@given(st.binary(max_size=120), st.booleans())
def test_any_bytes_before_a_handshake_get_no_stream(any_phone: PhoneState, raw: bytes, ack: bool) -> None:
    run = transport_run(any_phone, [raw], ack)
    assert_run_is_sound(run)
    # Nothing but a handshake answer (or an AUTH) can come from a phone that was never connected.
    commands = {_HEADER.unpack_from(run.out, i)[0] for i in _packet_offsets(run.out)}
    assert A_CNXN in commands or not commands


@given(st.sampled_from([MAX_PAYLOAD + 1, 2**31, 2**32 - 1]), st.sampled_from([A_CNXN, A_OPEN, A_WRTE, 0]))
def test_a_huge_length_is_refused_before_anything_is_read_or_allocated(any_phone: PhoneState, length: int,
                                                                       command: int) -> None:
    run = transport_run(any_phone, [CONNECT, packet(command, 1, 1, b"", length=length) + b"x" * 64], False)
    assert_run_is_sound(run)
    assert run.reads == [_HEADER.size, len(CONNECT) - _HEADER.size, _HEADER.size]


def _packet_offsets(out: bytes) -> list[int]:
    offsets, at = [], 0
    while at + _HEADER.size <= len(out):
        offsets.append(at)
        at += _HEADER.size + _HEADER.unpack_from(out, at)[3]
    return offsets
