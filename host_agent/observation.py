"""Window hierarchy XML → compact text, one line per meaningful node: `[ref] Class "text" desc=… (id) flags`.

The parser is a bare expat handler (no tree is built): a 1000-node dump converts in about a
millisecond, so reading the screen costs the device round trip, not the harness.
"""

from __future__ import annotations

import hashlib
import html
import re
from dataclasses import dataclass, field
from typing import NamedTuple
from xml.parsers import expat

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
    """Raw fields of the listed nodes, by ref order (ref = index + 1); `nodes` builds UiNodes from them."""
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


# The jar writes attributes in one fixed order (protocol notes §B, "XML"); one C-level findall over
# the document then yields every node's fields. Any other dump falls back to expat.
_JAR_NODE = re.compile(
    r'<node (?:NAF="true" )?index="[^"]*" text="([^"]*)" resource-id="([^"]*)" class="([^"]*)" '
    r'package="([^"]*)" content-desc="([^"]*)" checkable="(\w+)" checked="(\w+)" clickable="(\w+)" '
    r'enabled="(\w+)" focusable="\w+" focused="(\w+)" scrollable="(\w+)" long-clickable="(\w+)" '
    r'password="(\w+)" selected="(\w+)"(?: visible-to-user="(\w+)")? '
    r'bounds="\[(-?\d+),(-?\d+)\]\[(-?\d+),(-?\d+)\]"'
)
_Fields = tuple[str, ...]


def _clean(value: str) -> str:
    return _quote(html.unescape(value) if "&" in value else value)


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
            short = short_class[cls] = cls.rsplit(".", 1)[-1] or "View"
        line = f"[{len(kept)}] {short}"
        if text:
            line += ' "' + text + '"' if _plain(text) else " " + _clean(text)
        if desc and desc != text:
            line += ' desc="' + desc + '"' if _plain(desc) else " desc=" + _clean(desc)
        if rid:
            sid = short_id.get(rid)
            if sid is None:
                sid = short_id[rid] = f" ({rid.rsplit(':id/', 1)[-1]})"
            line += sid
        key = (cls, checkable, checked, clickable, enabled, focused, scrollable, long_click, password, selected)
        flags = flag_cache.get(key)
        if flags is None:
            flags = flag_cache[key] = _flags(clickable, long_click, scrollable, cls.endswith("EditText"), checkable,
                                             checked, selected, focused, enabled, password)
        lines.append(line + flags)
    return kept, lines


# Text that can go into a line as is: no entity to decode, no line break, not too long.
_PLAIN = re.compile(rf'[^&\n\r\t"]{{1,{MAX_TEXT}}}').fullmatch


def _plain(value: str) -> bool:
    # Exactly the values `_quote` would leave unchanged, so both parsers render the same line.
    return _PLAIN(value) is not None and value.isprintable() and "  " not in value


def _to_node(ref: int, row: _Fields) -> UiNode:
    (text, rid, cls, _pkg, desc, _ck, _cd, clickable, _en, _fo, scrollable, *_rest) = row
    box = (int(row[15]), int(row[16]), int(row[17]), int(row[18]))
    return UiNode(
        ref, cls, html.unescape(text) if "&" in text else text, html.unescape(desc) if "&" in desc else desc,
        rid, box, clickable == "true", scrollable == "true", cls.endswith("EditText"),
    )


_FLAG_KEYS = ("checkable", "checked", "clickable", "enabled", "focused", "scrollable", "long-clickable",
              "password", "selected", "visible-to-user")


def _expat_fields(xml: str | bytes) -> tuple[list[_Fields], str]:
    rows: list[_Fields] = []

    def start(name: str, a: dict[str, str]) -> None:
        if name != "node":
            return
        m = _BOUNDS.match(a.get("bounds", ""))
        box = (m[1], m[2], m[3], m[4]) if m else ("0", "0", "0", "0")
        flags = tuple(a.get(k, "") for k in _FLAG_KEYS)
        rows.append((a.get("text", ""), a.get("resource-id", ""), a.get("class", ""), a.get("package", ""),
                     a.get("content-desc", ""), *flags[:4], *flags[4:], *box))

    parser = expat.ParserCreate()
    parser.StartElementHandler = start
    parser.Parse(xml, True)
    return rows, rows[0][3] if rows else ""


def hierarchy_rows(xml: str | bytes) -> tuple[list[_Fields], list[str], str]:
    """Parse a uiautomator dump: (meaningful node rows, their text lines, package of the first node)."""
    text = xml.decode("utf-8") if isinstance(xml, bytes) else xml
    rows: list[_Fields] = _JAR_NODE.findall(text)
    if len(rows) != text.count("<node "):
        rows, package = _expat_fields(xml)
    else:
        package = rows[0][3] if rows else ""
    kept, lines = _rows_to_lines(rows)
    return kept, lines, package


def observe_xml(xml: str | bytes, *, package: str = "", activity: str = "") -> Observation:
    """Build an observation from a hierarchy dump and the foreground app."""
    rows, lines, first_package = hierarchy_rows(xml)
    package = package or first_package
    header = f"app: {package}/{activity}" if activity else f"app: {package}"
    return Observation(text="\n".join([header, *lines]), rows=rows, package=package, activity=activity)
