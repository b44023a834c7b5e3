"""Property tests of the virtual phone's shell stdin (`shell:` raw lines, `shell,v2:` packets): however the adb
server cuts the host's input into WRTEs, the shell runs the same commands, and no input makes it fail."""

from __future__ import annotations

import asyncio
import struct
from typing import Any, cast

from hypothesis import example, given
from hypothesis import strategies as st

from farm.sim import shell
from farm.sim.adbd import Stream
from farm.sim.shell import ID_CLOSE_STDIN, ID_EXIT, ID_STDERR, ID_STDIN, ID_STDOUT, ID_WINDOW, split_service
from tests.helpers.fuzz import chunkings

_V2 = struct.Struct("<BI")


class _Shell:
    """Records the command lines the service hands it."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.status = 0

    async def run(self, text: str) -> int:
        self.ran.append(text)
        return 0


class _Conn:
    max_payload = 4096
    streams: dict[int, Stream] = {}

    async def send(self, command: int, arg0: int, arg1: int, data: bytes = b"") -> None:
        pass


def interactive(chunks: list[bytes], v2: bool, close: bool = True) -> list[str]:
    """The commands `_interactive` runs for these WRTEs, ended by the host closing the stream (or not, for v2
    input that closes stdin itself)."""
    sh = _Shell()

    async def main() -> None:
        stream = Stream(cast(Any, _Conn()), 1, 1, "shell,v2:" if v2 else "shell:")
        for chunk in chunks:
            if chunk:
                stream._on_data(chunk)
        stream._on_close()
        await asyncio.wait_for(shell._interactive(cast(Any, sh), stream, v2), 10)

    asyncio.run(main())
    return sh.ran


def v2_packet(ident: int, data: bytes) -> bytes:
    return _V2.pack(ident, len(data)) + data


_LINE = st.text(st.characters(codec="ascii", exclude_characters="\n\r"), max_size=12)
_STDIN = st.lists(_LINE, max_size=5).map(lambda lines: "".join(f"{line}\n" for line in lines).encode())


@st.composite
def v2_input(draw: st.DrawFn) -> tuple[bytes, list[str]]:
    """Shell-v2 packets as the adb client sends them (stdin pieces, window sizes, a close-stdin) and the commands
    the stdin they carry holds."""
    stdin = draw(_STDIN)
    pieces = draw(chunkings(stdin))
    out = b""
    for piece in pieces:
        if draw(st.booleans()):
            out += v2_packet(ID_WINDOW, b"24x80,0x0\0")
        out += v2_packet(ID_STDIN, piece)
    if draw(st.booleans()):
        out += v2_packet(ID_CLOSE_STDIN, b"")
    commands = []
    for line in stdin.decode().split("\n"):
        if line.strip() == "exit":
            break
        if line.strip():
            commands.append(line.strip())
    return out, commands


@given(v2_input(), st.data())
@example((v2_packet(ID_STDIN, b"echo one\n") + v2_packet(ID_STDIN, b"echo two\n"), ["echo one", "echo two"]),
         None)  # each packet cut across two WRTEs: the second packet was read from the middle of the first
def test_v2_stdin_in_any_wrte_chunking_runs_the_same_commands(case: tuple[bytes, list[str]],
                                                              data: st.DataObject | None) -> None:
    raw, commands = case
    chunks = data.draw(chunkings(raw)) if data is not None else [raw[:3], raw[3:20], raw[20:]]
    assert interactive(chunks, v2=True) == commands


@given(_STDIN, st.data())
def test_v1_stdin_in_any_wrte_chunking_runs_the_same_commands(stdin: bytes, data: st.DataObject) -> None:
    assert interactive(data.draw(chunkings(stdin)), v2=False) == interactive([stdin], v2=False)


_ANY_PACKET = st.builds(
    lambda ident, data, length: _V2.pack(ident, len(data) if length is None else length) + data,
    st.sampled_from([ID_STDIN, ID_STDOUT, ID_STDERR, ID_EXIT, ID_CLOSE_STDIN, ID_WINDOW, 6, 255]),
    st.binary(max_size=20),
    st.none() | st.sampled_from([0, 1, 5, 2**31, 2**32 - 1]),
)


@given(st.lists(_ANY_PACKET, max_size=6).map(b"".join) | st.binary(max_size=60), st.booleans(), st.data())
@example(_V2.pack(ID_STDIN, 2**32 - 1) + b"echo never ends\n", True, None)  # a length no packet reaches
# Stdin after close-stdin ran when both came in one WRTE, not when cut apart (found by `make fuzz`).
@example(v2_packet(ID_CLOSE_STDIN, b"") + v2_packet(ID_STDIN, b"\0"), True, None)
def test_any_stdin_bytes_end_cleanly(raw: bytes, v2: bool, data: st.DataObject | None) -> None:
    chunks = data.draw(chunkings(raw)) if data is not None else [raw]
    assert interactive(chunks, v2=v2) == interactive([raw], v2=v2)


@given(st.text(max_size=40))
def test_any_service_name_splits_without_error(service: str) -> None:
    name, options, command = split_service(service)
    assert ":".join([",".join([name, *options]), command]) == service or ":" not in service
