"""The ledger's files: read without trusting them (bounded size, bounded depth, one meaning per key) and
written privately, never replacing anything.

Every desktop file (config, result, batch version, ledger index line) is read here, never with a bare
`json.load`: Python's `json` recurses once per nesting level, so 100000 `[` was a RecursionError traceback.
The bytes are parsed by pydantic-core's parser, which stops at a fixed depth with an error, and every problem
becomes one FarmError line naming the file and the field.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
from pathlib import Path, PurePosixPath
from typing import Annotated, TypeVar

from pydantic import AfterValidator, BaseModel, Field, ValidationError
from pydantic_core import from_json

from farm.errors import FarmError

M = TypeVar("M", bound=BaseModel)
_NAMED_FIELD = re.compile(r"([A-Za-z][A-Za-z0-9_.]*): (.+)", re.DOTALL)
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_.-]{1,64}")

Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
"""A SHA-256 as 64 lower-case hex digits."""


def _relative_file(value: str) -> str:
    if not value or len(value) > 4096:
        raise ValueError("must be a path of 1..4096 characters")
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in value):
        raise ValueError("holds a control character; a version file name is plain text")
    if PurePosixPath(value).is_absolute() or value.startswith("\\"):
        raise ValueError("must be relative to the file that names it; the versions of a batch are kept together")
    return value


RelativeFile = Annotated[str, AfterValidator(_relative_file)]
"""Another ledger file, named relative to the directory of the file that names it."""

MAX_FILE_BYTES = 16 * 1024 * 1024
"""Largest desktop file read. A full batch of 100 repetitions is well under 2 MiB; anything bigger is not ours and
reading it whole would only exhaust memory."""


def real_path(path: Path) -> Path:
    """`path` with symlinks and `..` resolved; unlike `Path.resolve`, never raises on a symlink loop."""
    return Path(os.path.realpath(path))


def read_file(path: Path, *, what: str, hint: str) -> bytes:
    """The bytes of a regular file of at most MAX_FILE_BYTES; FarmError naming `path` otherwise."""
    try:
        # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise FarmError(f"{path}: {what} not found", hint=hint) from None
    except OSError as exc:
        raise FarmError(f"{path}: cannot read {what}: {exc.strerror}", hint=hint) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FarmError(f"{path}: {what} is not a regular file", hint=hint)
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_FILE_BYTES:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > MAX_FILE_BYTES:
            raise FarmError(f"{path}: {what} is larger than {MAX_FILE_BYTES} bytes", hint=hint)
        return b"".join(chunks)
    except OSError as exc:
        raise FarmError(f"{path}: cannot read {what}: {exc.strerror}", hint=hint) from None
    finally:
        os.close(fd)


def shown_key(key: str) -> str:
    """A key from the file as it may appear in a message: plain names as they are, anything else quoted and cut,
    so a hostile key can neither flood the error line nor carry terminal escapes into it."""
    if _PLAIN_KEY.fullmatch(key):
        return key
    return ascii(key if len(key) <= 40 else key[:40] + "…")


def first_error(exc: ValidationError) -> tuple[str | None, str]:
    """(field, message) of the first validation error, for a one-line report; field None for the whole file."""
    err = exc.errors()[0]
    field: str | None = ".".join(shown_key(str(part)) for part in err["loc"]) or None
    message = str(err["msg"]).removeprefix("Value error, ")
    named = _NAMED_FIELD.fullmatch(message)
    if named is not None:
        # Model validators name their field as "<field>: <problem>", relative to the model they check.
        field = f"{field}.{named[1]}" if field else named[1]
        message = named[2]
    if err["type"] == "int_type":
        message += " (a whole number such as 3; true/false, 3.0, NaN and text are not counts)"
    return field, message


def _no_duplicate_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    seen: dict[str, object] = {}
    for key, value in pairs:
        if key in seen:
            raise _DuplicateKey(key)
        seen[key] = value
    return seen


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def parse_model_bytes(raw: bytes, model: type[M], *, path: Path | str, what: str, hint: str) -> M:
    """Validate JSON bytes into `model`; any problem is a one-line FarmError naming `path` and the field."""
    try:
        from_json(raw)
    except ValueError as exc:
        raise FarmError(f"{path}: {what} is not valid UTF-8 JSON ({exc})", hint=hint) from None
    try:
        # Depth is bounded now (the parser above refuses deep nesting), so `json` cannot recurse without end here.
        # Duplicate keys are refused: a reader of the file and the ledger would otherwise see different values.
        json.loads(raw, object_pairs_hook=_no_duplicate_keys)
    except _DuplicateKey as dup:
        raise FarmError(
            f"{path}: field {shown_key(dup.key)}: appears more than once in one object", hint=hint
        ) from None
    except (ValueError, RecursionError) as exc:
        raise FarmError(f"{path}: {what} is not valid UTF-8 JSON ({exc})", hint=hint) from None
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        field, message = first_error(exc)
        where = f"field {field}" if field else what
        raise FarmError(f"{path}: {where}: {message}", hint=hint) from None


def parse_model_file(path: Path, model: type[M], *, what: str, hint: str) -> M:
    """Read a JSON file into `model`; any problem is a one-line FarmError naming file and field."""
    return parse_model_bytes(read_file(path, what=what, hint=hint), model, path=path, what=what, hint=hint)


def create_private_text(path: Path, text: str, *, what: str) -> None:
    """Write a whole new file only its owner can read (0600); FarmError instead of replacing anything.

    The ledger lives in the operator's private results folder (seed 000: `mkdir -m 700`, config 600; evidence
    is never published), so its files keep mkstemp's 0600 rather than the umask mode farm.fsutil gives reports
    meant to be shared. The content appears at once (hard link of a complete temp file), and a file created
    meanwhile by someone else is never replaced.
    """
    hint = "choose another path; ledger files are never overwritten"
    if path.exists() or path.is_symlink():
        raise FarmError(f"{path}: {what} already exists", hint=hint)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise FarmError(
            f"{path.parent}: cannot create the {what} there: {exc.strerror}", hint="choose a writable folder"
        ) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.link(tmp, path)
    except FileExistsError:
        raise FarmError(f"{path}: {what} already exists", hint=hint) from None
    except OSError as exc:
        raise FarmError(
            f"{path}: cannot write the {what}: {exc.strerror}", hint="free space or fix permissions"
        ) from None
    finally:
        Path(tmp).unlink(missing_ok=True)


def make_private_dir(directory: Path) -> None:
    """Create `directory` (0700) if missing; FarmError naming it when it is not a folder or cannot be made."""
    if directory.exists() and not directory.is_dir():
        raise FarmError(f"{directory}: is not a directory", hint="write the output into a folder")
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise FarmError(
            f"{directory}: cannot create the folder: {exc.strerror}", hint="choose a writable folder"
        ) from None
