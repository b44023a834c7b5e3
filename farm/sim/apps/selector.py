"""UiSelector matching over the node tree, as the uiautomator2 server (jar) does it."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from farm.sim.apps.base import Node

# uiautomator2's Selector mask bits (uiautomator2/_selector.py).
MASKS: dict[str, int] = {
    "text": 0x01, "textContains": 0x02, "textMatches": 0x04, "textStartsWith": 0x08, "className": 0x10,
    "classNameMatches": 0x20, "description": 0x40, "descriptionContains": 0x80, "descriptionMatches": 0x0100,
    "descriptionStartsWith": 0x0200, "checkable": 0x0400, "checked": 0x0800, "clickable": 0x1000,
    "longClickable": 0x2000, "scrollable": 0x4000, "enabled": 0x8000, "focusable": 0x010000,
    "focused": 0x020000, "selected": 0x040000, "packageName": 0x080000, "packageNameMatches": 0x100000,
    "resourceId": 0x200000, "resourceIdMatches": 0x400000, "index": 0x800000, "instance": 0x01000000,
}
_BOOLS = {
    "checkable": "checkable", "checked": "checked", "clickable": "clickable", "longClickable": "long_clickable",
    "scrollable": "scrollable", "enabled": "enabled", "focusable": "focusable", "focused": "focused",
    "selected": "selected",
}


class SelectorError(ValueError):
    """A selector the server cannot interpret (bad regex, wrong type)."""


@dataclass
class Located:
    """A node found in the tree with its parent and its index among the parent's children."""

    node: Node
    parent: Node | None
    index: int


def _walk(roots: list[Node]) -> Iterator[Located]:
    def rec(node: Node, parent: Node | None, index: int) -> Iterator[Located]:
        yield Located(node, parent, index)
        for i, child in enumerate(node.children):
            yield from rec(child, node, i)

    for root in roots:
        yield from rec(root, None, 0)


def _full(pattern: str, value: str) -> bool:
    try:
        return re.fullmatch(pattern, value, flags=re.DOTALL) is not None
    except re.error as exc:
        raise SelectorError(f"bad pattern {pattern!r}: {exc}") from exc


def _criteria(sel: Mapping[str, Any]) -> dict[str, Any]:
    mask = sel.get("mask")
    keys = [k for k in MASKS if k in sel and (not isinstance(mask, int) or mask & MASKS[k])]
    return {k: sel[k] for k in keys}


def matches(loc: Located, crit: Mapping[str, Any]) -> bool:
    """Whether one node satisfies every criterion except `instance`."""
    n = loc.node
    for key, want in crit.items():
        if key == "instance":
            continue
        if key in _BOOLS:
            if bool(getattr(n, _BOOLS[key])) != bool(want):
                return False
            continue
        if key == "index":
            if loc.index != int(want):
                return False
            continue
        text_of = {"text": n.text, "description": n.desc, "className": n.cls, "packageName": n.package,
                   "resourceId": n.rid}
        base = re.sub(r"(Contains|Matches|StartsWith)$", "", key)
        have = text_of.get(base)
        if have is None or not isinstance(want, str):
            raise SelectorError(f"unsupported selector field {key}")
        if key.endswith("Contains"):
            ok = want in have
        elif key.endswith("Matches"):
            ok = _full(want, have)
        elif key.endswith("StartsWith"):
            ok = have.startswith(want)
        else:
            ok = have == want
        if not ok:
            return False
    return True


def _select(locs: list[Located], crit: Mapping[str, Any]) -> list[Located]:
    found = [loc for loc in locs if matches(loc, crit)]
    if "instance" in crit:
        i = int(crit["instance"])
        return found[i:i + 1]
    return found


def find_all(roots: list[Node], sel: Mapping[str, Any]) -> list[Located]:
    """Every node the selector (with its child/sibling chain) matches, in document order."""
    everything = list(_walk(roots))
    parents = {id(loc.node): loc.parent for loc in everything}
    current = _select(everything, _criteria(sel))
    chain = list(zip(sel.get("childOrSibling") or [], sel.get("childOrSiblingSelector") or [], strict=False))
    for relation, sub in chain:
        scope: list[Located] = []
        seen: set[int] = set()
        for loc in current:
            anchor = loc.node if relation == "child" else parents.get(id(loc.node))
            if anchor is None:
                continue
            for inner in _walk([anchor]):
                if inner.node is anchor or id(inner.node) in seen:
                    continue
                seen.add(id(inner.node))
                inner.parent = parents.get(id(inner.node))
                if inner.parent is not None:
                    inner.index = next(i for i, c in enumerate(inner.parent.children) if c is inner.node)
                scope.append(inner)
        current = _select(scope, _criteria(sub))
    return current


def find(roots: list[Node], sel: Mapping[str, Any]) -> Node | None:
    """The first node the selector matches."""
    found = find_all(roots, sel)
    return found[0].node if found else None


def obj_info(node: Node, screen: tuple[int, int]) -> dict[str, Any]:
    """The jar's ObjInfo JSON for one node."""
    left, top, right, bottom = node.bounds
    width, height = screen
    visible = {"left": max(0, left), "top": max(0, top), "right": min(width, right), "bottom": min(height, bottom)}
    return {
        "bounds": {"bottom": bottom, "left": left, "right": right, "top": top},
        "childCount": len(node.children),
        "className": node.cls,
        "contentDescription": node.desc or None,
        "packageName": node.package,
        "resourceName": node.rid or None,
        "text": node.text,
        "visibleBounds": visible,
        "checkable": node.checkable,
        "checked": node.checked,
        "clickable": node.clickable,
        "enabled": node.enabled,
        "focusable": node.focusable,
        "focused": node.focused,
        "longClickable": node.long_clickable,
        "scrollable": node.scrollable,
        "selected": node.selected,
    }
