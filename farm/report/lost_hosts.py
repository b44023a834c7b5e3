"""The farm hosts a run lost, read once from its manifest: every surface (the report under its headline, the
notification) renders this list.

A sweep notes each adb server that did not answer — at the start or during the run — as
`adb server unreachable: host:port: why`; the phones the run had on that server are in the manifest's `phones`."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from farm import manifest as mf

UNREACHABLE_NOTE = "adb server unreachable: "
"""How a sweep's manifest notes a lost adb server."""


class LostHost(BaseModel):
    """An adb server a run lost."""

    model_config = ConfigDict(extra="forbid")

    server: str
    """`host:port` as farm.yaml lists it."""
    reason: str
    """What the connection said (bounded), and `(lost during the run)` when it went away midway."""
    phones: list[str] = []
    """The run's phones on that server, by name (none when it was lost before any phone was found there)."""

    def words(self) -> str:
        """`adb server h:p unreachable: why — its phones: A, B`."""
        had = f" — its phones: {', '.join(self.phones)}" if self.phones else ""
        return f"adb server {self.server} unreachable: {self.reason}{had}"


def lost_hosts(manifest: mf.Manifest) -> list[LostHost]:
    """The run's lost hosts, in the order it noted them (one per server)."""
    out: dict[str, LostHost] = {}
    for note in manifest.notes:
        if note.startswith(UNREACHABLE_NOTE):
            server, _, reason = note.removeprefix(UNREACHABLE_NOTE).partition(": ")
            phones = [p.name or p.serial for p in manifest.phones if p.adb_server == server]
            out.setdefault(server, LostHost(server=server, reason=reason, phones=phones))
    return list(out.values())
