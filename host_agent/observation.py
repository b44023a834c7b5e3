"""Window hierarchy XML → compact text, one line per meaningful node: `[ref] Class "text" desc=… (id) flags`.

No tree is built: one regex pass reads every node written in the uiautomator jar's attribute layout,
and expat reads only what the regex cannot (other layouts, literal line breaks in values). A
1000-node dump converts in a few milliseconds, so reading the screen costs the device round trip,
not the harness. Both readers decode character references exactly once and give identical rows.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import NamedTuple
from xml.parsers import expat

from farm.scoring.visible import visible_texts

_BOUNDS = re.compile(r"\[(-?\d+),(-?\d+)\]\[(-?\d+),(-?\d+)\]")
MAX_TEXT = 300
"""Longest text kept per node (longer texts are cut with an ellipsis)."""


class UiNode(NamedTuple):
    """One meaningful node: what the agent can refer to by `ref` (a tuple: cheap to build by the thousand)."""

    ref: int
    cls: str
    text: str
    desc: str
    resource_id: str
    bounds: tuple[int, int, int, int]
    clickable: bool
    scrollable: bool
    editable: bool

    @property
    def center(self) -> tuple[int, int]:
        """Centre of the node's bounds (where a tap lands)."""
        left, top, right, bottom = self.bounds
        return (left + right) // 2, (top + bottom) // 2

    @property
    def short_id(self) -> str:
        """Resource id without the `package:id/` prefix."""
        return self.resource_id.rsplit(":id/", 1)[-1]


@dataclass
class Observation:
    """One read of the screen."""

    text: str
    """Compact text: a header line with the foreground app, then one line per node."""
    rows: list[tuple[str, ...]]
    """Fields of the listed nodes (values decoded), by ref order (ref = index + 1); `nodes` builds UiNodes."""
    package: str = ""
    """Foreground package."""
    activity: str = ""
    """Foreground activity."""
    screenshot: bytes | None = None
    """JPEG, when the policy takes images."""
    timings_ms: dict[str, float] = field(default_factory=dict)
    """How long each part of the read took (dump, foreground, convert, screenshot)."""

    _nodes: list[UiNode] | None = field(default=None, repr=False)

    @property
    def nodes(self) -> list[UiNode]:
        """Listed nodes by ref order, built on first use (most reads never need them all)."""
        if self._nodes is None:
            self._nodes = [_to_node(i, row) for i, row in enumerate(self.rows, 1)]
        return self._nodes

    @property
    def visible_texts(self) -> list[str]:
        """What a person sees (text and content-desc of the listed nodes), apart from classes, ids and flags.

        The one definition checks use (`farm.scoring.visible`), read back from `text`, so a stored
        transcript gives the same evidence as the live observation.
        """
        return visible_texts(self.text)

    @property
    def digest(self) -> str:
        """SHA-1 of the text: equal digests mean the same screen."""
        return hashlib.sha1(self.text.encode("utf-8")).hexdigest()

    def node(self, ref: int) -> UiNode | None:
        """The node with this ref, if any."""
        return self.nodes[ref - 1] if 1 <= ref <= len(self.rows) else None

    def find(self, *, text: str | None = None, resource_id: str | None = None, desc: str | None = None,
             contains: str | None = None) -> UiNode | None:
        """First node matching every given selector (exact text/desc, short or full id, substring)."""
        for n in self.nodes:
            if text is not None and n.text != text:
                continue
            if desc is not None and n.desc != desc:
                continue
            if resource_id is not None and resource_id not in (n.resource_id, n.short_id):
                continue
            if contains is not None and contains not in n.text and contains not in n.desc:
                continue
            return n
        return None


def _quote(value: str) -> str:
    flat = value if value.isprintable() and "  " not in value else " ".join(value.split())
    if len(flat) > MAX_TEXT:
        flat = flat[: MAX_TEXT - 1] + "…"
    return '"' + flat.replace('"', "'") + '"'


_Fields = tuple[str, ...]
"""One node: text, resource-id, class, package, content-desc, checkable, checked, clickable, enabled,
focused, scrollable, long-clickable, password, selected, visible-to-user, left, top, right, bottom."""

# A quoted attribute value in either quoting: libxml2-based tools rewrite a value holding `"` in single
# quotes (`text='say "hi"'`). The lookbehind picks the character class from the opening quote, so the
# value stays one group; possessive quantifiers leave no way to end a value at a quote inside it.
# Values with a literal tab or line break are left to expat, which turns them into spaces (XML
# attribute-value normalization, with CR LF counting as one). No value holds `<` (XML forbids it), so
# a match never reaches into the next tag.
_VALUE = r"""["']((?<=")[^"<\t\n\r]*+|(?<=')[^'<\t\n\r]*+)["']"""
_WORD = r"""["'](\w++)["']"""

# The jar writes attributes in one fixed order (protocol notes §B, "XML"); one C-level findall over
# the document then yields every node's fields in row order. uiautomator2 adds visible-to-user before
# bounds and drawing-order, hint, display-id after it; the attributes after bounds are not read, so a
# node with visible-to-user among them (up to the next `<`, which no value can hold) is left to expat.
_JAR_PATTERN = (
    rf"""<node (?:NAF=["']true["'] )?index=["'][^"'<>]*+["'] text={_VALUE} resource-id={_VALUE} """
    rf"class={_VALUE} package={_VALUE} content-desc={_VALUE} checkable={_WORD} checked={_WORD} "
    rf"""clickable={_WORD} enabled={_WORD} focusable=["']\w++["'] focused={_WORD} """
    rf"scrollable={_WORD} long-clickable={_WORD} password={_WORD} selected={_WORD}"
    rf"(?: visible-to-user={_WORD})? "
    r"""bounds=["']\[(-?[0-9]++),(-?[0-9]++)\]\[(-?[0-9]++),(-?[0-9]++)\]["'](?![^<]*visible-to-user=)"""
)
# Any other `<node` matches the bare second branch, so the n-th row is the n-th `<node` of the document
# and an all-empty row marks a node the pattern missed (cheaper than counting `<node` in the document).
_JAR_NODE = re.compile(rf"(?:{_JAR_PATTERN})|<node")
_MISSED = ("",) * _JAR_NODE.groups
# A whole start tag in any layout, its attributes in group 1: what a missed node hands to expat.
_NODE_TAG = re.compile(r"""<node((?:\s++[^\s=/>]++\s*+=\s*+(?:"[^"]*+"|'[^']*+'))*+)\s*+/?>""")

# XML's references: the five predefined entities and decimal / hexadecimal character references (leading
# zeros allowed; more significant digits than any character has are no reference and stay as written).
_REF = re.compile(r"&(?:#0*([0-9]{1,7})|#x0*([0-9a-fA-F]{1,6})|(lt|gt|amp|quot|apos));")
_ENTITY = {"lt": "<", "gt": ">", "amp": "&", "quot": '"', "apos": "'"}
_SURROGATE = re.compile("[\ud800-\udfff]")


def _ref_char(m: re.Match[str]) -> str:
    if m[3]:
        return _ENTITY[m[3]]
    code = int(m[1]) if m[1] else int(m[2], 16)
    if 0xD800 <= code <= 0xDFFF:
        return chr(code)  # half of a pair some serializers write for one emoji: joined in `_decode`
    if code in (0x9, 0xA, 0xD) or 0x20 <= code <= 0xFFFD or 0x10000 <= code <= 0x10FFFF:
        return chr(code)
    return "\ufffd"  # not an XML character (expat rejects the document): never let it into the text


def _decode(value: str) -> str:
    """Decode the references of one attribute value as written in the file (what expat does)."""
    if "&" not in value:
        return value
    out = _REF.sub(_ref_char, value)
    if _SURROGATE.search(out):
        # Pairs become the character they encode; a lone half becomes U+FFFD (text must stay encodable).
        out = _whole_chars(out)
    return out


def _decode_row(row: _Fields) -> _Fields:
    # Only the five string values can hold a reference: flags and bounds are words and digits.
    return (_decode(row[0]), _decode(row[1]), _decode(row[2]), _decode(row[3]), _decode(row[4]), *row[5:])


def _flags(clickable: str, long_click: str, scrollable: str, editable: bool, checkable: str, checked: str,
           selected: str, focused: str, enabled: str, password: str) -> str:
    return (
        (" click" if clickable == "true" else "")
        + (" long" if long_click == "true" else "")
        + (" scroll" if scrollable == "true" else "")
        + (" edit" if editable else "")
        + ((" checked" if checked == "true" else " unchecked") if checkable == "true" else "")
        + (" selected" if selected == "true" else "")
        + (" focused" if focused == "true" else "")
        + (" disabled" if enabled == "false" else "")
        + (" password" if password == "true" else "")
    )


# Classes, ids and flag combinations repeat across a screen and across reads: render each once.
_SHORT_CLASS: dict[str, str] = {}
_SHORT_ID: dict[str, str] = {}
_FLAGS: dict[tuple[str, ...], str] = {}
_CACHE_MAX = 20_000


def _rows_to_lines(rows: list[_Fields]) -> tuple[list[_Fields], list[str]]:
    """Keep the meaningful, visible, non-empty nodes and render one line each.

    One flat loop with string comparisons and cached pieces: this is the hot path of every screen read.
    """
    kept: list[_Fields] = []
    lines: list[str] = []
    short_class, short_id, flag_cache = _SHORT_CLASS, _SHORT_ID, _FLAGS
    for cache in (short_class, short_id, flag_cache):
        if len(cache) > _CACHE_MAX:  # apps with generated ids must not grow these forever
            cache.clear()
    for row in rows:
        (text, rid, cls, _pkg, desc, checkable, checked, clickable, enabled, focused, scrollable, long_click,
         password, selected, visible, left, top, right, bottom) = row
        if visible == "false" or left == right or top == bottom:
            continue
        if not (text or desc or clickable == "true" or scrollable == "true" or long_click == "true"
                or checkable == "true" or cls.endswith("EditText")):
            continue
        kept.append(row)
        short = short_class.get(cls)
        if short is None:
            short = short_class[cls] = _NOT_NAME.sub("_", cls.rsplit(".", 1)[-1]) or "View"
        line = f"[{len(kept)}] {short}"
        if text:
            line += ' "' + text + '"' if _plain(text) else " " + _quote(text)
        if desc and desc != text:
            line += ' desc="' + desc + '"' if _plain(desc) else " desc=" + _quote(desc)
        if rid:
            sid = short_id.get(rid)
            if sid is None:
                sid = short_id[rid] = f" ({_NOT_NAME.sub('_', rid.rsplit(':id/', 1)[-1])})"
            line += sid
        key = (cls, checkable, checked, clickable, enabled, focused, scrollable, long_click, password, selected)
        flags = flag_cache.get(key)
        if flags is None:
            flags = flag_cache[key] = _flags(clickable, long_click, scrollable, cls.endswith("EditText"), checkable,
                                             checked, selected, focused, enabled, password)
        lines.append(line + flags)
    return kept, lines


# A class or id is a name, never text: anything else in it (a line break, a quote, a space) would let the app
# under test write a line of its own into the transcript, which the checks read as what the screen showed.
_NOT_NAME = re.compile(r"[^\w.$:/-]")


def _plain(value: str) -> bool:
    # Exactly the values `_quote` would leave unchanged (no quote, printable, no double space, short).
    return '"' not in value and len(value) <= MAX_TEXT and value.isprintable() and "  " not in value


_COORD_MAX = 2**31 - 1


def _coord(digits: str) -> int:
    # Bounds are Java ints: a longer number is no coordinate (and past 4300 digits `int()` refuses it), so it
    # is pinned to the int range instead.
    if len(digits) <= 11:
        return int(digits)
    return -_COORD_MAX - 1 if digits.startswith("-") else _COORD_MAX


def _to_node(ref: int, row: _Fields) -> UiNode:
    (text, rid, cls, _pkg, desc, _ck, _cd, clickable, _en, _fo, scrollable, *_rest) = row
    box = (_coord(row[15]), _coord(row[16]), _coord(row[17]), _coord(row[18]))
    return UiNode(ref, cls, text, desc, rid, box, clickable == "true", scrollable == "true", cls.endswith("EditText"))


_KEYS = ("text", "resource-id", "class", "package", "content-desc", "checkable", "checked", "clickable", "enabled",
         "focused", "scrollable", "long-clickable", "password", "selected", "visible-to-user")


def _expat_fields(xml: str | bytes) -> list[_Fields]:
    """Every node's fields, read by expat (any attribute order, quoting and spacing; decodes values)."""
    rows: list[_Fields] = []

    def start(name: str, a: dict[str, str]) -> None:
        if name != "node":
            return
        m = _BOUNDS.match(a.get("bounds", ""))
        box = (m[1], m[2], m[3], m[4]) if m else ("0", "0", "0", "0")
        rows.append((*(a.get(k, "") for k in _KEYS), *box))

    parser = expat.ParserCreate()
    parser.StartElementHandler = start
    # A dump declares no entities. One that does is refused before any reference to it is expanded (expat's
    # own amplification limit only stops past megabytes); external ones are never fetched either way.
    parser.EntityDeclHandler = _refuse_entity
    parser.Parse(xml, True)
    return rows


def _refuse_entity(name: str, *_args: object) -> None:
    raise expat.ExpatError(f"entity declaration {name!r} refused: a hierarchy dump declares none")


def _decoded(rows: list[_Fields], text: str) -> list[_Fields]:
    if "&" not in text:  # most screens have no reference at all: one scan of the document spares the loop
        return rows
    return [_decode_row(r) if "&" in r[0] or "&" in r[4] or "&" in r[1] or "&" in r[2] or "&" in r[3] else r
            for r in rows]


def _regex_fields(text: str) -> list[_Fields] | None:
    """Every node's fields when the jar pattern reads all of them (the usual dump), else None."""
    rows: list[_Fields] = _JAR_NODE.findall(text)
    return None if _MISSED in rows else _decoded(rows, text)


def _mixed_fields(text: str, rows: list[_Fields] | None = None) -> list[_Fields] | None:
    """Every node's fields: the jar pattern's rows (`rows` when already found), expat for the nodes it missed.

    None when a missed `<node` is no start tag that can be cut out (the whole document then goes to expat).
    """
    if rows is None:
        rows = _JAR_NODE.findall(text)
    missed = [i for i, row in enumerate(rows) if not row[15]]  # bounds are never empty in a read row
    tags: list[str] = []
    at, seen = -1, -1
    for i in missed:
        while seen < i:  # the i-th `<node` of the document
            at, seen = text.find("<node", at + 1), seen + 1
        tag = _NODE_TAG.match(text, at)
        if tag is None:
            return None
        tags.append(f"<node{tag[1]}/>")
    out = list(_decoded(rows, text))  # a copy: the caller's rows stay as found
    # One parser for all the missed tags, each made an empty element of one small document.
    for i, row in zip(missed, _expat_fields(f"<r>{''.join(tags)}</r>"), strict=True):
        out[i] = row
    return out


def _fields(xml: str | bytes) -> list[_Fields]:
    if isinstance(xml, bytes):
        try:
            text = xml.decode("utf-8")
        except UnicodeDecodeError:
            # Not UTF-8: expat reads a document that declares (or BOM-marks) its encoding, else refuses it.
            try:
                return _expat_fields(xml)
            except (LookupError, ValueError) as exc:
                # pyexpat looks a declared encoding up among Python's codecs: an unknown, multi-byte or binary
                # one fails there, and that document is as unreadable as a malformed one.
                raise expat.ExpatError(f"unreadable encoding: {exc}") from None
    else:
        text = xml
    rows: list[_Fields] = _JAR_NODE.findall(text)
    if _MISSED not in rows:
        return _decoded(rows, text)
    # Nodes in another layout go to expat alone; past about half the nodes, one expat pass over the
    # document costs less than cutting out every tag (bench/bench_observation.py measures both).
    try:
        mixed = _mixed_fields(text, rows) if rows.count(_MISSED) * 2 <= len(rows) else None
        # The decoded text, not the bytes: both readers then read the same characters, and a declared encoding
        # (which pyexpat would look up among Python's codecs) cannot contradict the UTF-8 already decoded.
        return _expat_fields(text) if mixed is None else mixed
    except UnicodeEncodeError:
        # expat takes text as UTF-8, which a lone surrogate (see `_whole_chars`) is not: read it mended.
        return _fields(_whole_chars(text))


def _whole_chars(text: str) -> str:
    """`text` with surrogate pairs joined and each lone half replaced by U+FFFD (as a reference to one reads)."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _mended(rows: list[_Fields]) -> list[_Fields]:
    """The rows with `_whole_chars` applied to their values (flags and bounds hold no surrogate)."""
    return [(*map(_whole_chars, row[:5]), *row[5:]) for row in rows]


def hierarchy_rows(xml: str | bytes) -> tuple[list[_Fields], list[str], str]:
    """Parse a uiautomator dump: (meaningful node rows, their text lines, package of the first node)."""
    rows = _fields(xml)
    kept, lines = _rows_to_lines(rows)
    return kept, lines, rows[0][3] if rows else ""


def _observation(rows: list[_Fields], package: str, activity: str) -> Observation:
    kept, lines = _rows_to_lines(rows)
    package = package or (rows[0][3] if rows else "")
    header = f"app: {package}/{activity}" if activity else f"app: {package}"
    text = "\n".join([header, *lines])
    if _SURROGATE.search(text):
        # A text dump (uiautomator2 hands over a decoded JSON string) can hold half a surrogate pair as a code
        # point, where an app cut a text inside an emoji: mended as for a reference to one, so the text stays
        # encodable for the digest and the transcript. Only the listed text is searched: this is the hot path.
        return _observation(_mended(rows), _whole_chars(package), _whole_chars(activity))
    return Observation(text=text, rows=kept, package=package, activity=activity)


def observe_xml(xml: str | bytes, *, package: str = "", activity: str = "") -> Observation:
    """Build an observation from a hierarchy dump and the foreground app."""
    return _observation(_fields(xml), package, activity)
