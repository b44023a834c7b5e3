"""How a run or sweep leases its phones (`farm.leases`) before it touches them.

A developer's `farm run` on a phone another run or sweep holds is refused with the holder named, or waits for it
(`--wait`); a sweep (or `farm run --all`) goes on with the free phones, names the busy ones, and the dispatcher
takes each one up as soon as its holder lets it go (`Dispatcher`). A lease whose holder died is taken over, and
that is said.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from farm.android.devices import FoundPhone
from farm.errors import FarmError
from farm.leases import Busy, Leases, PhoneKey, Taken, wait_for


@dataclass(frozen=True)
class BusyPhone:
    """A phone another live holder had when this run looked."""

    serial: str
    """The phone's name in this farm (as `FoundPhone.serial`)."""
    busy: Busy
    """Its lease and holder."""

    def line(self) -> str:
        """`emulator-5554 on 127.0.0.1:5037: leased by sweep …` — one line for people."""
        return f"{self.serial} on {self.busy.key.server}: leased by {self.busy.lease.describe()}"


def phone_key(phone: FoundPhone) -> PhoneKey:
    """The lease key of a phone: its serial on its adb server."""
    return PhoneKey(phone.on_server, phone.server.address())


def lease_phones(
    found: list[FoundPhone], leases: Leases, *, refuse: bool, wait: bool,
    say: Callable[[str], None] = lambda _t: None,
) -> tuple[list[FoundPhone], list[BusyPhone], list[str]]:
    """Lease each phone of `found`: (the phones leased, the busy ones, takeover lines). `refuse`: a busy phone is
    a FarmError naming its holder (a developer's run on a phone it named); `wait`: wait for it instead."""
    kept: list[FoundPhone] = []
    busy: list[BusyPhone] = []
    took_over: list[str] = []
    said: set[str] = set()

    def waiting(b: Busy) -> None:
        line = f"waiting for {b.key.serial} on {b.key.server}: leased by {b.lease.holder.kind} {b.lease.holder.run_id}"
        if line not in said:  # once per holder, not once a second
            said.add(line)
            say(line + " (Ctrl-C to stop waiting)")

    for phone in found:
        key = phone_key(phone)
        got: Taken | Busy = leases.take(key)
        if isinstance(got, Busy) and wait:
            got = wait_for(leases, key, on_wait=waiting)
        if isinstance(got, Busy):
            one = BusyPhone(phone.serial, got)
            if refuse:
                raise FarmError(one.line(), hint="wait for it with --wait, or pick another phone with --device "
                                                 "(`farm devices` shows every phone's lease)")
            busy.append(one)
            continue
        if got.took_over:
            took_over.append(f"{phone.serial}: {got.took_over}")
        kept.append(phone)
    return kept, busy, took_over
