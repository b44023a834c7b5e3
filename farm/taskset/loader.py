"""Loading task files: one JSON object per file under `tasks/<directory>/<id>.json`."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from farm.errors import FarmError
from farm.taskset.model import CHECK_TYPES, Task

SPECIAL_SETS = ("skills", "memory")
"""Directories run only when chosen explicitly (`--set skills`)."""
SplitChoice = Literal["tune", "holdout", "all"]
MAX_TASK_BYTES = 256 << 10
"""Largest task file read (256 KiB; the biggest shipped task is a few KiB)."""
MAX_TASK_DEPTH = 32
"""Deepest array/object nesting of a task file (the schema needs four or five levels)."""


@dataclass(frozen=True)
class LoadedTask:
    """A parsed task and where it came from."""

    task: Task
    path: Path
    directory: str
    """Directory relative to the task-set root, posix style (`read/system`)."""
    sha256: str
    """SHA-256 of the file's bytes (the task's version)."""


class TaskFileError(FarmError):
    """A task file does not parse or is invalid; `field` names where (or `json` / `file`)."""

    def __init__(
        self,
        path: Path,
        field: str,
        message: str,
        *,
        hint: str | None = None,
        position: tuple[int, int] | None = None,
    ) -> None:
        self.path = path
        self.field = field
        self.problem = message
        self.position = position
        super().__init__(f"{self.where}: {field}: {message}", hint=hint)

    @property
    def where(self) -> str:
        """`file` or `file:line:col`."""
        return f"{self.path}:{self.position[0]}:{self.position[1]}" if self.position else str(self.path)


def default_tasks_root() -> Path:
    """The repository's `tasks/` directory."""
    return Path(__file__).resolve().parents[2] / "tasks"


def field_path(loc: tuple[int | str, ...]) -> str:
    """A pydantic error location as `checks[0].pattern` (discriminator tags dropped)."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in CHECK_TYPES:
            continue
        else:
            out += f".{part}" if out else str(part)
    return out or "task"


def _validation_error(path: Path, exc: ValidationError) -> TaskFileError:
    first = exc.errors()[0]
    loc = tuple(first["loc"])
    msg = first["msg"].removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        msg = "unknown field"
        hint = "remove it or fix its spelling (fields are camelCase, see seed 003)"
    elif first["type"] == "missing":
        hint = "add the field"
    elif first["type"] == "union_tag_invalid":
        hint = f"use one of: {', '.join(CHECK_TYPES)}"
    else:
        hint = None
        if "input" in first and first["type"].endswith("_type"):
            msg += f", got {type(first['input']).__name__}"
    extra = len(exc.errors()) - 1
    if extra:
        msg += f" (+{extra} more)"
    return TaskFileError(path, field_path(loc), msg, hint=hint)


_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]')
"""A JSON string (skipped whole, so brackets inside it do not count) or an opening/closing bracket."""


def json_depth_over(text: str, limit: int) -> tuple[int, int] | None:
    """(line, column) where the nesting of `text` first goes deeper than `limit` arrays/objects, else None.

    Iterative, so a hostile file (100000 `[`) is refused before a recursive parser sees it.
    """
    depth = 0
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limit:
                line = text.count("\n", 0, match.start()) + 1
                return line, match.start() - (text.rfind("\n", 0, match.start()) + 1) + 1
        elif token in "]}":
            depth -= 1
    return None


def read_task_json(path: Path) -> tuple[bytes, object]:
    """A task file's bytes and its parsed JSON; TaskFileError when it cannot be read, is too large, is not
    UTF-8, nests too deeply or is not JSON. Every reader of task files goes through here."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_TASK_BYTES + 1)
    except OSError as exc:
        raise TaskFileError(path, "file", f"cannot read: {exc.strerror or exc}") from exc
    if len(data) > MAX_TASK_BYTES:
        raise TaskFileError(path, "file", f"larger than {MAX_TASK_BYTES >> 10} KiB",
                            hint="a task is one small JSON object (see seed 003)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TaskFileError(path, "file", f"not UTF-8 (byte {exc.start})", hint="save the file as UTF-8") from exc
    deep = json_depth_over(text, MAX_TASK_DEPTH)
    if deep is not None:
        raise TaskFileError(path, "json", f"nested deeper than {MAX_TASK_DEPTH} levels",
                            hint="a task nests a few levels at most (see seed 003)", position=deep)
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TaskFileError(
            path, "json", f"malformed JSON: {exc.msg}", hint="fix the JSON syntax", position=(exc.lineno, exc.colno)
        ) from exc
    return data, raw


def parse_task_file(path: Path, root: Path) -> LoadedTask:
    """Parse and validate one task file; TaskFileError (a FarmError) with file:line:col or field path."""
    data, raw = read_task_json(path)
    if not isinstance(raw, dict):
        raise TaskFileError(path, "task", "a task file holds one JSON object")
    try:
        task = Task.model_validate(raw)
    except ValidationError as exc:
        raise _validation_error(path, exc) from exc
    directory = path.parent.relative_to(root).as_posix()
    return LoadedTask(task=task, path=path, directory="" if directory == "." else directory,
                      sha256=hashlib.sha256(data).hexdigest())


def task_files(root: Path) -> list[Path]:
    """Every `*.json` task file under `root`, sorted."""
    if not root.is_dir():
        raise FarmError(f"{root}: task directory not found", hint="pass the task-set directory (e.g. tasks/)")
    return sorted(p for p in root.rglob("*.json") if p.is_file())


def load_taskset(root: Path) -> list[LoadedTask]:
    """Every task under `root`; raises FarmError on the first bad file."""
    return [parse_task_file(p, root) for p in task_files(root)]


def in_set(loaded: LoadedTask, prefix: str) -> bool:
    """Whether a task belongs to `--set PREFIX`: its directory or its id starts with the prefix."""
    prefix = prefix.strip("/")
    d = loaded.directory
    return d == prefix or d.startswith(prefix + "/") or loaded.task.id.startswith(prefix)


def is_special(loaded: LoadedTask) -> bool:
    """Whether the task is in a set run only explicitly (`skills/`, `memory/`)."""
    return loaded.directory.split("/", 1)[0] in SPECIAL_SETS


def select_tasks(root: Path, split: SplitChoice = "all", set_prefix: str | None = None) -> list[LoadedTask]:
    """Tasks of one pool (or both) and one set; no prefix = the full set without skills/ and memory/."""
    return choose_tasks(load_taskset(root), split, set_prefix)


def choose_tasks(
    tasks: list[LoadedTask], split: SplitChoice = "all", set_prefix: str | None = None
) -> list[LoadedTask]:
    """The loaded tasks of one pool (or both) and one set, as `select_tasks` picks them."""
    chosen = []
    for loaded in tasks:
        if set_prefix is None:
            if is_special(loaded):
                continue
        elif not in_set(loaded, set_prefix):
            continue
        if split != "all" and loaded.task.partition != split:
            continue
        chosen.append(loaded)
    return chosen
