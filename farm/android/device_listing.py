"""What `farm devices --json` prints: every phone on every adb server with its health verdict."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from farm.android.health import PhoneHealth


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


class DeviceListing(BaseModel):
    """`farm devices --json`."""

    model_config = ConfigDict(extra="forbid")

    devices: list[DeviceRow]
    """Every phone found, in discovery order."""


def device_listing(healths: Sequence[PhoneHealth]) -> DeviceListing:
    """The listing of what the gate found."""
    return DeviceListing(devices=[
        DeviceRow(name=h.name or h.serial, serial=h.serial, server=h.server, state=h.state,
                  health="ok" if h.ok else "left out", reason=h.reason, model=h.model, android=h.android,
                  battery=h.battery, charging=h.charging, free_mb=h.free_mb, agent_version=h.agent_version)
        for h in healths
    ])
