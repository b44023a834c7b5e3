"""YAML that refuses a key given twice in one mapping: every YAML file the farm reads goes through here.

PyYAML keeps the last of two equal keys without a word, so `{port: 16101, port: 16102}` in farm.yaml
silently becomes 16102 and a person editing the first line sees no effect. Here the second key is a
one-line FarmError naming the file, its line and the key (and where the first one is).

Everything else is `yaml.safe_load`: the same types, the same errors (a `yaml.YAMLError` for bad syntax,
for the caller to word). Merge keys (`<<: *defaults`) still work: a key that overrides a merged one is
the point of merging, not a duplicate; two explicit keys in one mapping are.
"""

from __future__ import annotations

from collections.abc import Hashable
from pathlib import Path
from typing import Any

import yaml

from farm.errors import FarmError

_MERGE_TAG = "tag:yaml.org,2002:merge"


class DuplicateKeyError(FarmError):
    """A mapping holds one key twice: the file, the line of the second key, the key, the line of the first."""

    def __init__(self, source: str, line: int, key: object, first_line: int) -> None:
        self.source = source
        self.line_number = line
        self.key = key
        self.first_line = first_line
        shown = _shown(key)
        super().__init__(
            f"{source}:{line}: duplicate key {shown} (first at line {first_line})",
            hint=f"keep one {shown}: YAML would silently keep only the last",
        )


def _shown(key: object) -> str:
    text = repr(key)
    return text if len(text) <= 80 else text[:80] + "…"


class _StrictLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` whose mappings refuse a key given twice (`source` names the file in the error)."""

    source = "<yaml>"

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        # Checked before the base class flattens merge keys into `node.value`: after that, a key overriding a
        # merged one would look like a duplicate.
        seen: dict[object, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG:
                continue
            key = self.construct_object(key_node, deep=deep)
            try:
                hash(key)
            except TypeError:
                continue  # an unhashable key: the base class refuses it with its own error
            line = key_node.start_mark.line + 1
            # `yes` and `true`, or `1` and `1.0`, are equal keys too: the dict would keep only one of them.
            if key in seen:
                raise DuplicateKeyError(self.source, line, key, seen[key])
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def strict_load(text: str, source: str | Path) -> Any:
    """The one document in `text`, as `yaml.safe_load` reads it, but a key given twice in a mapping is a
    `DuplicateKeyError` (a FarmError: `farm.yaml:3: duplicate key 'port' (first at line 2)`).

    `source` names the file in that error. Bad syntax is still a `yaml.YAMLError`, for the caller to word."""
    loader = _StrictLoader(text)
    loader.source = str(source)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
