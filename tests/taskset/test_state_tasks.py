"""The shipped tasks the phone's state verifies: every write task is checked by state where a shell can read it (or
says why not), enough tasks rest on state alone, and every state check reads a catalogue probe in a shape that probe
gives; a task's goalState says the same thing as the checks it guards."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from farm.android import state_parsers
from farm.scoring.evidence import ProbeReading
from farm.scoring.state import state_holds
from farm.taskset import placeholders
from farm.taskset.loader import LoadedTask, load_taskset
from farm.taskset.model import BEFORE_OPS, StateCheck
from farm.taskset.probes import ProbeSpec, load_catalogue, rows_value, split_key

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "fixtures" / "scripts"
GOAL_OPS = {"equals", "contains", "matches", "row"}
NO_STATE = "没有状态核对"
"""How a write task's note starts saying why it has no state check (the reason follows)."""
ROW_KEYS: dict[str, tuple[str, ...]] = {
    "dumpsys_alarm": state_parsers.ALARM_FIELDS,
    "dumpsys_audio": state_parsers.AUDIO_FIELDS,
    "dumpsys_package": state_parsers.PACKAGE_FIELDS,
    "dumpsys_notification": state_parsers.NOTIFICATION_FIELDS,
    "ls_long": state_parsers.FILE_FIELDS,
    "stat": ("size", "mtime", "type"),
    "settings_list": ("key", "value"),
    "pm_packages": ("package", "versionCode"),
}
"""Row keys of each rows format (content_query's are its probe's `--projection`)."""


@cache
def _tasks() -> tuple[LoadedTask, ...]:
    return tuple(load_taskset(REPO / "tasks"))


@cache
def _catalogue() -> dict[str, ProbeSpec]:
    return load_catalogue()


def _state_checks(lt: LoadedTask) -> list[StateCheck]:
    return [c for c in lt.task.checks if isinstance(c, StateCheck)]


def _state_only(lt: LoadedTask) -> bool:
    return bool(lt.task.checks) and all(isinstance(c, StateCheck) for c in lt.task.checks)


def _by_id(task_id: str) -> LoadedTask:
    (found,) = [lt for lt in _tasks() if lt.task.id == task_id]
    return found


def _row_keys(spec: ProbeSpec) -> tuple[str, ...] | None:
    """The keys every row of `spec` has; None for a probe that gives one value, not rows."""
    fmt = spec.parser.format
    if fmt is None:
        return None
    if fmt == "content_query":
        return tuple(state_parsers.projection_keys(spec.argv) or ())
    return ROW_KEYS[fmt]


def test_every_shipped_write_task_has_a_state_check_or_says_why_not() -> None:
    writes = [lt for lt in _tasks() if lt.task.category == "write"]
    assert len(writes) >= 25
    missing = [lt.task.id for lt in writes
               if not _state_checks(lt) and NO_STATE not in (lt.task.note or "")]
    assert not missing, f"write tasks without a state check and without a note saying why: {missing}"
    # The reason is given, not only the words: the note goes on after them.
    for lt in writes:
        note = lt.task.note or ""
        if not _state_checks(lt):
            assert len(note.split(NO_STATE, 1)[1]) > 20, lt.task.id
        else:
            assert NO_STATE not in note, f"{lt.task.id} has a state check but its note says it has none"


def test_the_contacts_number_is_checked_by_the_contacts_provider_not_by_the_list_screen() -> None:
    task = _by_id("contacts-new-draft").task
    # The contacts list shows names only: a look for the number could never pass.
    assert not any(getattr(c, "text", None) == "10086" for c in task.checks)
    (state,) = _state_checks(_by_id("contacts-new-draft"))
    assert (state.probe, state.op, state.where) == ("contacts", "row", {"display_name": "{marker}", "data1": "10086"})


def test_at_least_twelve_tasks_rest_on_the_phones_state_alone_each_with_a_script() -> None:
    only = [lt for lt in _tasks() if _state_only(lt)]
    assert len(only) >= 12, [lt.task.id for lt in only]
    assert all(lt.directory == "write" and lt.task.expect == "succeeded" for lt in only)
    # The scripted policy can do each one (tests/sweep/test_state_tasks_e2e.py runs them on a virtual phone).
    assert not [lt.task.id for lt in only if not (SCRIPTS / f"{lt.task.id}.yaml").is_file()]
    # Both pools: about 30 % of them are held out.
    held = sum(lt.task.partition == "holdout" for lt in only)
    assert 0.2 * len(only) <= held <= 0.4 * len(only)


def _every_state_key(lt: LoadedTask) -> list[tuple[str, StateCheck | None]]:
    out: list[tuple[str, StateCheck | None]] = [(c.probe, c) for c in _state_checks(lt)]
    out += [(c.probe, c) for c in lt.task.goal_state]
    return out + [(key, None) for key in lt.task.probes_after]


@pytest.mark.parametrize("lt", [lt for lt in _tasks() if _every_state_key(lt)], ids=lambda lt: lt.task.id)
def test_every_state_check_reads_a_catalogue_probe_in_a_shape_it_gives(lt: LoadedTask) -> None:
    for key, check in _every_state_key(lt):
        # A parameter may carry the run (`files:AF-{run}-proj`): filled as a run fills it.
        name, param = split_key(placeholders.substitute_all(key, "run1") if "{" in key else key)
        spec = _catalogue().get(name)
        assert spec is not None, f"{lt.task.id}: no probe {name!r} in probes/"
        spec.command(param)  # the parameter fits the probe (ValueError otherwise)
        if check is None:
            continue
        keys = _row_keys(spec)
        picked = set(check.where) | ({check.field} if check.field else set())
        if keys is None:
            assert not picked, f"{lt.task.id}: {name} gives one value, not rows with {sorted(picked)}"
        else:
            assert picked <= set(keys), f"{lt.task.id}: {name} rows have {keys}, not {sorted(picked - set(keys))}"
            # A number compared before with after is one row's field; the rows' text is never a number.
            if check.op in ("increased", "decreased"):
                assert check.field, f"{lt.task.id}: {name} gives rows: pick the number with `where` and `field`"
        if "{marker}" in check.where.values() or check.marker:
            assert lt.task.marker, f"{lt.task.id}: looks for a marker it does not have"


@pytest.mark.parametrize("lt", [lt for lt in _tasks() if lt.task.goal_state], ids=lambda lt: lt.task.id)
def test_a_goal_state_uses_only_ops_that_hold_at_the_end_and_guards_a_comparison(lt: LoadedTask) -> None:
    assert {c.op for c in lt.task.goal_state} <= GOAL_OPS
    # A goalState is what keeps a relative or setting check from passing a phone that was already there.
    assert any(c.op in BEFORE_OPS for c in _state_checks(lt)), lt.task.id


def _holds(check: StateCheck, value: str) -> bool | None:
    return state_holds(check, None, None, ProbeReading(value=value)).passed


@pytest.mark.parametrize("lt", [lt for lt in _tasks() if lt.task.goal_state and not lt.task.goal_state[0].where
                                and lt.task.goal_state[0].probe != "volumes"], ids=lambda lt: lt.task.id)
def test_a_setting_goal_state_holds_on_the_value_its_check_ends_with(lt: LoadedTask) -> None:
    ends = {c.probe: c.value for c in _state_checks(lt) if c.op == "changed" and c.value is not None}
    ends |= {c.probe: c.value.split("|")[0] for c in _state_checks(lt) if c.op == "matches" and c.value}
    for guard in lt.task.goal_state:
        end = ends[guard.probe]
        assert _holds(guard, end), (lt.task.id, end)
        # …and not on the value a phone away from the goal shows.
        assert not _holds(guard, "0" if end != "0" else "1"), lt.task.id


@pytest.mark.parametrize(("task_id", "on", "off"), [
    ("settings-wlan-on", ["1", "2"], ["0", "3"]),
    ("settings-bluetooth-on", ["1"], ["0", "2"]),
    ("settings-airplane-mode-on", ["1"], ["0"]),
    ("settings-dark-mode-on", ["yes"], ["no", "auto", "custom_schedule"]),
])
def test_a_setting_that_is_already_on_is_an_invalid_start(task_id: str, on: list[str], off: list[str]) -> None:
    (guard,) = _by_id(task_id).task.goal_state
    assert [_holds(guard, v) for v in on] == [True] * len(on)
    assert [_holds(guard, v) for v in off] == [False] * len(off)


def _volumes(**index: tuple[int, int, int]) -> str:
    """`volumes` rows (canonical JSON, as the probe gives them): stream → (index, min, max); STREAM_TTS follows
    STREAM_MUSIC like on a phone."""
    rows = []
    for stream, (at, low, high) in index.items():
        rows.append({"stream": stream, "index": str(at), "muted": "false", "min": str(low), "max": str(high),
                     "volume": str(at), "alias": ""})
    music = index.get("STREAM_MUSIC")
    if music is not None:
        rows.append({"stream": "STREAM_TTS", "index": str(music[0]), "muted": "false", "min": "0",
                     "max": str(music[2]), "volume": str(music[0]), "alias": "STREAM_MUSIC"})
    return rows_value(rows)


@pytest.mark.parametrize(("task_id", "at_end", "mid"), [
    ("settings-media-volume-up", _volumes(STREAM_MUSIC=(15, 0, 15), STREAM_ALARM=(3, 1, 7)),
     _volumes(STREAM_MUSIC=(5, 0, 15), STREAM_ALARM=(7, 1, 7))),
    ("settings-media-volume-up", _volumes(STREAM_MUSIC=(25, 0, 25)), _volumes(STREAM_MUSIC=(15, 0, 25))),
    ("settings-media-volume-down", _volumes(STREAM_MUSIC=(0, 0, 15), STREAM_ALARM=(5, 1, 7)),
     _volumes(STREAM_MUSIC=(10, 0, 15), STREAM_ALARM=(1, 1, 7))),
    ("settings-alarm-volume-up", _volumes(STREAM_MUSIC=(5, 0, 15), STREAM_ALARM=(7, 1, 7)),
     _volumes(STREAM_MUSIC=(15, 0, 15), STREAM_ALARM=(6, 1, 7))),
    ("settings-ring-volume-down", _volumes(STREAM_RING=(0, 0, 7), STREAM_MUSIC=(5, 0, 15)),
     _volumes(STREAM_RING=(1, 0, 7), STREAM_MUSIC=(0, 0, 15))),
])
def test_a_volume_already_at_its_end_is_an_invalid_start_whatever_the_phones_range(task_id: str, at_end: str,
                                                                                   mid: str) -> None:
    # Holds when that stream's index equals its own max (min), never on another stream's end nor a 150-step max.
    (guard,) = _by_id(task_id).task.goal_state
    assert _holds(guard, at_end) is True
    assert _holds(guard, mid) is False
    (check,) = _state_checks(_by_id(task_id))
    assert guard.value is not None and f'"stream":"{check.where["stream"]}"' in guard.value


def _notification(text: str, package: str = "com.android.deskclock") -> dict[str, str]:
    return {"package": package, "title": "即将响起的闹钟", "text": text}


@pytest.mark.parametrize(("rows", "passes"), [
    ([_notification("周二 08:30 - AF-r1-nap")], True),
    ([_notification("周二 08:30 - AF-r0-nap")], False),  # another run's alarm
    ([_notification("周二 08:30 - AF-r1-nap2")], False),  # the marker only as part of a bigger token
    ([_notification("周二 08:30 - AF-r1-nap", package="dev.agentfarm.notes")], False),  # another app says it
    ([_notification("周二 08:30")], False),  # an alarm without its label
    ([], False),  # no alarm within two hours (set for the wrong time, or not at all)
])
def test_the_labelled_alarm_is_found_only_by_this_runs_marker_in_the_clocks_notification(
    rows: list[dict[str, str]], passes: bool
) -> None:
    (check, _alarms) = _state_checks(_by_id("clock-alarm-in-an-hour"))
    resolved = check.model_copy(update={"where": {**check.where, "package": "com.android.deskclock"}})
    verdict = state_holds(resolved, "AF-r1-nap", None, ProbeReading(value=rows_value(rows)))
    assert verdict.passed is passes, verdict.detail
    # The detail quotes what it compared.
    assert "AF-r1-nap" in verdict.detail


def test_a_phone_that_redacts_notifications_gives_no_verdict_on_the_alarm() -> None:
    (check, _alarms) = _state_checks(_by_id("clock-alarm-in-an-hour"))
    spec = _catalogue()["notifications"]
    redacted = (REPO / "tests" / "data" / "state" / "dumpsys_notification_redacted.txt").read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="redacted"):
        spec.parse(redacted)
    verdict = state_holds(check, "AF-r1-nap", None, ProbeReading(error="redacted"))
    assert verdict.passed is None
