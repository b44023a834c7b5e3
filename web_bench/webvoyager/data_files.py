"""Placing the pinned WebVoyager files in a data directory: download (`--fetch`) or local copies (`--from DIR`).

Every file is checked against its pinned SHA-256 before it appears under its name, so a data directory only
ever holds verified files or the files it held before: a good file is never replaced, a bad download or copy
leaves nothing behind, and files appear only once every missing one has been verified (all or nothing).
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

import httpx
from pydantic import BaseModel, ConfigDict

from farm.errors import FarmError
from farm.fsutil import new_file_mode
from web_bench.webvoyager.dataset import DATA_FILES, DATA_HINT, DataFile, locate, read_verified, sha256_bytes

DATA_ENV = "FARM_WEBVOYAGER_DATA"
"""Environment variable naming the data directory."""

FETCH_HINT = "retry `farm webvoyager data --fetch`, or take verified copies with `farm webvoyager data --from DIR`"
URL_HINT = "use an https:// URL (plain http only on 127.0.0.1, ::1 or localhost)"
TIMEOUT_S = 60.0
"""Per-request network timeout of a download."""

Action = Literal["kept", "fetched", "copied"]


class FileStatus(BaseModel):
    """Whether one pinned file is in a data directory with the pinned content."""

    model_config = ConfigDict(extra="forbid")

    name: str
    """The file's data-directory name."""
    present: bool
    """Whether a file under one of its accepted names exists."""
    sha_ok: bool
    """Whether its SHA-256 is the pinned one (false when absent)."""
    sha256: str | None = None
    """SHA-256 of the file found; null when absent or unreadable."""
    path: str | None = None
    """The file found (an accepted alias name counts)."""


class Placed(BaseModel):
    """What `fetch` / `copy_from` did with one pinned file."""

    model_config = ConfigDict(extra="forbid")

    name: str
    """The file's data-directory name."""
    action: Action
    """`kept`: a verified file was already there (not downloaded or copied again); else where it came from."""
    source: str
    """URL or path the bytes came from (the existing path for `kept`)."""
    sha256: str
    """Its SHA-256 (the pinned one)."""


Progress = Callable[[str], None]
"""Receives one human-readable line per file (before a download starts, and once the file is verified)."""


def default_data_dir() -> Path:
    """`$FARM_WEBVOYAGER_DATA`, else `~/.cache/agent-farm/webvoyager`."""
    configured = os.environ.get(DATA_ENV, "").strip()
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "agent-farm" / "webvoyager"


def status(dest: Path) -> list[FileStatus]:
    """Every pinned file's presence and hash check in `dest`."""
    return [_status(dest, entry) for entry in DATA_FILES]


def _status(dest: Path, entry: DataFile) -> FileStatus:
    path = locate(dest, entry)
    if path is None:
        return FileStatus(name=entry.name, present=False, sha_ok=False)
    try:
        got: str | None = sha256_bytes(path.read_bytes())
    except OSError:
        got = None
    return FileStatus(name=entry.name, present=True, sha_ok=got == entry.sha256, sha256=got, path=str(path))


def check_url(url: str) -> None:
    """Refuse (FarmError) anything but https, or plain http to a loopback address; never credentials in a URL."""
    parts = urlsplit(url)
    host = parts.hostname
    if parts.username is not None or parts.password is not None:
        # Named without the URL itself: it carries a credential that must not reach any message or log.
        raise FarmError("download URL with a user name or password refused", hint="put no credentials in the URL")
    if host and (parts.scheme == "https" or (parts.scheme == "http" and _is_loopback(host))):
        return
    raise FarmError(f"{url}: refused download URL", hint=URL_HINT)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def fetch(dest: Path, *, base_url: str | None = None, progress: Progress | None = None) -> list[Placed]:
    """Download every pinned file that `dest` lacks (or holds with other content) and place it once verified.

    `base_url` replaces the raw-GitHub URL: a file is then fetched from `base_url + "/" + its name`.
    """
    base = base_url.rstrip("/") if base_url is not None else None
    if base is not None:
        check_url(base + "/")
    urls = {entry.name: f"{base}/{entry.name}" if base is not None else entry.url for entry in DATA_FILES}
    for url in urls.values():
        check_url(url)
    # A loopback test server must not be reached through a proxy from the environment.
    loopback = base is not None and urlsplit(base).scheme == "http"
    dest.mkdir(parents=True, exist_ok=True)
    with httpx.Client(
        timeout=TIMEOUT_S, follow_redirects=True, trust_env=not loopback,
        event_hooks={"request": [lambda request: check_url(str(request.url))]},  # every redirect hop too
    ) as client:
        def obtain(entry: DataFile) -> tuple[Path, str]:
            if progress is not None:
                progress(f"{entry.name}: fetching {urls[entry.name]}")
            return _download(client, urls[entry.name], entry, dest)

        return _place(dest, progress, "fetched", obtain)


def copy_from(src_dir: Path, dest: Path, *, progress: Progress | None = None) -> list[Placed]:
    """Copy every pinned file that `dest` lacks from `src_dir` (data-directory or alias names), verified."""
    if not src_dir.is_dir():
        raise FarmError(f"{src_dir}: not a directory", hint="pass --from a directory holding the WebVoyager files")
    dest.mkdir(parents=True, exist_ok=True)
    return _place(dest, progress, "copied", lambda entry: _copy(src_dir, entry, dest))


def _place(
    dest: Path, progress: Progress | None, action: Action, obtain: Callable[[DataFile], tuple[Path, str]]
) -> list[Placed]:
    """Obtain every file that is not already good into a verified temp file (reporting each to `progress` as
    it is verified), then rename them all into place; on any refusal no temp file is left and nothing moves."""
    placed: list[Placed] = []
    staged: list[tuple[Path, DataFile]] = []
    try:
        for entry in DATA_FILES:
            current = _status(dest, entry)
            if current.sha_ok and current.path is not None:
                done = Placed(name=entry.name, action="kept", source=current.path, sha256=entry.sha256)
            else:
                tmp, source = obtain(entry)
                staged.append((tmp, entry))
                done = Placed(name=entry.name, action=action, source=source, sha256=entry.sha256)
            placed.append(done)
            if progress is not None:
                progress(_line(done))
        for tmp, entry in staged:
            os.replace(tmp, dest / entry.name)
    finally:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
    return placed


def _line(done: Placed) -> str:
    if done.action == "kept":
        return f"{done.name}: already verified ({done.source})"
    return f"{done.name}: {done.action} from {done.source}, SHA-256 {done.sha256} verified"


def _temp(dest: Path, entry: DataFile) -> tuple[int, Path]:
    fd, tmp = tempfile.mkstemp(prefix=f".{entry.name}.", suffix=".part", dir=dest)
    os.fchmod(fd, new_file_mode())  # mkstemp makes 0600; the placed file gets the mode any new file would
    return fd, Path(tmp)


def _download(client: httpx.Client, url: str, entry: DataFile, dest: Path) -> tuple[Path, str]:
    """Stream `url` into a temp file in `dest`, hashing as it arrives; refuse anything but the pinned bytes."""
    fd, tmp = _temp(dest, entry)
    digest = hashlib.sha256()
    size = 0
    try:
        with os.fdopen(fd, "wb") as out:
            try:
                with client.stream("GET", url) as response:
                    if response.status_code != 200:
                        raise FarmError(f"{entry.name}: {url} answered HTTP {response.status_code}", hint=FETCH_HINT)
                    for chunk in response.iter_bytes():
                        size += len(chunk)
                        digest.update(chunk)
                        if size > entry.size:
                            raise FarmError(
                                f"{entry.name}: {url} sent more than the pinned {entry.size} bytes "
                                f"(pinned SHA-256 {entry.sha256})", hint=FETCH_HINT,
                            )
                        out.write(chunk)
            except httpx.HTTPError as exc:
                raise FarmError(
                    f"{entry.name}: download from {url} broke off after {size} of {entry.size} bytes "
                    f"({type(exc).__name__}: {exc}); SHA-256 of what arrived {digest.hexdigest()}, "
                    f"pinned {entry.sha256}", hint=FETCH_HINT,
                ) from None
            out.flush()
            os.fsync(out.fileno())
        got = digest.hexdigest()
        if got != entry.sha256:
            raise FarmError(
                f"{entry.name}: {url} gave SHA-256 {got} ({size} bytes), pinned {entry.sha256} ({entry.size} bytes)",
                hint=FETCH_HINT,
            )
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp, url


def _copy(src_dir: Path, entry: DataFile, dest: Path) -> tuple[Path, str]:
    """Read the file from `src_dir`, check it, and write it to a temp file in `dest`."""
    path = locate(src_dir, entry)
    if path is None:
        names = " or ".join(entry.candidates)
        raise FarmError(f"{src_dir}: no {names} ({entry.what})", hint=DATA_HINT)
    raw = read_verified(path, entry)
    fd, tmp = _temp(dest, entry)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(raw)
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp, str(path)
