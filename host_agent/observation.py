"""Window hierarchy XML → compact text, one line per meaningful node: `[ref] Class "text" desc=… (id) flags`.

No tree is built: one regex pass reads every node written in the uiautomator jar's attribute layout, a
pattern compiled for another serializer's attribute order reads a dump written in that order in one pass
too, and expat reads only what neither can (yet other layouts, literal line breaks in values) and every
document that is not a plain dump (markup other than tags, not ending with `</hierarchy>`), refusing the
malformed ones. A 1000-node dump converts in a few milliseconds in any of these layouts, so reading the
screen costs the device round trip, not the harness. Every reader decodes character references exactly
once (all of a screen's at once) and, on any document expat reads, gives the rows expat gives.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from operator import add, itemgetter
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
# A flag (`true`, `false`), like the index and the bounds, holds no `"`: every serializer writes it in double
# quotes, and only such a one is read here (a quote that does not match its opening one is no XML).
_WORD = r'"(\w++)"'
# After bounds, up to the tag's end: name="value" pairs (no `<` in a value, no visible-to-user, which is read) and
# `>` or `/>`. So a value cannot hide a tag from the pattern, nor a broken tag pass for a node.
_NAME = r"[A-Za-z_:][A-Za-z0-9_:.-]*+"
_ANY_VALUE = r"""(?:"[^"<]*+"|'[^'<]*+')"""
_TAIL = rf"(?=(?:[ \t\r\n]++(?!visible-to-user=){_NAME}={_ANY_VALUE})*+[ \t\r\n]*+/?>)"

# The jar writes attributes in one fixed order (protocol notes §B, "XML"); one C-level findall over
# the document then yields every node's fields in row order. uiautomator2 adds visible-to-user before
# bounds and drawing-order, hint, display-id after it; the attributes after bounds are not read, so a
# node with visible-to-user among them is left to another reader.
_JAR_PATTERN = (
    rf"""<node (?:NAF="true" )?index="[^"<]*+" text={_VALUE} resource-id={_VALUE} """
    rf"class={_VALUE} package={_VALUE} content-desc={_VALUE} checkable={_WORD} checked={_WORD} "
    rf"""clickable={_WORD} enabled={_WORD} focusable="\w++" focused={_WORD} """
    rf"scrollable={_WORD} long-clickable={_WORD} password={_WORD} selected={_WORD}"
    rf"(?: visible-to-user={_WORD})? "
    rf"""bounds="\[(-?[0-9]++),(-?[0-9]++)\]\[(-?[0-9]++),(-?[0-9]++)\]"{_TAIL}"""
)
# Any other `<node` matches the bare second branch, so the n-th row is the n-th `<node` of the document
# and an all-empty row marks a node the pattern missed (cheaper than counting `<node` in the document).
# `<!` and `<?` (a comment, CDATA, DOCTYPE, processing instruction; read from after the XML declaration) make an
# all-empty row too: they send the document to the slow path, where `_tags_only` hands it to expat.
_JAR_NODE = re.compile(rf"(?:{_JAR_PATTERN})|<node|<[!?]")
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


# The same references as `_REF`, whole, for `split`: the pieces between them are text, the references themselves
# are looked up in a table (C-level calls only, however many references a screen holds).
_REF_SPLIT = re.compile(r"(&(?:#0*[0-9]{1,7}|#x0*[0-9a-fA-F]{1,6}|lt|gt|amp|quot|apos);)")


class _RefChars(dict[str, str]):
    """A reference as written → what it decodes to (`_ref_char`), worked out on first sight."""

    def __missing__(self, ref: str) -> str:
        if len(self) > _CACHE_MAX:  # references made of digits are many: keep the table bounded
            self.clear()
        match = _REF.fullmatch(ref)
        assert match is not None  # `_REF_SPLIT` only hands over what `_REF` matches whole
        char = self[ref] = _ref_char(match)
        return char


_REF_CHARS = _RefChars()


def _decode_joined(joined: str) -> list[str]:
    """`_decode` of every value of `joined` (values joined with `<`), in one pass over all of them: a screen full
    of references costs a few C calls, never one Python call per reference.

    The values come from the regex, so none holds `<` (XML forbids it in a value): they are split back apart after
    decoding, unless a reference decoded to `<` or to half a surrogate pair (then value by value).
    """
    pieces = _REF_SPLIT.split(joined)
    pieces[1::2] = map(_REF_CHARS.__getitem__, pieces[1::2])
    decoded = "".join(pieces)
    out = decoded.split("<")
    if len(out) != joined.count("<") + 1 or _SURROGATE.search(decoded):
        return [_decode(value) for value in joined.split("<")]
    return out


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
    """The rows with references decoded (rows of the regex readers: values as written), column by column."""
    if "&" not in text or not rows:  # most screens have no reference at all: one scan of the document spares the rest
        return rows
    # Only the five string values can hold a reference: flags and bounds are words and digits.
    columns: list[Iterable[str]] = []
    for value in _STRING_VALUES:
        joined = "<".join(map(value, rows))
        columns.append(_decode_joined(joined) if "&" in joined else map(value, rows))
    return list(map(add, zip(*columns, strict=True), map(_NOT_STRINGS, rows)))


_STRING_VALUES = tuple(itemgetter(k) for k in range(5))
_NOT_STRINGS = itemgetter(slice(5, None))


# --- what the regex readers may read --------------------------------------------------------------
# Only tags and the XML declaration: a comment, CDATA section, DOCTYPE or processing instruction can hold text that
# looks like a `<node` tag and is none (expat skips it, a regex would not). Such a document goes to expat whole.
# The declaration holds no `<`, so no tag either (a `<?xml-…?>` instruction in its place is as harmless).
# A document that does not end with `</hierarchy>` (a dump cut short, another root) goes to expat as well, which
# refuses the first and reads the second: the regex readers never make a screen out of part of a dump.
_DECLARATION = re.compile(r"\ufeff?<\?xml[^<>?]*+\?>")
_MARKUP = re.compile(r"<[!?]")
_END = "</hierarchy>"


def _after_declaration(text: str) -> int:
    declaration = _DECLARATION.match(text)
    return 0 if declaration is None else declaration.end()


def _ends_whole(text: str) -> bool:
    """True when the document ends with the root's end tag (and XML white space)."""
    return text.endswith(_END) or text.rstrip(" \t\r\n").endswith(_END)


def _tags_only(text: str) -> bool:
    """True when the document holds no markup but tags, apart from an XML declaration at its start, and ends
    whole."""
    if not _ends_whole(text):
        return False
    start = _after_declaration(text)
    if text.find("!", start) == -1 and text.find("?", start) == -1:  # one memchr each: the usual screen
        return True
    return _MARKUP.search(text, start) is None


class _Reader(NamedTuple):
    """A pattern that reads the nodes written in one layout, in one C-level pass over the document."""

    node: re.Pattern[str]
    """One match per `<node` (and per `<!`, `<?`): the node's fields when it is written in this layout, else empty
    groups. So the n-th row is the n-th node, and an all-empty row (`_MISSED`) one this reader missed."""
    fields: Callable[[tuple[str, ...]], _Fields] | None
    """The groups of a match → `_Fields` (None when they already are)."""


_JAR = _Reader(_JAR_NODE, None)


def _rows(reader: _Reader, text: str) -> list[_Fields]:
    """Every node's row by this reader (`_MISSED` where it cannot read the node), from after the declaration."""
    found: list[_Fields] = reader.node.findall(text, _after_declaration(text))
    return found if reader.fields is None else list(map(reader.fields, found))


def _row_at(reader: _Reader, text: str, at: int) -> _Fields:
    """The row of the node at `at` by this reader."""
    match = reader.node.match(text, at)
    groups: _Fields = _MISSED if match is None else match.groups("")  # unmatched groups read "", as in `findall`
    return groups if reader.fields is None else reader.fields(groups)


def _jar_rows(text: str) -> list[_Fields]:
    """Every node's row by the jar pattern."""
    return _rows(_JAR, text)


# --- nodes in another attribute order ---------------------------------------------------------------
# Other serializers (a DOM writer, a tool that sorts attributes or moves `index` last) write the jar's attributes in
# an order of their own, the same for every node. The first node the jar pattern missed shows that order; a
# pattern built for it reads every node written so in one more C-level pass. In it an attribute comes once at
# most, in that order, and the tag is read to its `>`, so a node it reads has exactly the attributes it names
# (an attribute the node lacks reads empty, as expat reads it). The pattern learns from the nodes it missed:
# attributes only some nodes have (`NAF`, uiautomator2's extras, which the root lacks) become optional, and the
# next read of such a screen takes one pass. Anything else (yet another order, a literal line break in a value,
# other spacing or quoting) is left to expat, node by node.
_WS = r"[ \t\r\n]++"
_BOX = r"""(?P<q>["'])\[(-?[0-9]++),(-?[0-9]++)\]\[(-?[0-9]++),(-?[0-9]++)\](?P=q)"""  # the quote's group is not read
# A start tag whose attributes a pattern for their order can read: name=value pairs, no spaces around `=`.
_PLAIN_TAG = re.compile(rf"<node((?:{_WS}{_NAME}={_ANY_VALUE})*+)[ \t\r\n]*+/?>")
_ATTR_NAME = re.compile(rf"""({_NAME})=(?=(["'])){_ANY_VALUE}""")  # an attribute's name and its quote
_SINGLE_SPACED = re.compile(rf"(?: {_NAME}={_ANY_VALUE})*+")
_STRING_KEYS = frozenset(_KEYS[:5])
_FLAG_KEYS = frozenset(_KEYS[5:])
_FEW = 8
"""Up to this many nodes in another layout are cut out for expat rather than read by a pattern for their shape."""
_MOST_NAMES = 64
"""A tag with more attributes than this is no node any serializer writes: no pattern is compiled for it."""


class _Shape(NamedTuple):
    """How a serializer writes a node: its attributes' order, what separates them, how it quotes a flag."""

    names: tuple[str, ...]
    optional: frozenset[str]
    """Names some nodes lack (`NAF` always is)."""
    spacing: str
    """`" "` when every attribute follows one space (the pattern then matches it literally, which is faster)."""
    quote: str
    """The quote around flag values (`true`, `false`): one of them, so a flag's two quotes always match."""


_LAYOUTS: dict[_Shape, _Reader | None] = {}
_UNSEEN = _Reader(re.compile("<node"), None)
_LEARNED: dict[_Shape, _Shape] = {}
"""The shape of the first node in another layout → the shape its document turned out to follow."""


def _layout(shape: _Shape) -> _Reader | None:
    """The reader of nodes written in this shape (None when the shape cannot describe a node)."""
    known = _LAYOUTS.get(shape, _UNSEEN)  # one lookup: another thread may clear the table in between
    if known is not _UNSEEN:
        return known
    if len(_LAYOUTS) > 64:  # each shape costs a compile (milliseconds): a device's serializer writes one or two
        _LAYOUTS.clear()
    names = shape.names
    readable = "bounds" in names and len(set(names)) == len(names) <= _MOST_NAMES
    layout = _LAYOUTS[shape] = _build_layout(shape) if readable else None
    return layout


def _build_layout(shape: _Shape) -> _Reader:
    ws, q = shape.spacing, shape.quote
    flag = f"{q}(\\w++){q}"
    parts = ["<node"] if "NAF" in shape.names else [rf"<node(?:{_WS}NAF={_ANY_VALUE})?+"]  # the jar writes NAF first
    group: dict[str, int] = {}  # attribute → index of its first read group in a match's groups
    groups = 0
    for name in shape.names:
        value = _VALUE if name in _STRING_KEYS else flag if name in _FLAG_KEYS else _BOX if name == "bounds" else (
            _ANY_VALUE)
        if value is _BOX:
            group[name], groups = groups + 1, groups + 5
        elif value is not _ANY_VALUE:
            group[name], groups = groups, groups + 1
        # Possessive: skipping an attribute that was read can never lead to a match, so never try it.
        optional = "?+" if name in shape.optional or name == "NAF" else ""
        parts.append(f"(?:{ws}{re.escape(name)}={value}){optional}")
    parts.append(r"[ \t\r\n]*+/?>()")  # the last group is always empty: what an absent attribute reads as
    box = group["bounds"]
    order = [group.get(key, groups) for key in _KEYS] + [box, box + 1, box + 2, box + 3]
    return _Reader(re.compile(f"(?:{''.join(parts)})|<node|<[!?]"), itemgetter(*order))


def _shape_at(text: str, at: int) -> _Shape | None:
    """The shape of the tag at `at` (None when that tag is not plainly written)."""
    tag = _PLAIN_TAG.match(text, at)
    if tag is None:
        return None
    attrs = _ATTR_NAME.findall(tag[1])
    quote = next((q for name, q in attrs if name in _FLAG_KEYS), '"')
    spacing = " " if _SINGLE_SPACED.fullmatch(tag[1]) else _WS
    return _Shape(tuple(name for name, _ in attrs), frozenset(), spacing, quote)


def _merged(first: _Shape, other: _Shape) -> _Shape | None:
    """One shape that reads the nodes of both (`first` with the names only `other` has, optional), or None when
    their orders or quotes disagree."""
    a, b = first.names, other.names
    shared = [name for name in a if name in b]
    if shared != [name for name in b if name in a] or first.quote != other.quote:
        return None
    names: list[str] = []
    i = j = 0
    for name in shared:
        at_a, at_b = a.index(name, i), b.index(name, j)
        names += [*a[i:at_a], *b[j:at_b], name]
        i, j = at_a + 1, at_b + 1
    optional = first.optional | other.optional | set(a).symmetric_difference(b)
    spacing = first.spacing if first.spacing == other.spacing else _WS
    return _Shape((*names, *a[i:], *b[j:]), optional, spacing, first.quote)


def _first_reader(text: str) -> _Reader:
    """The jar's reader, unless the jar pattern reads neither the first nor the last node and the first node is in a
    shape a document read before turned out to follow: then the reader for that shape (one pass, not two)."""
    start = _after_declaration(text)
    at = text.find("<node", start)
    if at == -1 or not _LEARNED or _jar_reads(text, at) or _jar_reads(text, text.rfind("<node")):
        return _JAR
    shape = _shape_at(text, at)
    learned = None if shape is None else _LEARNED.get(shape)
    return (_layout(learned) if learned else None) or _JAR


def _jar_reads(text: str, at: int) -> bool:
    match = _JAR_NODE.match(text, at)
    return match is not None and match.end() > at + 5  # not the bare `<node` branch


def _apply(reader: _Reader, text: str, out: list[_Fields], missed: list[int], starts: list[int]) -> list[int]:
    """Read the missed nodes (`out[i]` for i in `missed`) with `reader`; the ones it missed too."""
    if len(missed) * 4 < len(out):  # a few nodes: match them where they are
        for i in missed:
            out[i] = _row_at(reader, text, _node_start(text, starts, i))
    else:  # most of them: one pass
        found = _rows(reader, text)
        if len(found) != len(out):
            return missed
        if len(missed) == len(out):
            out[:] = found
        else:
            for i in missed:
                out[i] = found[i]
    return [i for i in missed if not out[i][15]]  # bounds are never empty in a read row


def _read_other_shapes(text: str, out: list[_Fields], missed: list[int], starts: list[int]) -> list[int]:
    """Read the missed nodes by patterns for their shape; the ones still missed. Each round reads what one shape
    covers, then merges in the shape of the first node still missed (three rounds at most)."""
    first = _shape_at(text, _node_start(text, starts, missed[0]))
    if first is None:
        return missed
    shape = _LEARNED.get(first, first)
    before = len(missed)
    for _ in range(3):
        layout = _layout(shape)
        if layout is None:
            return missed
        missed = _apply(layout, text, out, missed, starts)
        if not missed:
            break
        more = _shape_at(text, _node_start(text, starts, missed[0]))
        fuller = None if more is None else _merged(shape, more)
        if fuller is None or fuller == shape:
            break
        shape = fuller
    if len(missed) < before:  # the next read of such a screen starts with this shape
        if len(_LEARNED) > 64:
            _LEARNED.clear()
        _LEARNED[first] = shape
    return missed


def _regex_fields(text: str) -> list[_Fields] | None:
    """Every node's fields when the jar pattern reads all of them (the usual dump), else None."""
    rows = _jar_rows(text)
    return None if _MISSED in rows or not _ends_whole(text) else _decoded(rows, text)


def _mixed_fields(text: str, rows: list[_Fields] | None = None, reader: _Reader = _JAR, *,
                  most: int | None = None) -> list[_Fields] | None:
    """Every node's fields: `reader`'s rows (`rows` when already found), the nodes it missed read by the jar
    pattern or, when they are many, by a pattern for their shape, expat for the rest (each tag cut out).

    None when the document holds markup other than tags, or more than `most` nodes would go to expat, or one of
    them is no start tag that can be cut out (the whole document then goes to expat).
    """
    if not _tags_only(text):
        return None
    if rows is None:
        rows = _rows(reader, text)
    out = list(rows)  # a copy: the caller's rows stay as found
    missed = [i for i, row in enumerate(rows) if not row[15]]  # bounds are never empty in a read row
    starts: list[int] = []  # where the first `<node`s of the document start, as far as needed
    if missed and reader is not _JAR:
        missed = _apply(_JAR, text, out, missed, starts)
    if len(missed) > _FEW:
        missed = _read_other_shapes(text, out, missed, starts)
    if most is not None and len(missed) > most:
        return None
    tags: list[str] = []
    for i in missed:
        tag = _NODE_TAG.match(text, _node_start(text, starts, i))
        if tag is None:
            return None
        tags.append(f"<node{tag[1]}/>")
    out = _decoded(out, text)  # the rows read by a pattern: values as written (expat's rows come decoded)
    if tags:  # one parser for all the missed tags, each made an empty element of one small document
        for i, row in zip(missed, _expat_fields(f"<r>{''.join(tags)}</r>"), strict=True):
            out[i] = row
    return out


def _node_start(text: str, starts: list[int], i: int) -> int:
    """Where the i-th `<node` of the document starts; `starts` keeps the ones found so far."""
    while len(starts) <= i:
        starts.append(text.find("<node", starts[-1] + 1 if starts else 0))
    return starts[i]


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
    reader = _first_reader(text)
    rows = _rows(reader, text)
    if _MISSED not in rows and _ends_whole(text):  # `<!`, `<?` make a missed row: a plain dump
        return _decoded(rows, text)
    # Nodes in another layout are read by a pattern for their shape, or go to expat alone; past about half the
    # nodes, one expat pass over the document costs less than cutting out every tag (bench/bench_observation.py).
    try:
        mixed = _mixed_fields(text, rows, reader, most=len(rows) // 2)
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
