"""What `farm devices --json` prints: every phone on every adb server with its health verdict, and every adb
server asked, answered or not."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from farm.android.health import PhoneHealth
from farm.leases import PhoneLease, dead_because

if TYPE_CHECKING:
    from farm.android.adb_hosts import LastSeen
    from farm.android.devices import Discovery


class DeviceRow(BaseModel):
    """One phone as the health gate saw it."""

    model_config = ConfigDict(extra="forbid")

    name: str
    """Its name on every surface (reports, junit.xml, history): the farm.yaml label, else
    `<model> · <short serial>`."""
    serial: str
    """adb serial (`<serial>@<host:port>` when two adb servers list different phones under one serial)."""
    server: str
    """The adb server it was found on (`host:port`; a run's manifest has it as `phones[].adb_server`)."""
    state: str
    """What adb reports: device, offline, unauthorized…"""
    health: Literal["ok", "left out"]
    """The gate's verdict: a run uses the phone, or leaves it out."""
    reason: str | None
    """Why it is left out (the first failing condition); null when ok."""
    model: str | None
    """ro.product.model."""
    android: str | None
    """Android release."""
    battery: int | None
    """Battery level in percent; null when unknown."""
    charging: bool | None
    """Whether it is charging; null when unknown."""
    free_mb: int | None
    """Free storage in MB; null when unknown."""
    agent_version: str | None
    """The instrument profile's agent app version; null when not installed or not checked."""
    lease: LeaseRow | None = None
    """Who holds the phone now (`farm.leases`); null when it is free."""


class LeaseRow(BaseModel):
    """A phone's lease as `farm devices` shows it."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["sweep", "run"]
    """What holds it: a sweep, or a developer's run."""
    run_id: str
    """The holder's run."""
    label: str | None
    """The holder's label (a sweep's `nightly`)."""
    pid: int
    """The holder's process, on `hostname`."""
    hostname: str
    """Where the holder runs."""
    user: str
    """Who runs it."""
    since: str
    """ISO-8601 UTC time it took the phone."""
    heartbeat_age_s: float
    """Seconds since the holder's last heartbeat."""
    dead: str | None
    """Why the holder counts as dead, so the next run takes the phone over (no heartbeat, process gone); null
    while it is alive."""

    def words(self) -> str:
        """`sweep n1 (pid 12 on ctl)`, and `— holder dead: …` when it is."""
        said = f"{self.kind} {self.run_id} (pid {self.pid} on {self.hostname})"
        return said + (f" — holder dead: {self.dead}" if self.dead else "")


def lease_rows(healths: Sequence[PhoneHealth], leases: Sequence[PhoneLease], stale_s: float) -> dict[str, LeaseRow]:
    """Serial → the lease of each phone that has one."""
    rows: dict[str, LeaseRow] = {}
    for h in healths:
        for lease in leases:
            if lease.server == h.server and h.serial in (lease.phone, f"{lease.phone}@{lease.server}"):
                holder = lease.holder
                rows[h.serial] = LeaseRow(
                    kind=holder.kind, run_id=holder.run_id, label=holder.label, pid=holder.pid,
                    hostname=holder.hostname, user=holder.user, since=lease.acquired_at,
                    heartbeat_age_s=round(max(0.0, time.time() - lease.heartbeat), 1),
                    dead=dead_because(lease, stale_s))
    return rows


class ServerRow(BaseModel):
    """One adb server asked for its phones."""

    model_config = ConfigDict(extra="forbid")

    address: str
    """`host:port`."""
    listed: bool
    """farm.yaml `adb_servers` lists it (a farm host); false for the local server when it is not listed."""
    reachable: bool
    """It answered."""
    error: str | None
    """Why it did not answer, in words; null when it answered."""
    phones: list[str]
    """Serials of the phones it lists now (as `devices[].serial`); empty when it did not answer."""
    last_run: str | None = None
    """When it did not answer: the newest run that had phones on it (its manifest's `phones[].adb_server`); null
    when no recent run did, or when it answered."""
    last_run_phones: list[str] = Field(default_factory=list)
    """The phones it had on `last_run`, each as `<name> (<serial>)`."""


class DeviceListing(BaseModel):
    """`farm devices --json`."""

    model_config = ConfigDict(extra="forbid")

    devices: list[DeviceRow]
    """Every phone found, in discovery order."""
    servers: list[ServerRow] = Field(default_factory=list)
    """Every adb server asked (the local one first, then farm.yaml's), whether it answered and its phones."""


def device_listing(healths: Sequence[PhoneHealth], discovery: Discovery | None = None,
                   seen: Mapping[str, LastSeen] | None = None,
                   leases: Mapping[str, LeaseRow] | None = None) -> DeviceListing:
    """The listing of what the gate found; with `discovery`, every server asked too (`seen`: the phones each
    unreachable one had on the last run, from `farm.android.adb_hosts.last_seen`; `leases`: `lease_rows`)."""
    rows = [
        DeviceRow(name=h.name or h.serial, serial=h.serial, server=h.server, state=h.state,
                  health="ok" if h.ok else "left out", reason=h.reason, model=h.model, android=h.android,
                  battery=h.battery, charging=h.charging, free_mb=h.free_mb, agent_version=h.agent_version,
                  lease=(leases or {}).get(h.serial))
        for h in healths
    ]
    if discovery is None:
        return DeviceListing(devices=rows)
    down = {u.address: u for u in discovery.unreachable}
    servers: list[ServerRow] = []
    for server in discovery.asked:
        address = server.address()
        gone = down.get(address)
        last = (seen or {}).get(address) if gone is not None else None
        servers.append(ServerRow(
            address=address, listed=address in discovery.listed, reachable=gone is None,
            error=gone.error if gone is not None else None,
            phones=[r.serial for r in rows if r.server == address],
            last_run=last.run_id if last is not None else None,
            last_run_phones=list(last.phones) if last is not None else [],
        ))
    return DeviceListing(devices=rows, servers=servers)
