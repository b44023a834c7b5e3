"""The start state read before an agent starts, over a phone answered in memory: setup runs only when the goal
already holds, the goal is read again until the setup has taken effect, and a setup the phone cannot run leaves the
attempt an invalid start that says why."""

from __future__ import annotations

from farm.sweep.start_state import read_start_state
from farm.taskset.model import Task

TASK = Task.model_validate({
    "id": "settings-bluetooth-on", "goal": "帮我把蓝牙打开", "category": "write", "expect": "succeeded",
    "checks": [{"type": "state", "probe": "setting_global:bluetooth_on", "op": "changed", "value": "1"}],
    "goalState": [{"probe": "setting_global:bluetooth_on", "op": "equals", "value": "1"}],
    "setup": ["bluetooth_off"],
})


class SlowRadio:
    """A phone whose Bluetooth switches off a few reads after `svc bluetooth disable`, as a real radio takes time."""

    def __init__(self, on: bool, reads_to_settle: int = 0, broken: bool = False) -> None:
        self.on, self.pending, self.broken = on, -1, broken
        self.reads_to_settle = reads_to_settle
        self.ran: list[list[str]] = []

    def __call__(self, argv: list[str]) -> str:
        self.ran.append(argv)
        if argv[0] == "svc":
            if self.broken:
                raise ConnectionResetError("link lost")
            self.pending = self.reads_to_settle
            return ""
        if self.pending == 0:
            self.on = False
        self.pending -= 1
        return "1\n" if self.on else "0\n"


def _read(phone: SlowRadio, task: Task = TASK) -> tuple[str | None, str | None, str | None]:
    ticks = iter(range(1000))
    state = read_start_state(lambda _t: phone, [task], clock=lambda: next(ticks) * 0.5, sleep=lambda _s: None)
    reading = state.before[task.id]["setting_global:bluetooth_on"]
    return reading.value, state.invalid.get(task.id), state.setups.get(task.id)


def test_a_phone_away_from_the_goal_runs_no_setup() -> None:
    phone = SlowRadio(on=False)
    assert _read(phone) == ("0", None, None)
    assert [argv[0] for argv in phone.ran] == ["settings"]


def test_setup_waits_for_the_radio_to_switch_then_starts_from_the_new_reading() -> None:
    phone = SlowRadio(on=True, reads_to_settle=3)
    value, invalid, setup = _read(phone)
    assert (value, invalid) == ("0", None)
    assert setup is not None and setup.startswith("setup reached a start state (svc bluetooth disable)")
    assert [argv[0] for argv in phone.ran] == ["settings", "svc", "settings", "settings", "settings", "settings"]


def test_a_radio_that_never_switches_is_an_invalid_start_after_the_settle_time() -> None:
    phone = SlowRadio(on=True, reads_to_settle=10_000)
    value, invalid, setup = _read(phone)
    assert value == "1" and setup is None
    assert invalid is not None and invalid.endswith("setup (svc bluetooth disable) did not reach a start state")
    # Bounded: reads every half second for SETTLE_S (5 s) of the injected clock, then gives up.
    assert 5 <= sum(argv[0] == "settings" for argv in phone.ran) <= 12


def test_a_setup_the_link_drops_is_an_invalid_start_that_names_the_error() -> None:
    value, invalid, setup = _read(SlowRadio(on=True, broken=True))
    assert value == "1" and setup is None
    assert invalid is not None and invalid.endswith(
        "setup (svc bluetooth disable: ConnectionResetError: link lost) did not reach a start state")
