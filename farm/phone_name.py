"""A phone's one name on every surface (reports, junit.xml, history, `farm run`/`farm sweep` lines, `farm devices`).

The name is the operator's label from farm.yaml (`phone_labels: {SERIAL: LABEL}`) when there is one, else the
model and a short form of the serial: `Pixel 7 · 45949`. It depends on the phone alone — never on which other
phones a run has — so the same phone keeps its name, and its JUnit class names, from run to run. Only when two
phones of one run would share a name (same label, or same model and short serial) do those two take their whole
serial instead of the short form. The name is recorded in the run's manifest (`PhoneEntry.name`) when the phone
is discovered; runs recorded before that get it computed from the manifest's model and farm.yaml.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

SEP = " · "
"""Between the model and the short serial."""
UNKNOWN_MODEL = "device"
"""Stands for the model when the phone did not say it."""
SHORT_LEN = 5
"""Characters of a long hardware serial kept (its end: phones of one batch share the start)."""
_LOOPBACK = re.compile(r"(127\.\d+\.\d+\.\d+|localhost|::1|\[::1\])")
_EMULATOR = re.compile(r"emulator-(\d+)")
_MDNS = re.compile(r"adb-([^.-]+)-[^.]*\._adb-tls-(?:connect|pairing)\._tcp\.?")


def short_serial(serial: str) -> str:
    """A short form of a serial, the same whatever other phones there are.

    `127.0.0.1:45949` → `45949` (a phone behind a local port: the port tells it apart), `emulator-5554` → `5554`,
    a network phone `192.168.1.23:5555` stays whole (its address is its identity), an mDNS serial is its
    hardware serial's end, a hardware serial over 8 characters is its last 5, and a serial qualified by its adb
    server (`<serial>@<host:port>`, two hosts with one serial) keeps the server: `5554@10.0.0.2:5037`.
    """
    base, at, server = serial.partition("@")
    short = _short(base)
    return f"{short}@{server}" if at else short


def _short(serial: str) -> str:
    host, colon, port = serial.rpartition(":")
    if colon and host and port.isdigit():
        return port if _LOOPBACK.fullmatch(host) else serial
    if m := _EMULATOR.fullmatch(serial):
        return m.group(1)
    if m := _MDNS.fullmatch(serial):
        serial = m.group(1)
    return serial if len(serial) <= 8 else serial[-SHORT_LEN:]


def label_for(serial: str, labels: Mapping[str, str]) -> str | None:
    """The operator's label of a phone: by its serial as the farm names it, else by its adb serial (the part
    before `@`); None when there is none (a blank label is none)."""
    for key in (serial, serial.partition("@")[0]):
        label = labels.get(key)
        if isinstance(label, str) and label.strip():
            return " ".join(label.split())
    return None


def phone_name(serial: str, model: str | None, labels: Mapping[str, str] | None = None) -> str:
    """The stable name of one phone: its farm.yaml label, else `<model> · <short serial>`."""
    return label_for(serial, labels or {}) or f"{model or UNKNOWN_MODEL}{SEP}{short_serial(serial)}"


def distinct(names: Mapping[str, str]) -> dict[str, str]:
    """Serial → name, with names that two serials share made apart by the whole serial (in place of the short
    form when the name ends with it, else after the name)."""
    counts: dict[str, int] = {}
    for name in names.values():
        counts[name] = counts.get(name, 0) + 1
    out = {}
    for serial, name in names.items():
        if counts[name] > 1:
            suffix = SEP + short_serial(serial)
            name = (name.removesuffix(suffix) if name.endswith(suffix) else name) + SEP + serial
        out[serial] = name
    return out


def phone_names(phones: Iterable[tuple[str, str | None]], labels: Mapping[str, str] | None = None) -> dict[str, str]:
    """Serial → stable name for (serial, model) pairs, distinct over them."""
    return distinct({serial: phone_name(serial, model, labels) for serial, model in phones})


def adb_serial(serial: str) -> str:
    """The serial its adb server knows the phone by (a farm name `<serial>@<host:port>` without the server)."""
    return serial.partition("@")[0]


def caption(name: str, serial: str, server: str) -> str:
    """`<name> (<adb serial> on <adb server>)`: how a line a person reads names a phone."""
    where = adb_serial(serial) + (f" on {server}" if server else "")
    return f"{name} ({where})"


@dataclass(frozen=True)
class PhoneId:
    """A phone as the surfaces show it: its stable name, serial and adb server."""

    serial: str
    name: str
    server: str = ""
    """`host:port` of the adb server that reaches it; empty when unknown."""
    model: str | None = None


def from_manifests(manifests: Iterable[Mapping[str, object]],
                   extra: Iterable[tuple[str, str | None]] = ()) -> dict[str, PhoneId]:
    """Serial → PhoneId over runs' manifests (as JSON objects, oldest first: a later run's name, server and model
    win), plus `extra` (serial, model) phones no manifest lists (records only). A manifest written before names
    were recorded gets each phone's name computed from its model and the farm.yaml labels it recorded."""
    found: dict[str, PhoneId] = {}
    for data in manifests:
        config = data.get("config")
        labels = config.get("phone_labels") if isinstance(config, dict) else None
        phones = data.get("phones")
        for p in phones if isinstance(phones, list) else []:
            serial = p.get("serial") if isinstance(p, dict) else None
            if not isinstance(p, dict) or not isinstance(serial, str) or not serial:
                continue
            before = found.get(serial)
            model = p.get("model") if isinstance(p.get("model"), str) else None
            model = model or (before.model if before else None)
            name = p.get("name")
            if not isinstance(name, str) or not name.strip():
                name = phone_name(serial, model, labels if isinstance(labels, dict) else None)
            server = p.get("adb_server")
            server = server if isinstance(server, str) and server else (before.server if before else "")
            found[serial] = PhoneId(serial, name, server, model)
    for serial, model in extra:
        if serial not in found:
            found[serial] = PhoneId(serial, phone_name(serial, model), "", model)
    names = distinct({s: p.name for s, p in found.items()})
    return {s: PhoneId(s, names[s], p.server, p.model) for s, p in found.items()}
