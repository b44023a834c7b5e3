"""Which files of a runs directory the viewer may read, and as what.

A run directory holds trees pulled from phones: their names and contents are the phone's. A path
from a URL or a transcript is resolved here, once: never absolute, never `..`, never through a symlink
that leaves the run directory; and only the harness's own reports (a run's report.html, a label's history.html)
are ever served as HTML.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from farm.manifest import manifest_path
from farm.names import is_safe_name


class Refused(Exception):
    """A path the viewer will not open: it names no file of the run, or leaves the run directory."""


IMAGE_TYPES = {".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".png": "image/png", ".webp": "image/webp",
               ".gif": "image/gif"}
"""Screenshot formats, served as images (SVG is not among them: it can carry scripts)."""
TEXT_SUFFIXES = frozenset({".json", ".jsonl", ".md", ".txt", ".log", ".csv", ".xml", ".yaml", ".yml"})
"""Files shown as plain text, whatever their content."""
REPORT_NAME = "report.html"
"""The one HTML file name served as HTML, where the harness writes it (the run's top level or `reports/<name>/`)."""
HISTORY_DIR, HISTORY_NAME = "history", "history.html"
"""`farm history`'s own folder under the runs directory and its HTML file, served as HTML there only."""


def run_dir_of(runs_dir: Path, run: str) -> Path:
    """The directory of run `run` (one safe name, directly under `runs_dir`, not a link out of it); else Refused."""
    if not is_safe_name(run):
        raise Refused(f"{run!r} is not a run name")
    real_root = runs_dir.resolve()
    real = (runs_dir / run).resolve()
    if real.parent != real_root:
        raise Refused(f"{run}: leaves the runs directory")
    if not real.is_dir():
        raise FileNotFoundError(run)
    return real


def relative_parts(rel: str) -> tuple[str, ...]:
    """The components of a relative path from a URL or a record; Refused for absolute paths, `..`, `.`,
    backslashes and NUL (the same text must mean the same file everywhere)."""
    if rel.startswith("/") or "\\" in rel or "\x00" in rel or (len(rel) > 1 and rel[1] == ":"):
        raise Refused(f"{rel!r} is not a relative path")
    parts = tuple(p for p in PurePosixPath(rel).parts if p)
    if any(p in ("..", ".") for p in rel.split("/")):
        raise Refused(f"{rel!r} leaves its directory")
    return parts


def inside(root: Path, rel: str) -> Path:
    """`root/rel` with every symlink resolved, when it exists and stays inside `root` (itself resolved);
    FileNotFoundError when it does not exist, Refused when it leaves `root` or `rel` is not a plain relative
    path."""
    parts = relative_parts(rel)
    real_root = root.resolve()
    real = real_root.joinpath(*parts).resolve(strict=True)
    if real != real_root and not real.is_relative_to(real_root):
        raise Refused(f"{rel}: leaves the run directory")
    return real


def media_type(run_root: Path, path: Path) -> str:
    """How a file of the run is served: the harness's report as HTML, screenshots as images, known text
    formats as plain text, anything else as bytes to download (never sniffed as HTML)."""
    suffix = path.suffix.lower()
    if suffix in IMAGE_TYPES:
        return IMAGE_TYPES[suffix]
    if path.name == REPORT_NAME and _report_place(run_root, path):
        return "text/html; charset=utf-8"
    if path.name == HISTORY_NAME and _history_place(run_root, path):
        return "text/html; charset=utf-8"
    if suffix in TEXT_SUFFIXES or path.name in (REPORT_NAME, HISTORY_NAME):
        return "text/plain; charset=utf-8"
    return "application/octet-stream"


def _report_place(run_root: Path, path: Path) -> bool:
    rel = path.relative_to(run_root.resolve()).parts
    return len(rel) == 1 or (len(rel) == 3 and rel[0] == "reports")


def _history_place(run_root: Path, path: Path) -> bool:
    # `farm history` writes `<runs>/history/<label>-<newest>/history.html`; its links lead up to the runs' records.
    # A run that happens to be called `history` (it has a manifest) keeps its files as text.
    root = run_root.resolve()
    rel = path.relative_to(root).parts
    return root.name == HISTORY_DIR and len(rel) == 2 and not exists(manifest_path(root))


def exists(path: Path, *, file: bool = False) -> bool:
    """Whether `path` exists (is a regular file, with `file`); False, not an error, when it cannot be looked at."""
    try:
        return path.is_file() if file else path.exists()
    except OSError:
        return False


def list_dir(path: Path) -> list[tuple[str, bool]]:
    """A directory's entries as (name, is a directory), sorted; entries that cannot be read are left out."""
    out: list[tuple[str, bool]] = []
    try:
        with os.scandir(path) as entries:
            for entry in entries:
                try:
                    out.append((entry.name, entry.is_dir()))
                except OSError:
                    continue
    except OSError:
        return []
    return sorted(out)
