"""The real dumps in the layouts other serializers and devices write them — character references in the texts,
attributes in another order, siblings in another order, other quoting and spacing — read by `observe_xml` exactly
as ElementTree reads them, and without expat when the layout is one a serializer writes (one attribute order for
the whole document, references anywhere): the fast path, not a fallback.

Seeds are the real dumps in ../shared/data/dumps (third-party captures, read in place; see its README.md).
"""

from __future__ import annotations

import random
import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from functools import cache
from unittest import mock

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from host_agent import observation
from host_agent.observation import Observation, observe_xml
from tests.helpers.shared_data import SHARED_DATA, shared_data

# --- the reference reader: ElementTree ----------------------------------------------------------------------

KEYS = ("text", "resource-id", "class", "package", "content-desc", "checkable", "checked", "clickable", "enabled",
        "focused", "scrollable", "long-clickable", "password", "selected", "visible-to-user")
"""The attributes an observation row holds, in row order (then the four bounds)."""
_BOUNDS = re.compile(r"\[(-?\d+),(-?\d+)\]\[(-?\d+),(-?\d+)\]")


def elementtree_rows(xml: str) -> list[tuple[str, ...]]:
    """Every `node` element's row as ElementTree reads it (an absent attribute is empty, bounds that do not parse
    are 0,0,0,0)."""
    rows = []
    for element in ET.fromstring(xml).iter("node"):
        box = _BOUNDS.match(element.get("bounds", ""))
        rows.append((*(element.get(key, "") for key in KEYS), *(box.groups() if box else ("0",) * 4)))
    return rows


def elementtree_path(xml: str) -> Observation:
    return observation._observation(elementtree_rows(xml), "", "")


def assert_reads_as_elementtree(xml: str) -> Observation:
    want = elementtree_path(xml)
    for given_as in (xml, xml.encode("utf-8")):
        got = observe_xml(given_as)
        assert got.text == want.text
        assert got.rows == want.rows
    return want


def no_expat() -> AbstractContextManager[object]:
    """Within it, any call of expat fails the test: the document must be read by the regex readers alone."""
    return mock.patch.object(observation, "_expat_fields", side_effect=AssertionError("expat was asked to read"))


# --- real dumps as a tree of tags, rewritten the ways serializers write them ------------------------------------

@dataclass
class Node:
    attrs: list[tuple[str, str]]
    """(name, value as written, its quotes and references included), in the order written."""
    children: list[Node] = field(default_factory=list)


@dataclass(frozen=True)
class Dump:
    head: str
    """Everything before the first node: the XML declaration, `<hierarchy …>`."""
    roots: tuple[Node, ...]
    tail: str
    """`</hierarchy>` and what follows it."""


_TAG = re.compile(r"""<node((?:\s+[^\s=/>]+=(?:"[^"]*"|'[^']*'))*)\s*(/?)>|</node>""")
_ATTR = re.compile(r"""([^\s=/>]+)=("[^"]*"|'[^']*')""")


@cache
def real_dump(name: str) -> Dump:
    text = shared_data("dumps", name).read_text(encoding="utf-8")
    first, last = text.index("<node"), text.rindex("</hierarchy>")
    top = Node([])
    stack = [top]
    for tag in _TAG.finditer(text, first, last):
        if tag[0] == "</node>":
            stack.pop()
            continue
        node = Node(_ATTR.findall(tag[1]))
        stack[-1].children.append(node)
        if not tag[2]:
            stack.append(node)
    assert len(stack) == 1, f"{name}: unbalanced node tags"
    return Dump(text[:first], tuple(top.children), text[last:])


def _walk(nodes: list[Node] | tuple[Node, ...]) -> Iterator[Node]:
    for node in nodes:
        yield node
        yield from _walk(node.children)


_REF_OR_CHAR = re.compile(r"&[^;&]*;|[\s\S]")
_NAMED = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;"}
_SAME_CHAR = {"&amp;": "&#38;", "&lt;": "&#x3C;", "&gt;": "&#062;", "&quot;": "&#x22;", "&apos;": "&#39;"}


def with_references(raw: str, rnd: random.Random, rate: float) -> str:
    """The value with about `rate` of its characters written as references (named, decimal, hexadecimal, with
    leading zeros), and its named references as numeric ones: the same text once decoded."""
    out = []
    for token in _REF_OR_CHAR.findall(raw[1:-1]):
        if rnd.random() >= rate:
            out.append(token)
        elif len(token) > 1:
            out.append(_SAME_CHAR.get(token, token))
        elif token in "\t\n\r":
            out.append(token)  # a literal break reads as a space, a reference to one as the break itself
        else:
            code, how = ord(token), rnd.randrange(4)
            out.append(_NAMED[token] if how == 0 and token in _NAMED else f"&#{code};" if how == 1
                       else f"&#x{code:X};" if how == 2 else f"&#x{code:05x};")
    return raw[0] + "".join(out) + raw[-1]


def requoted(raw: str, how: str) -> str:
    """libxml2 writes a value holding `"` in single quotes; some tools quote every value so."""
    inner = raw[1:-1]
    if raw[0] == "'" or "'" in inner or how == "as written":
        return raw
    if how == "single" or "&quot;" in inner:
        return "'" + inner.replace("&quot;", '"') + "'"
    return raw


ORDERS = ("jar", "index last", "one order", "one order, some nodes", "each node its own")
SERIALIZER_ORDERS = ORDERS[:3]
"""Orders a serializer writes: the same for every node of a document."""
QUOTES = ("as written", "single where it holds a quote", "single")


@dataclass(frozen=True)
class Variant:
    """A real dump rewritten: its attributes in another order, references in its texts, siblings in another
    order, other quoting and spacing. Every choice below is one a serializer makes; the nodes stay the same."""

    dump: str
    seed: int = 0
    order: str = "jar"
    references: float = 0.0
    """About this share of the characters of texts and descriptions written as references."""
    shuffled: bool = False
    """The children of every node in another order (the top-level windows keep theirs: the first names the app)."""
    quotes: str = "as written"
    separator: str = " "
    indent: str | None = None

    def xml(self) -> str:
        dump = real_dump(self.dump)
        rnd = random.Random(self.seed)
        names = sorted({name for node in _walk(dump.roots) for name, _ in node.attrs})
        rnd.shuffle(names)
        rank = {name: i for i, name in enumerate(names)}
        siblings = random.Random(self.seed + 1)  # its own stream: shuffling changes no other choice

        def rewrite(node: Node) -> Node:
            attrs = [(name, requoted(value, self.quotes)) for name, value in node.attrs]
            if self.references:
                attrs = [(name, with_references(value, rnd, self.references))
                         if name in ("text", "content-desc") else (name, value) for name, value in attrs]
            if self.order == "index last":
                attrs.sort(key=lambda attr: attr[0] == "index")
            elif self.order == "one order" or (self.order == "one order, some nodes" and rnd.random() < 0.5):
                attrs.sort(key=lambda attr: rank[attr[0]])
            elif self.order == "each node its own":
                rnd.shuffle(attrs)
            children = [rewrite(child) for child in node.children]
            if self.shuffled:
                siblings.shuffle(children)
            return Node(attrs, children)

        out = [dump.head]

        def emit(node: Node, depth: int) -> None:
            pad = "" if self.indent is None else "\n" + self.indent * depth
            attrs = self.separator.join(f"{name}={value}" for name, value in node.attrs)
            if not node.children:
                out.append(f"{pad}<node {attrs} />")
                return
            out.append(f"{pad}<node {attrs}>")
            for child in node.children:
                emit(child, depth + 1)
            out.append(f"{pad}</node>")

        for root in dump.roots:
            emit(rewrite(root), 1)
        out.append(("" if self.indent is None else "\n") + dump.tail)
        return "".join(out)


_DIR = SHARED_DATA / "dumps"
DUMP_NAMES = sorted(p.name for p in _DIR.glob("*.xml")) if _DIR.is_dir() else []
# Without the data one placeholder runs, and `shared_data` fails it with the reason (a test that cannot read its
# data proves nothing, so it never passes).
_NAMES = DUMP_NAMES or ["(no dumps)"]
_REFERENCES = st.sampled_from((0.0, 0.02, 0.3, 1.0))
_SEPARATORS = st.sampled_from((" ", "\n    ", "  ", "\r\n\t"))
_INDENTS = st.sampled_from((None, "  ", "\t"))


def variants(orders: tuple[str, ...] = ORDERS) -> st.SearchStrategy[Variant]:
    return st.builds(Variant, dump=st.sampled_from(_NAMES), seed=st.integers(0, 2**32 - 1),
                     order=st.sampled_from(orders), references=_REFERENCES, shuffled=st.booleans(),
                     quotes=st.sampled_from(QUOTES), separator=_SEPARATORS, indent=_INDENTS)


def _cold() -> None:
    """Forget the shapes learned from earlier documents: the first read of a device's dumps."""
    observation._LAYOUTS.clear()
    observation._LEARNED.clear()


# --- each real dump as captured ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", _NAMES)
def test_each_real_dump_reads_as_elementtree_reads_it_without_expat(name: str) -> None:
    raw = shared_data("dumps", name).read_bytes()
    with no_expat():
        assert_reads_as_elementtree(raw.decode("utf-8"))


@pytest.mark.parametrize("name", _NAMES)
def test_each_real_dump_rewritten_unchanged_reads_as_the_capture(name: str) -> None:
    # The rewriting below keeps the nodes: written back as they were, a dump shows the very same screen.
    capture = observe_xml(shared_data("dumps", name).read_bytes())
    rewritten = observe_xml(Variant(name).xml())
    assert (rewritten.text, rewritten.rows) == (capture.text, capture.rows)


# --- real dumps in other layouts --------------------------------------------------------------------------------

@given(variants())
@example(Variant(_NAMES[0], order="each node its own", references=1.0, shuffled=True, quotes="single"))
@example(Variant(_NAMES[0], order="one order, some nodes", references=0.3, separator="  "))
def test_a_real_dump_in_another_layout_reads_as_elementtree_reads_it(variant: Variant) -> None:
    xml = variant.xml()
    _cold()
    want = assert_reads_as_elementtree(xml)  # the first read of such a dump, and the next ones
    assert observe_xml(xml).text == want.text


@given(variants(SERIALIZER_ORDERS))
@example(Variant(_NAMES[0], order="one order", references=0.3))
@example(Variant(_NAMES[0], order="index last", references=1.0, quotes="single", indent="  "))
@example(Variant(_NAMES[-1], order="jar", separator="\n    "))
@example(Variant(_NAMES[0], order="jar", quotes="single"))  # flags in single quotes: no jar dump, one pass still
def test_references_and_another_attribute_order_stay_on_the_fast_path(variant: Variant) -> None:
    xml = variant.xml()
    for cold in (True, False):  # the first read of a device's dumps compiles a pattern; the next ones reuse it
        if cold:
            _cold()
        with no_expat():
            assert_reads_as_elementtree(xml)


def _screen(obs: Observation) -> Counter[str]:
    """The observation's lines without their refs, as a multiset: what is on the screen, in no order."""
    return Counter(line.split("] ", 1)[1] for line in obs.text.split("\n")[1:])


@given(variants())
def test_siblings_in_another_order_show_the_same_screen(variant: Variant) -> None:
    # Document order only numbers the nodes: the screen's lines, header included, are the same ones.
    as_written = observe_xml(replace(variant, shuffled=False).xml())
    shuffled = observe_xml(replace(variant, shuffled=True).xml())
    assert shuffled.text.split("\n")[0] == as_written.text.split("\n")[0]
    assert _screen(shuffled) == _screen(as_written)
    assert Counter(shuffled.rows) == Counter(as_written.rows)


# --- generated layouts ------------------------------------------------------------------------------------------

# Texts as serializers write them: escaped or referenced, in either quoting, a literal tab (a space once read).
_TEXTS = st.sampled_from(("\"\"", '"OK"', '"Tom &amp; Jerry"', "'say \"hi\"'", '"&#x4e2d;&#25991;"', '"a&#10;b"',
                          '"&lt;b&gt;"', '"it&apos;s"', "'it&apos;s'", '"&#128293; hot"', '"two  spaces"',
                          '"\u00a0nbsp\u2028"', '"tab\tliteral"', '"x&quot;y"', '"&amp;#10;"', "'&quot;'", '"한글"',
                          '"caf&#xE9; &#x1F600;&#x1f600;"', '"&#0000065;"'))
_EXTRAS = ("NAF", "drawing-order", "hint", "display-id")
_FLAGS = (*KEYS[5:14], "focusable")


@st.composite
def generated_dumps(draw: st.DrawFn) -> str:
    """Nine to thirty nodes in one attribute order (drawn), each without some of the attributes others have, a few
    in an order of their own: the shapes a pattern must learn (optional attributes) or leave to expat."""
    order = draw(st.permutations(["index", *KEYS, "focusable", "bounds", *_EXTRAS]))
    ids = st.sampled_from(('""', '"p:id/a"', "'p:id/caf&#xE9;'", '"p:id/x&amp;y"'))
    nodes = []
    for i in range(draw(st.integers(9, 30))):
        left, top, width, height, bits = draw(st.tuples(st.integers(-5, 50), st.integers(-5, 50), st.integers(0, 60),
                                                        st.integers(0, 60), st.integers(0, 2**10 - 1)))
        values = {name: '"true"' if bits >> n & 1 else '"false"' for n, name in enumerate(_FLAGS)}
        values |= {"index": f'"{i}"', "text": draw(_TEXTS), "content-desc": draw(_TEXTS),
                   "resource-id": draw(ids), "class": '"android.widget.TextView"', "package": '"com.example"',
                   "visible-to-user": '"false"' if bits % 5 == 0 else '"true"', "NAF": '"true"',
                   "drawing-order": f'"{i}"', "hint": "'say \"hi\"'", "display-id": '"0"',
                   "bounds": f'"[{left},{top}][{left + width},{top + height}]"'}
        lacks = draw(st.sets(st.sampled_from([*_EXTRAS, "visible-to-user", "text", "content-desc", "checkable"]),
                             max_size=3))
        names = [name for name in order if name not in lacks]
        if draw(st.integers(0, 9)) == 0:
            names = draw(st.permutations(names))
        nodes.append("<node " + " ".join(f"{name}={values[name]}" for name in names) + " />")
    root = '<node index="0" class="android.widget.FrameLayout" package="com.example" bounds="[0,0][1080,2400]">'
    return ("<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>\r\n<hierarchy rotation=\"0\">" + root
            + "\n".join(nodes) + "</node></hierarchy>")


@given(generated_dumps(), st.booleans())
def test_generated_layouts_read_as_elementtree_reads_them(xml: str, cold: bool) -> None:
    if cold:
        _cold()
    assert_reads_as_elementtree(xml)


# --- what the regex readers leave to expat ----------------------------------------------------------------------

_HEAD = "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>"
_NODE = ('<node index="0" text="{}" resource-id="" class="android.widget.TextView" package="com.example" '
         'content-desc="" checkable="false" checked="false" clickable="true" enabled="true" focusable="false" '
         'focused="false" scrollable="false" long-clickable="false" password="false" selected="false" '
         'bounds="[0,0][100,50]" />')


@pytest.mark.parametrize("markup", [
    "<!-- " + _NODE.format("in a comment") + " -->",
    "<![CDATA[" + _NODE.format("in CDATA") + "]]>",
    "<?note " + _NODE.format("in an instruction") + " ?>",
])
def test_a_node_tag_inside_other_markup_is_no_node(markup: str) -> None:
    xml = f'{_HEAD}<hierarchy rotation="0"><node text="" bounds="[0,0][9,9]">{markup}{_NODE.format("real")}</node>' \
          "</hierarchy>"
    obs = assert_reads_as_elementtree(xml)
    assert obs.text.split("\n")[1:] == ['[1] TextView "real" click']


@pytest.mark.parametrize("order", SERIALIZER_ORDERS)
@pytest.mark.parametrize("damage", ["cut after a tag", "declaration not first", "duplicate attribute",
                                    "< in a value", "a node tag in a value after bounds", "quotes that do not match"])
def test_a_malformed_dump_is_refused_as_elementtree_refuses_it(order: str, damage: str) -> None:
    xml = Variant(_NAMES[0], order=order).xml()
    last = xml.rindex("<node")
    if damage == "cut after a tag":
        xml = xml[: xml.index(">", last) + 1]
    elif damage == "declaration not first":
        xml = "\n" + xml
    elif damage == "duplicate attribute":
        xml = xml[:last] + '<node text="x" ' + xml[last + len("<node "):]
    elif damage == "< in a value":
        xml = xml[:last] + '<node hint="a<b" ' + xml[last + len("<node "):]
    elif damage == "a node tag in a value after bounds":  # a serializer that does not escape `<` in a hint
        end = xml.index("/>", last)
        xml = xml[:end] + " extra='" + _NODE.format("forged") + "' " + xml[end:]
    else:
        at = xml.index('clickable="', last) + len('clickable="')
        xml = xml[:at] + xml[at:].replace('"', "'", 1)
    with pytest.raises(ET.ParseError):
        ET.fromstring(xml)
    for cold in (True, False):
        if cold:
            _cold()
        with pytest.raises(observation.expat.ExpatError):
            observe_xml(xml)


def test_the_shared_data_is_there() -> None:
    # These tests read real data from ../shared/data: without it they would prove nothing.
    assert DUMP_NAMES, f"{_DIR} is absent or empty: place ../shared/data beside the repository (CI provides it)"
