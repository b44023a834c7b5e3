"""Which versions produced a result: before a phone's first unit, the version of the agent app and of every app the
phone's selected tasks touch, read with `dumpsys package <pkg>` and recorded in the manifest (`PhoneEntry.apps`).

`parse_version` is pure: it reads the `Package [<pkg>]` block of the `Packages:` section. Real dumps name the same
package earlier, in resolver tables, key sets and queries, and a `versionName=` seen there is not the package's;
`versionCode=N minSdk=… targetSdk=…` shares a line, `versionName=` has its own; a dump saved on a PC may start with a
UTF-8 BOM (real captures: `../shared/data/state/packages/`).

`read_versions` asks one phone, bounded: at most `MAX_PACKAGES` packages, at most `MAX_OUTPUT_BYTES` read of each
dump (`devices.shell` would read a dump whole, however long), each within `READ_TIMEOUT_S`, all within
`PHONE_BUDGET_S`. It never raises for the phone's trouble: a package not installed, a dump cut before its block, or
a phone that stops answering leaves that package out — versions are evidence beside the results, never a reason to
hold a sweep back.
"""

from __future__ import annotations

import codecs
import re
import shlex
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from farm.manifest import AppVersion

if TYPE_CHECKING:
    from adbutils import AdbDevice

    from farm.android.executor import ResolvedTask
    from farm.sweep.runner import Fleet

MAX_PACKAGES = 40
"""Packages read per phone (the agent app first, then the tasks' apps by name): a task set naming hundreds of apps
must not make the start of a sweep wait on hundreds of dumps."""
MAX_OUTPUT_BYTES = 2 * 1024 * 1024
"""Bytes read of one `dumpsys package <pkg>`: the resolver tables before `Packages:` of a large app are some hundred
KB; a package whose block lies beyond this is left out rather than read without end."""
READ_TIMEOUT_S = 15.0
"""Seconds one dump may take to arrive (and the longest silence within it)."""
PHONE_BUDGET_S = 60.0
"""Seconds all of one phone's dumps may take together; the packages not read by then are left out."""
_CHUNK = 64 * 1024

_PACKAGE = re.compile(r"[A-Za-z][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*")
"""An Android package name (`android`, `com.tencent.mm`): anything else (an unresolved `{app:notes}`) is no
package to ask about."""
_INSTALLED = "installed:"
_VERSION_CODE = re.compile(r"^\s*versionCode=(\d+)(?:\s|$)", re.MULTILINE)
_VERSION_NAME = re.compile(r"^\s*versionName=(.*)$", re.MULTILINE)


def is_package(name: str) -> bool:
    """Whether `name` is a package name that may be asked about (at most 255 characters, Android's limit)."""
    return len(name) <= 255 and _PACKAGE.fullmatch(name) is not None


def _block(text: str, package: str) -> str | None:
    """The lines of the first `Package [<package>] (…):` block (the `Packages:` section comes before `Hidden system
    packages:`, whose block is the factory version), up to the next line indented no deeper than its header."""
    header = re.search(rf"^([ \t]*)Package \[{re.escape(package)}\][^\n]*$", text, re.MULTILINE)
    if header is None:
        return None
    indent = len(header.group(1))
    start = end = header.end() + 1
    while end < len(text):
        stop = text.find("\n", end)
        stop = len(text) if stop < 0 else stop
        line = text[end:stop]
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        end = stop + 1
    return text[start:end]


def parse_version(text: str, package: str) -> AppVersion | None:
    """The version `dumpsys package <package>` output gives for `package`; None when it has no block for it (not
    installed: `Unable to find package`, or the output was cut before the block)."""
    block = _block(text.lstrip("\ufeff").replace("\r\n", "\n"), package)
    if block is None:
        return None
    code = _VERSION_CODE.search(block)
    name = _VERSION_NAME.search(block)
    version_name = name.group(1).strip() if name else ""
    return AppVersion(package=package, version_name=version_name or None,
                      version_code=int(code.group(1)) if code else None)


def task_packages(tasks: Iterable[ResolvedTask]) -> list[str]:
    """Every package the tasks touch on one phone, sorted: their (resolved) `apps`, the packages their capabilities
    resolved to, and their `requires: installed:<pkg>`."""
    found: set[str] = set()
    for rt in tasks:
        found.update(rt.task.apps)
        found.update(rt.apps.values())
        found.update(r.removeprefix(_INSTALLED) for r in rt.task.requires if r.startswith(_INSTALLED))
    return sorted(p for p in found if is_package(p))


def _dump(device: AdbDevice, package: str, timeout: float) -> str:
    """`dumpsys package <package>`, at most MAX_OUTPUT_BYTES of it, within `timeout` (the argument quoted as
    `devices.shell` quotes it)."""
    conn = device.shell(shlex.join(["dumpsys", "package", package]), stream=True, timeout=timeout)
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    parts: list[str] = []
    size = 0
    until = time.monotonic() + timeout
    try:
        sock = conn.conn
        while size < MAX_OUTPUT_BYTES:
            left = until - time.monotonic()
            if left <= 0:
                break
            sock.settimeout(left)
            data = sock.recv(min(_CHUNK, MAX_OUTPUT_BYTES - size))
            if not data:
                break
            size += len(data)
            parts.append(decoder.decode(data))
    finally:
        conn.close()
    parts.append(decoder.decode(b"", final=True))
    return "".join(parts)


def read_versions(device: AdbDevice, packages: Iterable[str], *, limit: int = MAX_PACKAGES,
                  budget_s: float = PHONE_BUDGET_S) -> list[AppVersion]:
    """The versions of `packages` installed on the phone, in the order given (duplicates and names that are no
    package dropped, at most `limit` asked about); a package not installed, not answered in time or not found
    within the bytes read is absent. Never raises for the phone's trouble."""
    from adbutils import AdbError

    wanted = list(dict.fromkeys(p for p in packages if is_package(p)))[:limit]
    until = time.monotonic() + budget_s
    out: list[AppVersion] = []
    for package in wanted:
        left = until - time.monotonic()
        if left <= 0:
            break
        try:
            text = _dump(device, package, min(READ_TIMEOUT_S, left))
        except (AdbError, OSError):
            continue  # this package's version is unknown; the phone's results still count
        found = parse_version(text, package)
        if found is not None:
            out.append(found)
    return out


def fleet_versions(fleet: Fleet, agent_package: str | None) -> dict[str, list[AppVersion]]:
    """Serial → the versions of the agent app (`agent_package`: the instrument profile's package; None when no
    on-device agent runs) and of the apps its resolved tasks touch, for every phone with a slot, phones read in
    parallel (as `gather_fleet` gates them)."""
    slots = list(fleet.slots.values())

    def one(serial: str) -> list[AppVersion]:
        slot = fleet.slots[serial]
        return read_versions(slot.device, [*([agent_package] if agent_package else []),
                                           *task_packages(slot.resolved.values())])

    with ThreadPoolExecutor(max_workers=max(1, min(16, len(slots)))) as pool:
        return dict(zip((s.serial for s in slots), pool.map(one, [s.serial for s in slots]), strict=True))
