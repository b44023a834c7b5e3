"""Property tests of the hierarchy dump reader: any damage to a real dump is read or refused as malformed XML
(`expat.ExpatError`), never another exception, and no document makes it expand entities or fetch anything.

Seeds are the real dumps in ../shared/data/dumps (third-party captures, read in place; see its README.md).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from host_agent import observation
from host_agent.observation import Observation, observe_xml
from tests.helpers.fuzz import byte_mutations, chunkings
from tests.helpers.host import hierarchy, node
from tests.helpers.shared_data import SHARED_DATA

_DIR = SHARED_DATA / "dumps"
DUMPS: dict[str, bytes] = {p.name: p.read_bytes() for p in sorted(_DIR.glob("*.xml"))} if _DIR.is_dir() else {}
_DUMP = st.sampled_from(sorted(DUMPS) or ["(none)"])
_HEAD = "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>"


def read_or_refuse(xml: str | bytes) -> Observation | None:
    """The observation, or None when the reader refused the document as malformed XML."""
    try:
        obs = observe_xml(xml)
    except observation.expat.ExpatError:
        return None
    assert_usable(obs)
    return obs


def assert_usable(obs: Observation) -> None:
    """Everything the agent loop and the transcript do with an observation works on it."""
    lines = obs.text.split("\n")
    assert lines[0].startswith("app: ") and len(lines) == len(obs.rows) + 1
    obs.text.encode("utf-8")  # written to the transcript, hashed for the digest
    assert len(obs.digest) == 40
    for ref, n in enumerate(obs.nodes, start=1):
        assert n.ref == ref and lines[ref].startswith(f"[{ref}] ")
        n.center  # noqa: B018 - a tap target must be computable
    obs.visible_texts  # noqa: B018


@given(_DUMP, st.data())
def test_a_damaged_real_dump_is_read_or_refused_as_malformed(name: str, data: st.DataObject) -> None:
    raw = data.draw(byte_mutations(DUMPS[name]))
    read_or_refuse(raw)
    # The same document as uiautomator2 hands it over: text (bad bytes already replaced), not bytes.
    read_or_refuse(raw.decode("utf-8", "replace"))


@given(_DUMP, st.data())
def test_a_real_dump_cut_anywhere_is_read_or_refused_as_malformed(name: str, data: st.DataObject) -> None:
    raw = DUMPS[name]
    cut = raw[: data.draw(st.integers(0, len(raw)))]
    read_or_refuse(cut)


@given(_DUMP, st.data())
def test_a_real_dump_with_a_piece_repeated_or_dropped_reads_like_expat_or_is_refused(
    name: str, data: st.DataObject
) -> None:
    # Line-level damage keeps most documents well-formed: then the fast reader must still agree with expat.
    pieces = data.draw(chunkings(DUMPS[name].decode("utf-8")))
    at = data.draw(st.integers(0, len(pieces) - 1))
    if data.draw(st.booleans()):
        pieces.insert(at, pieces[at])
    else:
        del pieces[at]
    text = "".join(pieces)
    obs = read_or_refuse(text)
    try:
        slow = observation._observation(observation._expat_fields(text), "", "")
    except observation.expat.ExpatError:
        return
    assert obs is not None, "expat reads the document, so the reader must too"
    assert obs.text == slow.text


# Strings as a phone may hand them over: any code point, lone surrogates included (a text cut inside an emoji).
_ANY_CHAR = st.characters() | st.characters(categories=["Cs"])
_ATTR = st.text(_ANY_CHAR | st.sampled_from(list("&;<>\"'#x[]-,0123456789")), max_size=20)


@given(st.lists(st.tuples(_ATTR, _ATTR, _ATTR), min_size=1, max_size=4), st.booleans())
@example([("ab\ud83dc", "", "[0,0][1,1]")], False)  # half an emoji: the text must stay writable
@example([("x", "", "[0,0][1" + "9" * 5000 + ",1]")], False)  # more digits than int() reads
@example([("x", "", "[0,0][99999999999999999999,1]")], True)
def test_any_attribute_values_are_read_or_refused_as_malformed(
    values: list[tuple[str, str, str]], reordered: bool
) -> None:
    # Values are written raw (no escaping): whatever the phone's serializer let through.
    tags = []
    for text, desc, bounds in values:
        tag = node("T", desc="D", bounds="B", clickable=True)
        tag = tag.replace('text="T"', f'text="{text}"').replace('content-desc="D"', f'content-desc="{desc}"')
        tag = tag.replace('bounds="B"', f'bounds="{bounds}"')
        tags.append(tag.replace('<node index="0" ', "<node ") if reordered else tag)
    xml = hierarchy(*tags)
    read_or_refuse(xml)
    read_or_refuse(xml.encode("utf-8", "surrogatepass"))


@given(st.binary(max_size=200), st.sampled_from(["", _HEAD, "\ufeff" + _HEAD, _HEAD.replace("UTF-8", "TTF-8")]))
@example(b"\xff\xfe<\x00h\x00/\x00>\x00", "")  # UTF-16 with its BOM: expat reads it
@example(b"<hierarchy><node text='\xe9' bounds='[0,0][1,1]'/></hierarchy>", "")  # Latin-1 bytes, no declaration
@example(b"\xff", "<?xml version='1.0' encoding='TTF-8' ?>")  # an encoding no codec has (found by `make fuzz`)
@example(b"\xff", "<?xml version='1.0' encoding='gbk' ?>")  # a multi-byte one pyexpat cannot use
@example(b"<r/>", "<?xml version='1.0' encoding='rot13' ?>")  # a codec that is no text encoding
def test_any_bytes_are_read_or_refused_as_malformed(raw: bytes, head: str) -> None:
    read_or_refuse(head.encode("utf-8") + raw)


# --- entities: nothing expands, nothing is fetched --------------------------------------------------------


def _laughs(levels: int, width: int = 10) -> str:
    decls = "".join(f'<!ENTITY e{i} "{f"&e{i - 1};" * width}">' for i in range(1, levels + 1))
    return f'<!DOCTYPE hierarchy [<!ENTITY e0 "lol">{decls}]>'


def _doc_with(doctype: str, value: str, *, jar_layout: bool) -> str:
    tag = node("T", bounds="[0,0][100,50]", clickable=True).replace('text="T"', f'text="{value}"')
    if not jar_layout:
        tag = tag.replace('<node index="0" ', "<node ")  # another attribute order: read by expat
    return f'{_HEAD}{doctype}<hierarchy rotation="0">{tag}</hierarchy>'


@given(st.integers(1, 9), st.integers(1, 12), st.booleans())
@example(3, 10, False)  # 3 000 characters from 200: expat would expand them (its own limit stops only ~8 MiB)
@example(9, 10, False)  # the classic billion laughs
def test_internal_entities_are_never_expanded(levels: int, width: int, jar_layout: bool) -> None:
    xml = _doc_with(_laughs(levels, width), f"&e{levels};", jar_layout=jar_layout)
    t0 = time.perf_counter()
    obs = read_or_refuse(xml)
    assert time.perf_counter() - t0 < 5
    if obs is not None:
        assert all("lol" not in "".join(row) for row in obs.rows)


@pytest.mark.parametrize("jar_layout", [True, False])
@pytest.mark.parametrize("doctype", [
    '<!DOCTYPE hierarchy [<!ENTITY x SYSTEM "file:///etc/hostname">]>',
    '<!DOCTYPE hierarchy [<!ENTITY x SYSTEM "http://127.0.0.1:9/x">]>',
    '<!DOCTYPE hierarchy SYSTEM "http://127.0.0.1:9/x.dtd">',
    '<!DOCTYPE hierarchy [<!ENTITY % p SYSTEM "file:///etc/hostname"> %p;]>',
])
def test_external_entities_and_dtds_are_never_fetched(doctype: str, jar_layout: bool, monkeypatch: pytest.MonkeyPatch
                                                      ) -> None:
    import socket

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("the reader tried to fetch something")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    local = Path("/etc/hostname")
    secret = local.read_text(encoding="utf-8").strip() if local.is_file() else ""
    obs = read_or_refuse(_doc_with(doctype, "&x;", jar_layout=jar_layout))
    if obs is not None:
        assert all(row[0] == "&x;" for row in obs.rows), "the reference was expanded"
        assert not secret or all(secret not in "".join(row) for row in obs.rows)


def test_the_shared_data_is_there() -> None:
    # These property tests read real data from ../shared/data: without it they would prove nothing.
    assert DUMPS, f"{_DIR} is absent or empty: place ../shared/data beside the repository (CI provides it)"
