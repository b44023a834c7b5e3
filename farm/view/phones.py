"""A run's phones as the viewer names them: the stable name every report gives a phone (`farm.phone_name`), with
its serial and adb server beside it.

Names come from `farm.phone_name.from_manifests` over the run's manifest, as the reports take them: the name
discovery recorded, computed from the model and the farm.yaml labels the manifest kept for runs recorded before
names were, and `<device> · <short serial>` for a phone only the records name. A web backend or a desktop machine
keeps its own name.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from farm import manifest as mf
from farm.errors import FarmError
from farm.phone_name import PhoneId, adb_serial, from_manifests
from farm.results.record import Record


class PhoneRef(BaseModel):
    """A device of a run as the viewer shows it (and its JSON carries it)."""

    model_config = ConfigDict(extra="forbid")

    phone: str
    """Its stable name: for a phone the farm.yaml label, else `<model> · <short serial>`; another lane's device
    (a web backend, a desktop machine) keeps its own name."""
    device: str
    """The device as records name it: a phone's serial, a web backend, a desktop machine."""
    adb_server: str = ""
    """`host:port` of the adb server that reaches the phone; empty when unknown or not a phone."""

    @property
    def where(self) -> str:
        """`<adb serial> on <adb server>`, shown beside the name; empty for a device known by its own name."""
        if self.phone == self.device and not self.adb_server:
            return ""
        return adb_serial(self.device) + (f" on {self.adb_server}" if self.adb_server else "")


def read_manifest(run_dir: Path) -> mf.Manifest | None:
    """The run's manifest, or None when it cannot be read (the run list says why)."""
    try:
        return mf.load(run_dir)
    except (FarmError, OSError):
        return None


def run_phones(manifest: mf.Manifest | None, records: Iterable[Record]) -> dict[str, PhoneId]:
    """Serial → PhoneId of every phone of the run: those its manifest lists, and android records' devices it
    does not."""
    return phones_of(manifest, {r.device for r in records if r.lane == "android"})


def phones_of(manifest: mf.Manifest | None, android_devices: Iterable[str]) -> dict[str, PhoneId]:
    """`run_phones` from the devices the android records name (what a DuckDB read of the records yields)."""
    manifests = [manifest.model_dump(mode="json")] if manifest is not None else []
    return from_manifests(manifests, [(serial, None) for serial in sorted(set(android_devices))])


def phone_ref(device: str, phones: dict[str, PhoneId]) -> PhoneRef:
    """How the viewer shows `device`: a phone by its stable name and adb server, anything else by itself."""
    found = phones.get(device)
    if found is None:
        return PhoneRef(phone=device, device=device)
    return PhoneRef(phone=found.name, device=device, adb_server=found.server)
