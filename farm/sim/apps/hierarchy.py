"""Serialise a node tree the way Android's uiautomator does (stock `uiautomator dump` or the u2 jar)."""

from __future__ import annotations

from typing import Literal

from farm.sim.apps.base import Node

_DECL = "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>"


def _esc(value: str) -> str:
    out = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    out = out.replace("\n", "&#10;").replace("\r", "&#13;").replace("\t", "&#9;")
    # XmlSerializer cannot write other control characters; the dumpers drop them.
    return "".join(ch for ch in out if ch >= " ")


def _b(flag: bool) -> str:
    return "true" if flag else "false"


def _attrs(node: Node, index: int, order: int, jar: bool) -> str:
    left, top, right, bottom = node.bounds
    parts = [
        ("index", str(index)), ("text", node.text), ("resource-id", node.rid), ("class", node.cls),
        ("package", node.package), ("content-desc", node.desc), ("checkable", _b(node.checkable)),
        ("checked", _b(node.checked)), ("clickable", _b(node.clickable)), ("enabled", _b(node.enabled)),
        ("focusable", _b(node.focusable)), ("focused", _b(node.focused)), ("scrollable", _b(node.scrollable)),
        ("long-clickable", _b(node.long_clickable)), ("password", _b(node.password)),
        ("selected", _b(node.selected)),
    ]
    if jar:
        parts.append(("visible-to-user", "true"))
    parts += [
        ("bounds", f"[{left},{top}][{right},{bottom}]"), ("drawing-order", str(order)), ("hint", node.hint),
        ("display-id", "0"),
    ]
    return " ".join(f'{k}="{_esc(v)}"' for k, v in parts)


def to_xml(roots: list[Node], rotation: int = 0, style: Literal["dump", "jar"] = "dump", max_depth: int = 50) -> str:
    """The hierarchy document; `dump` is one line, `jar` is indented with CRLF like the u2 server."""
    jar = style == "jar"
    nl = "\r\n" if jar else ""
    out: list[str] = [_DECL, nl, f'<hierarchy rotation="{rotation}">', nl]

    def emit(node: Node, index: int, order: int, depth: int) -> None:
        pad = "  " * depth if jar else ""
        kids = node.children if depth < max_depth else []
        if kids:
            out.append(f"{pad}<node {_attrs(node, index, order, jar)}>{nl}")
            for i, child in enumerate(kids):
                emit(child, i, i + 1, depth + 1)
            out.append(f"{pad}</node>{nl}")
        else:
            out.append(f"{pad}<node {_attrs(node, index, order, jar)} />{nl}")

    for root in roots:
        emit(root, 0, 0, 1)
    out.append("</hierarchy>")
    return "".join(out)
