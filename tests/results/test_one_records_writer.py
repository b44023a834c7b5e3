"""No code path but the run store opens a run's records.jsonl for writing."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("farm", "host_agent", "web_bench")
STORE = Path("farm/results/store.py")
_WRITERS = {"atomic_write_text", "atomic_write_bytes", "create_new_text", "write_text", "write_bytes", "copy",
            "copyfile", "copy2", "move", "replace", "rename", "truncate", "unlink"}
_NAMES_RECORDS = ("RECORDS_FILE", "records.jsonl", "records_path", ".records")


def _writes_records(source: str) -> list[int]:
    """Lines of `source` that write to a path naming the records file: a write helper, or `open` in a
    writing mode, whose arguments name it."""
    found: list[int] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        target = ast.unparse(func.value) if isinstance(func, ast.Attribute) else ""
        args = " ".join(ast.unparse(a) for a in [*node.args, *(k.value for k in node.keywords)])
        if name == "open":
            # `open(path, mode)` or `path.open(mode)`, or `mode=`.
            positional = node.args[1:2] if isinstance(func, ast.Name) else node.args[:1]
            mode = " ".join(ast.unparse(a) for a in [*positional, *(k.value for k in node.keywords if k.arg == "mode")])
            if not any(c in mode for c in "wax+"):
                continue
        elif name not in _WRITERS:
            continue
        elif name == "replace" and isinstance(func, ast.Name) and len(node.args) == 1 and node.keywords:
            continue  # `dataclasses.replace(obj, field=…)` copies an object; it moves no file
        if any(n in args or n in target for n in _NAMES_RECORDS):
            found.append(node.lineno)
    return sorted(found)


def test_only_the_store_writes_records_jsonl() -> None:
    offending = [
        f"{path.relative_to(ROOT)}:{line}"
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if path.relative_to(ROOT) != STORE
        for line in _writes_records(path.read_text(encoding="utf-8"))
    ]
    assert offending == [], "write records only through farm.results.store.RunStore"


def test_the_store_is_found_writing_it() -> None:
    assert _writes_records((ROOT / STORE).read_text(encoding="utf-8")) == [], \
        "the store writes through a path variable; the check looks at the callers"
    assert "_append_unlocked" in (ROOT / STORE).read_text(encoding="utf-8")


def test_the_check_sees_every_way_of_rewriting_the_file() -> None:
    source = (
        "atomic_write_text(run_dir / RECORDS_FILE, text)\n"
        "(run_dir / 'records.jsonl').write_text(text)\n"
        "with open(run_dir / RECORDS_FILE, 'w') as fh: pass\n"
        "with (run_dir / RECORDS_FILE).open('a') as fh: pass\n"
        "with store.records.open(mode='wb') as fh: pass\n"
        "os.replace(tmp, records_path(run_dir))\n"
        "with (run_dir / RECORDS_FILE).open('rb') as fh: pass\n"
        "with open(run_dir / RECORDS_FILE) as fh: pass\n"
        "atomic_write_text(run_dir / 'report.md', text)\n"
    )
    assert _writes_records(source) == [1, 2, 3, 4, 5, 6]
