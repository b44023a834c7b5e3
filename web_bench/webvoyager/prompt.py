"""The reference judge prompt: upstream `judge-prompt.md`, loaded byte for byte and refused unless its SHA-256 is
the pinned one.

Load it before any credential is read: a run with an altered prompt must stop before it can cost anything.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from farm.errors import FarmError
from web_bench.webvoyager.dataset import DATA_HINT, PROMPT_FILE, sha256_bytes

REFERENCE_PROMPT_SHA256 = "bcdf403484823037eaeb6cec7918b966fe90ee31a30bc8d69094d2ff42747ccf"
"""SHA-256 of oktton/opencode-browser `assets/benchmark/judge-prompt.md` at 856867996e73f7dcc5e39827bf2af7555bd63d40."""


class JudgePrompt(BaseModel):
    """The verified reference judge prompt."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str
    """The file's bytes decoded as UTF-8, nothing else changed (line endings, whitespace and any BOM kept)."""
    sha256: str
    """SHA-256 of the bytes the text was decoded from (= `REFERENCE_PROMPT_SHA256`)."""
    path: str
    """The file it was read from."""


def load_reference_prompt(data_dir_or_file: Path | str) -> JudgePrompt:
    """Read `judge-prompt.md` (from a data directory, or the file itself) and refuse any other content."""
    given = Path(data_dir_or_file)
    path = given / PROMPT_FILE if given.is_dir() else given
    try:
        # Bytes, not text mode: text mode would turn CRLF into LF and so accept an altered file unseen.
        raw = path.read_bytes()
    except FileNotFoundError:
        raise FarmError(f"{path}: the reference judge prompt is missing", hint=DATA_HINT) from None
    except OSError as exc:
        raise FarmError(f"{path}: cannot read the reference judge prompt ({exc.strerror})", hint=DATA_HINT) from None
    got = sha256_bytes(raw)
    if got != REFERENCE_PROMPT_SHA256:
        raise FarmError(
            f"{path}: SHA-256 {got} is not the pinned reference judge prompt {REFERENCE_PROMPT_SHA256}",
            hint=f"the reference judge uses the upstream file verbatim: {DATA_HINT}",
        )
    # The pinned bytes are UTF-8; the plain codec keeps a BOM and every line ending as they are.
    return JudgePrompt(text=raw.decode("utf-8"), sha256=got, path=str(path))
