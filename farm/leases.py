"""Per-phone leases: a run or sweep holds the phones it drives, and nobody else drives them meanwhile.

A lease is one small JSON file per phone (`PhoneLease`) in the farm's lease directory (`leases.dir` in farm.yaml,
else `FARM_LEASES_DIR`, else `$XDG_STATE_HOME/agent-farm/leases`): every controller that points at the same
directory sees the same leases, whatever its runs directory. The file names its holder (kind, run, label, pid,
host, user) and carries a heartbeat its holder's process refreshes every `heartbeat_s`.

- **Taking** is a check-and-write under an exclusive `flock` on `<dir>/.leases.lock` (held for microseconds), so
  two controllers asking for one phone at once never both get it. The file itself is replaced atomically (written
  beside, renamed over), so a reader never sees half a lease.
- **A dead holder's lease is taken over, and said so**: one whose heartbeat is older than `stale_s`, or whose
  process is gone from this host. Why it was taken over goes to the caller, which says it.
- **Releasing** removes the file only while it still names this holder (by a token only this process knows).
"""

from __future__ import annotations

import fcntl
import getpass
import hashlib
import os
import re
import secrets
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from farm.errors import FarmError
from farm.manifest import utc_now
from farm.redact import redact_argv

LEASES_ENV = "FARM_LEASES_DIR"
"""Environment variable naming the lease directory when farm.yaml does not."""
_LOCK_NAME = ".leases.lock"
_MAX_LEASE_BYTES = 64 * 1024
"""A lease is a few hundred bytes; a bigger file is not one of ours and is read as no lease."""
_MAX_LEASE_FILES = 10_000
"""At most this many lease files are listed (`farm devices`): a directory of more is not a farm's."""
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")

HolderKind = Literal["sweep", "run"]


class LeaseSettings(BaseModel):
    """farm.yaml `leases:` — where phone leases live and when a silent holder counts as dead."""

    model_config = ConfigDict(extra="forbid")

    dir: Annotated[str, Field(min_length=1, max_length=4096)] | None = None
    """The lease directory, shared by every controller that drives these phones (null: `FARM_LEASES_DIR`, else
    `$XDG_STATE_HOME/agent-farm/leases`, i.e. `~/.local/state/agent-farm/leases`)."""
    heartbeat_s: float = Field(default=10.0, gt=0, le=3600, allow_inf_nan=False)
    """How often a holder refreshes its leases' heartbeat (seconds)."""
    stale_s: float = Field(default=60.0, gt=0, le=86400, allow_inf_nan=False)
    """A lease whose heartbeat is older than this (seconds) belongs to a dead holder and is taken over."""


class LeaseHolder(BaseModel):
    """Who holds a lease."""

    model_config = ConfigDict(extra="ignore")

    kind: HolderKind
    """`sweep` (a night's `farm sweep`) or `run` (a developer's `farm run`)."""
    run_id: str
    """The holder's run id."""
    label: str | None = None
    """The holder's `--label`, if any."""
    pid: int = Field(ge=1)
    """Process id of the holder, on `hostname`."""
    hostname: str
    """Host the holder runs on."""
    user: str
    """User the holder runs as (the numeric uid when it has no name)."""
    command: list[str] = Field(default_factory=list)
    """The holder's command line, without credentials."""


class PhoneLease(BaseModel):
    """One phone's lease file."""

    model_config = ConfigDict(extra="ignore")

    version: Literal[1] = 1
    """Format version of this file."""
    phone: str
    """The phone's serial as its adb server lists it."""
    server: str
    """The adb server (`host:port`) the phone is on."""
    holder: LeaseHolder
    """Who holds it."""
    token: str
    """A secret of the holding process: only the holder can release or refresh the lease."""
    acquired_at: str
    """ISO-8601 UTC time the lease was taken."""
    heartbeat: float
    """Unix time of the holder's last heartbeat."""

    def describe(self, now: float | None = None) -> str:
        """`sweep 20261207-nightly (label nightly), pid 12 on ctl1 as farm, since 2026-12-07T01:00:00Z, heartbeat 3 s
        ago` — the holder, in words."""
        h = self.holder
        label = f" (label {h.label})" if h.label else ""
        ago = max(0.0, (time.time() if now is None else now) - self.heartbeat)
        return (f"{h.kind} {h.run_id}{label}, pid {h.pid} on {h.hostname} as {h.user}, "
                f"since {self.acquired_at.partition('.')[0].removesuffix('Z')}Z, heartbeat {ago:.0f} s ago")


@dataclass(frozen=True)
class PhoneKey:
    """A phone as leases know it: its serial on its adb server."""

    serial: str
    """The serial its adb server lists it by."""
    server: str
    """`host:port` of that adb server."""

    def file_name(self) -> str:
        """One path component, readable and unique (a hash keeps `a:b` and `a_b` apart)."""
        raw = f"{self.server}/{self.serial}"
        digest = hashlib.sha256(raw.encode()).hexdigest()[:10]
        return f"{_UNSAFE.sub('_', self.server)}__{_UNSAFE.sub('_', self.serial)[:80]}-{digest}.json"


@dataclass(frozen=True)
class Taken:
    """A lease this process now holds; `took_over` names a dead holder's lease it replaced, and why."""

    key: PhoneKey
    took_over: str | None = None


@dataclass(frozen=True)
class Busy:
    """A phone another live holder has."""

    key: PhoneKey
    lease: PhoneLease


def leases_dir(settings: LeaseSettings) -> Path:
    """The lease directory: farm.yaml's, else `FARM_LEASES_DIR`, else the user's state directory."""
    if settings.dir:
        return Path(settings.dir)
    env = os.environ.get(LEASES_ENV)
    if env:
        return Path(env)
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "agent-farm" / "leases"


def _user() -> str:
    # getpass falls back to the password database, which a container may lack for the current uid.
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


def this_holder(kind: HolderKind, run_id: str, label: str | None, command: Sequence[str] | None = None) -> LeaseHolder:
    """A `LeaseHolder` describing this process."""
    return LeaseHolder(kind=kind, run_id=run_id, label=label, pid=os.getpid(), hostname=socket.gethostname(),
                       user=_user(), command=redact_argv(list(sys.argv if command is None else command)))


def _pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # EPERM: alive, another user's
        return False
    return False


def dead_because(lease: PhoneLease, stale_s: float, now: float | None = None) -> str | None:
    """Why `lease`'s holder counts as dead (None: alive): no heartbeat for `stale_s`, or its process is gone from
    this host."""
    now = time.time() if now is None else now
    silent = now - lease.heartbeat
    if silent > stale_s:
        return f"no heartbeat for {silent:.0f} s (over {stale_s:g} s)"
    h = lease.holder
    if h.hostname == socket.gethostname() and _pid_gone(h.pid):
        return f"its process {h.pid} on {h.hostname} is gone"
    return None


def read_lease(path: Path) -> PhoneLease | None:
    """The lease in `path`; None when missing, too large or not a lease."""
    try:
        with path.open("rb") as handle:
            data = handle.read(_MAX_LEASE_BYTES + 1)
    except OSError:
        return None
    if len(data) > _MAX_LEASE_BYTES:
        return None
    try:
        return PhoneLease.model_validate_json(data)
    except ValidationError:
        return None


def list_leases(directory: Path) -> list[PhoneLease]:
    """Every readable lease in `directory` (at most `_MAX_LEASE_FILES` files are looked at)."""
    try:
        names = sorted(p for p in os.listdir(directory) if p.endswith(".json"))[:_MAX_LEASE_FILES]
    except OSError:
        return []
    return [lease for name in names if (lease := read_lease(directory / name)) is not None]


class Leases:
    """The leases this process holds, kept alive by a heartbeat thread until `close`."""

    def __init__(self, directory: Path, holder: LeaseHolder, settings: LeaseSettings | None = None) -> None:
        self.dir = directory
        self.holder = holder
        self.settings = settings or LeaseSettings()
        self._token = secrets.token_hex(16)
        self._held: dict[PhoneKey, PhoneLease] = {}
        self._mutex = threading.Lock()
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    # -- the lock over the directory ----------------------------------------------------------------
    @contextmanager
    def _locked(self) -> Iterator[None]:
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.dir / _LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise FarmError(f"{self.dir}: cannot use the phone lease directory ({exc.strerror})",
                            hint=f"set leases.dir in farm.yaml (or {LEASES_ENV}) to a writable directory") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing drops the flock

    def _write(self, lease: PhoneLease) -> None:
        path = self.dir / lease_key(lease).file_name()
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(lease.model_dump_json() + "\n", encoding="utf-8")
        os.replace(tmp, path)

    # -- taking and giving back ---------------------------------------------------------------------
    def take(self, key: PhoneKey) -> Taken | Busy:
        """Lease `key` unless another live holder has it (then `Busy` names that holder). Taking a phone this
        process holds already is a no-op."""
        with self._mutex:
            if key in self._held:
                return Taken(key)
            with self._locked():
                there = read_lease(self.dir / key.file_name())
                took_over = None
                if there is not None and there.token != self._token:
                    why = dead_because(there, self.settings.stale_s)
                    if why is None:
                        return Busy(key, there)
                    took_over = f"took over the lease of {there.describe()}: {why}"
                now = time.time()
                lease = PhoneLease(phone=key.serial, server=key.server, holder=self.holder, token=self._token,
                                   acquired_at=utc_now(), heartbeat=now)
                self._write(lease)
                self._held[key] = lease
            self._start_heartbeat()
            return Taken(key, took_over)

    def release(self, key: PhoneKey) -> None:
        """Give `key` back (its file goes, if it still names this holder)."""
        with self._mutex:
            if self._held.pop(key, None) is None:
                return
            with self._locked():
                path = self.dir / key.file_name()
                there = read_lease(path)
                if there is not None and there.token == self._token:
                    path.unlink(missing_ok=True)

    def holds(self, key: PhoneKey) -> bool:
        """Whether this process holds `key`."""
        with self._mutex:
            return key in self._held

    def close(self) -> None:
        """Release every lease and stop the heartbeat."""
        self._stop.set()
        for key in list(self._held):
            try:
                self.release(key)
            except FarmError:
                pass  # the directory went away: the leases went with it
        if self._beat is not None:
            self._beat.join(timeout=5)

    def __enter__(self) -> Leases:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- heartbeat -------------------------------------------------------------------------------------
    def beat(self) -> None:
        """Refresh the heartbeat of every lease held (a lease another holder took over meanwhile is let go)."""
        with self._mutex, self._locked():
            now = time.time()
            for key, lease in list(self._held.items()):
                there = read_lease(self.dir / key.file_name())
                if there is None or there.token != self._token:
                    # Taken over (this process was silent past stale_s): it is not ours any more.
                    del self._held[key]
                    continue
                fresh = lease.model_copy(update={"heartbeat": now})
                self._write(fresh)
                self._held[key] = fresh

    def _start_heartbeat(self) -> None:
        if self._beat is not None:
            return
        self._beat = threading.Thread(target=self._beating, name="phone-leases", daemon=True)
        self._beat.start()

    def _beating(self) -> None:
        while not self._stop.wait(self.settings.heartbeat_s):
            try:
                self.beat()
            except (OSError, FarmError):
                pass  # a missed beat is retried; only stale_s of them lose the leases


def lease_key(lease: PhoneLease) -> PhoneKey:
    """The phone a lease is for."""
    return PhoneKey(lease.phone, lease.server)


def wait_for(leases: Leases, key: PhoneKey, *, poll_s: float = 1.0,
             on_wait: Callable[[Busy], None] = lambda _b: None) -> Taken:
    """Take `key` as soon as it is free (Ctrl-C ends the wait); `on_wait` sees the holder each time it is still
    busy."""
    while True:
        got = leases.take(key)
        if isinstance(got, Taken):
            return got
        on_wait(got)
        time.sleep(poll_s)
