"""Strategies shared by the parser fuzz tests (`tests/**/test_*_fuzz.py`): chunkings and mutations of seeds.

Every strategy here is driven by hypothesis alone (no `random`), so `make test` replays the same examples
(the derandomized profile) and `make fuzz` shrinks what it finds to a minimal input.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from hypothesis import strategies as st

T = TypeVar("T", str, bytes)

_MAX_CUTS = 40
"""Chunk boundaries drawn per example: enough to cut every kind of line, few enough to stay fast."""


def split_at(data: T, cuts: Sequence[int]) -> list[T]:
    """`data` cut at the given offsets (any order, duplicates and out-of-range offsets allowed)."""
    points = sorted({min(max(c, 0), len(data)) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in zip(points, points[1:], strict=False)] or [data[:0]]


@st.composite
def chunkings(draw: st.DrawFn, data: T) -> list[T]:
    """`data` as a peer's reads may deliver it: cut anywhere, including inside a line, a frame or a character.

    Biased towards tiny chunks (one or two units), where buffering bugs live, as well as uniform cuts.
    """
    if not data:
        return [data]
    how = draw(st.sampled_from(("anywhere", "every-n", "one-cut")))
    if how == "every-n":
        step = draw(st.integers(1, max(1, min(len(data), 64))))
        return [data[i : i + step] for i in range(0, len(data), step)]
    if how == "one-cut":
        return split_at(data, [draw(st.integers(0, len(data)))])
    return split_at(data, draw(st.lists(st.integers(0, len(data)), max_size=_MAX_CUTS)))


def truncations(data: T) -> st.SearchStrategy[T]:
    """A prefix of `data` (possibly empty, possibly all of it)."""
    return st.integers(0, len(data)).map(lambda n: data[:n])


@st.composite
def line_mutations(draw: st.DrawFn, text: str, garbage: st.SearchStrategy[str], max_ops: int = 6) -> str:
    """`text` with a few line-level edits: garbage lines inserted, lines duplicated, dropped or swapped, truncated.

    The edits a flaky link, an interleaved log or a corrupted capture make; `garbage` supplies inserted lines.
    """
    lines = text.split("\n")
    for _ in range(draw(st.integers(1, max_ops))):
        op = draw(st.sampled_from(("insert", "duplicate", "drop", "swap", "truncate-line")))
        at = draw(st.integers(0, max(0, len(lines) - 1)))
        if op == "insert":
            lines.insert(at, draw(garbage))
        elif op == "duplicate" and lines:
            lines.insert(at, lines[at])
        elif op == "drop" and len(lines) > 1:
            del lines[at]
        elif op == "swap" and len(lines) > 1:
            other = draw(st.integers(0, len(lines) - 1))
            lines[at], lines[other] = lines[other], lines[at]
        elif op == "truncate-line" and lines:
            lines[at] = lines[at][: draw(st.integers(0, len(lines[at])))]
    out = "\n".join(lines)
    if draw(st.booleans()):
        out = out[: draw(st.integers(0, len(out)))]
    return out


@st.composite
def byte_mutations(draw: st.DrawFn, data: bytes, max_ops: int = 6) -> bytes:
    """`data` with a few byte-level edits: bytes flipped, inserted, deleted, a range repeated, a truncation.

    Edits keep their position biased into the data (not only its ends), so a mutated seed still gets deep
    into the parser before the damage is met.
    """
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, max_ops))):
        op = draw(st.sampled_from(("flip", "set", "insert", "delete", "repeat", "truncate")))
        at = draw(st.integers(0, len(buf)))
        if op == "flip" and at < len(buf):
            buf[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "set" and at < len(buf):
            buf[at] = draw(st.sampled_from((0x00, 0xFF, 0x7F, 0x80, ord("\n"), ord("\r"), ord("<"), ord("&"))))
        elif op == "insert":
            buf[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif op == "delete":
            del buf[at : at + draw(st.integers(1, 16))]
        elif op == "repeat":
            end = min(len(buf), at + draw(st.integers(1, 64)))
            buf[at:at] = buf[at:end]
        elif op == "truncate":
            del buf[at:]
    return bytes(buf)
