"""Reading accessibility snapshots the way a script would: nodes by role and name, with refs."""

from __future__ import annotations

import re
from dataclasses import dataclass

_LINE = re.compile(r'^(\s*)- ([\w/-]+)(?: "((?:[^"\\]|\\.)*)")?((?: \[[^\]]*\])*)(?::\s*(.*))?$')
_QUOTED = re.compile(r"^(\s*)- '(.*)'(:?)$")
_ATTR = re.compile(r"\[([^\]=]+)(?:=([^\]]*))?\]")


@dataclass(frozen=True)
class Node:
    """One line of a snapshot."""

    depth: int
    role: str
    name: str
    ref: str | None
    attrs: dict[str, str]
    value: str

    @property
    def checked(self) -> bool:
        """Whether a checkbox/switch is checked."""
        return self.attrs.get("checked") in ("", "true")


def parse(snapshot: str) -> list[Node]:
    """Every node line of a snapshot (the YAML block of a tool result, or the raw tree)."""
    nodes = []
    for raw in snapshot.splitlines():
        quoted = _QUOTED.match(raw)
        # YAML single-quotes a node line that contains a colon; undo it.
        line = f"{quoted[1]}- {quoted[2].replace(chr(39) * 2, chr(39))}{quoted[3]}" if quoted else raw
        match = _LINE.match(line)
        if not match:
            continue
        indent, role, name, attr_text, value = match.groups()
        attrs = {k: (v or "") for k, v in _ATTR.findall(attr_text or "")}
        ref = attrs.pop("ref", None)
        nodes.append(Node(depth=len(indent) // 2, role=role, name=(name or "").replace('\\"', '"'),
                          ref=ref, attrs=attrs, value=(value or "").strip().strip('"')))
    return nodes


def find(snapshot: str, role: str, name: str | None = None, *, prefix: bool = False) -> Node:
    """The first node with `role` whose name equals (or starts with) `name`; LookupError if none."""
    for node in parse(snapshot):
        if node.role != role or node.ref is None:
            continue
        if name is None or node.name == name or (prefix and node.name.startswith(name)):
            return node
    raise LookupError(f"no {role} named {name!r} in the snapshot")


def subtree(snapshot: str, node: Node) -> list[Node]:
    """The nodes under `node` (deeper lines that follow it)."""
    nodes = parse(snapshot)
    start = next(i for i, n in enumerate(nodes) if n.ref == node.ref and n.ref is not None)
    out = []
    for n in nodes[start + 1 :]:
        if n.depth <= node.depth:
            break
        out.append(n)
    return out
