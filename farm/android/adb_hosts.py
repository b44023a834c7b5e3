"""Lost hosts: an adb server that does not answer, said in one line with the phones it had on the last run.

A host that went away takes its phones with it; the line that says so names them, so the morning knows which
phones the night did without. What a server "had" comes from the run manifests (`phones[].adb_server`): the
newest run that saw phones on it. Looking it up stays cheap on a runs directory of years of nights: one `stat` per
run directory, and only the newest `SCAN_RUNS` manifests are read.
"""

from __future__ import annotations

import heapq
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from farm.android.devices import UnreachableServer

SCAN_RUNS = 30
"""Manifests read at most (the newest by modification time): a host gone for longer is named without phones."""
MAX_MANIFEST_BYTES = 8 * 1024 * 1024
"""A bigger manifest.json is not read (a real one is tens of KB even with a thousand tasks)."""
MAX_NAMED = 10
"""Phones named in a line at most; the rest are counted."""


@dataclass(frozen=True)
class LastSeen:
    """The phones an adb server had on the newest run that saw phones on it."""

    run_id: str
    phones: list[str]
    """Each as `<name> (<serial>)` (just the serial when the manifest has no name), in the manifest's order."""


def last_seen(runs_dir: Path, addresses: Iterable[str], *, label: str | None = None,
              scan: int = SCAN_RUNS) -> dict[str, LastSeen]:
    """For each adb server address (`host:port`), the phones the newest run with phones on it saw there; an
    address no run among the newest `scan` saw is left out. `label`: only runs of that label (a sweep's night
    history). Never raises: an unreadable runs directory or manifest only means less is known."""
    wanted = set(addresses)
    if not wanted:
        return {}
    runs = _newest_manifests(runs_dir, scan)
    out: dict[str, LastSeen] = {}
    for run_id, data in runs:
        if label is not None and data.get("label") != label:
            continue
        phones = data.get("phones")
        seen: dict[str, list[str]] = {}
        for phone in phones if isinstance(phones, list) else []:
            if not isinstance(phone, dict):
                continue
            address, serial, name = phone.get("adb_server"), phone.get("serial"), phone.get("name")
            if address in wanted and address not in out and isinstance(serial, str):
                shown = f"{name} ({serial})" if isinstance(name, str) and name and name != serial else serial
                seen.setdefault(str(address), []).append(shown)
        out.update({address: LastSeen(run_id, phones) for address, phones in seen.items()})
        if wanted <= out.keys():
            break
    return out


def _newest_manifests(runs_dir: Path, scan: int) -> list[tuple[str, dict[str, object]]]:
    """(run id, manifest JSON) of the newest `scan` runs, newest first (by `created_at`, which a later
    `farm report` of an old run does not change, unlike the file's modification time)."""
    stamped: list[tuple[float, Path]] = []
    try:
        with os.scandir(runs_dir) as entries:
            for entry in entries:
                path = Path(entry.path) / "manifest.json"
                try:
                    info = path.stat()
                except OSError:
                    continue  # not a run (history/, a stray file) or not readable
                if info.st_size <= MAX_MANIFEST_BYTES:
                    stamped.append((info.st_mtime, path))
    except OSError:
        return []
    read: list[tuple[str, float, str, dict[str, object]]] = []
    for mtime, path in heapq.nlargest(scan, stamped):
        try:
            data = json.loads(path.read_bytes())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            created = data.get("created_at")
            read.append((created if isinstance(created, str) else "", mtime, path.parent.name, data))
    # ISO-8601 UTC stamps of one format sort as text; the modification time breaks ties (and orders stampless ones).
    read.sort(key=lambda r: (r[0], r[1]), reverse=True)
    return [(run_id, data) for _created, _mtime, run_id, data in read]


def lost_host_line(down: UnreachableServer, seen: LastSeen | None) -> str:
    """One line for an adb server that did not answer, with the phones it had on the last run that saw any
    (the clause is left out when no run did): `adb server 10.0.0.2:5037 unreachable: connection refused (no adb
    server listens there) — phones it had on the last run (20250101-013000-nightly): Pixel 7 · 5554
    (emulator-5554), …`."""
    line = f"adb server {down.address} unreachable: {down.error}"
    if seen is None or not seen.phones:
        return line
    named = ", ".join(seen.phones[:MAX_NAMED])
    more = len(seen.phones) - MAX_NAMED
    if more > 0:
        named += f" and {more} more"
    return f"{line} — phones it had on the last run ({seen.run_id}): {named}"
