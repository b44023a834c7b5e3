"""`dumpsys alarm` of the virtual phone: the AlarmManager alarms its clock app has scheduled (Android 12+ layout).

The clock's saved alarms (`farm.sim.apps.clock.saved_alarms`) are the one source: every enabled one is scheduled
here the way AOSP DeskClock schedules it with AlarmManager, computed at the moment of the dump.

- Each enabled alarm's next instance has one `setExactAndAllowWhileIdle(RTC_WAKEUP)` alarm for its next state
  change (AlarmStateManager: silent → low notification 2 h before, → high notification 30 min before, → fired
  at the alarm time), tagged `*walarm*:change_state` (the PendingIntent's action), flags 0x5.
- The earliest instance also has the `setAlarmClock` surrogate tagged `*walarm*:indicator`, flags 0x3, with an
  `Alarm clock:` block (`triggerTime=` the alarm time) — what the status bar's next-alarm icon and `Next alarm
  clock information:` show.

The label the user typed is not in `dumpsys alarm` on a real phone either: AlarmManager only sees the
PendingIntent (action `change_state` / `indicator`), never the alarm's label, which stays in DeskClock's own
database (not readable by the shell). Real phones show it in the "upcoming alarm" notification two hours before;
the virtual phone has no notifications, so here the label appears only on the clock's screens.

The system's own TIME_TICK alarm is listed too (every phone has it), so a reader of this dump meets alarms of
other packages, as it does on a phone.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from farm.sim.apps.base import saved_at
from farm.sim.apps.clock import PACKAGE, saved_alarms

if TYPE_CHECKING:
    from farm.sim.phone import PhoneState

RTC_WAKEUP, ELAPSED = 0, 3
_TYPE_NAMES = {0: "RTC_WAKEUP", 1: "RTC", 2: "ELAPSED_WAKEUP", 3: "ELAPSED"}
_LOW_NOTIFICATION = timedelta(hours=2)
_HIGH_NOTIFICATION = timedelta(minutes=30)


@dataclass
class Pending:
    """One alarm AlarmManager holds, with what `Alarm.toString()` and `Alarm.dump()` print."""

    type: int
    """`AlarmManager.RTC_WAKEUP` (0) … `ELAPSED_REALTIME` (3)."""
    orig_when: int
    """What the app asked for: epoch ms for RTC types, elapsed ms for ELAPSED ones."""
    when_elapsed: int
    """The same instant in `SystemClock.elapsedRealtime()` ms."""
    package: str
    """`sourcePackage`."""
    tag: str
    """`statsTag`: `*walarm*:` (wakeup) or `*alarm*:` + the PendingIntent's action or the listener's tag."""
    flags: int
    """`AlarmManager.FLAG_*` bits (0x1 standalone, 0x2 wake from idle, 0x4 allow while idle, 0x8 unrestricted)."""
    exact_reason: str
    """`exactAllowReason=` (`policy_permission`, `allow-listed`)."""
    set_elapsed: int
    """Elapsed ms when it was set (what the app-standby and TARE policies last looked at)."""
    operation: str | None = None
    """`PendingIntent{…}` it sends, or None for a listener alarm."""
    listener: str | None = None
    """The listener binder of a listener alarm."""
    trigger_time: int | None = None
    """`AlarmClockInfo.getTriggerTime()` of a `setAlarmClock` alarm (epoch ms)."""
    show_intent: str | None = None
    """`AlarmClockInfo.getShowIntent()`."""


def _hash(*parts: object) -> str:
    """A stable stand-in for `System.identityHashCode` (hex, like Android prints it)."""
    return f"{zlib.crc32(':'.join(map(str, parts)).encode()) & 0xFFFFFFF:x}"


def _pending_intent(key: str, package: str, kind: str) -> str:
    return f"PendingIntent{{{_hash('pi', key)}: PendingIntentRecord{{{_hash('pir', key)} {package} {kind}}}}}"


def next_instance(alarm: dict[str, Any], now: datetime) -> datetime:
    """When `alarm` (`HH:MM`, once or weekdays) rings next, in the phone's zone: today if still ahead, else later."""
    hour, minute = int(alarm["time"][:2]), int(alarm["time"][3:5])
    at = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if at <= now:
        at += timedelta(days=1)
    if alarm.get("repeat") == "weekdays":
        while at.weekday() >= 5:
            at += timedelta(days=1)
    return at


def _state_change(at: datetime, now: datetime) -> datetime:
    # AlarmStateManager schedules the instance's next state, not the ring itself, until 30 minutes before.
    if now < at - _LOW_NOTIFICATION:
        return at - _LOW_NOTIFICATION
    if now < at - _HIGH_NOTIFICATION:
        return at - _HIGH_NOTIFICATION
    return at


def pending_alarms(phone: PhoneState) -> list[Pending]:
    """Every alarm AlarmManager holds now, earliest first."""
    now = phone.now()
    now_ms = round(now.timestamp() * 1000)
    now_elapsed = phone.elapsed_ms(now.timestamp())
    stored = saved_at(phone, PACKAGE, "alarms")
    set_elapsed = phone.elapsed_ms(stored) if stored is not None else 0
    out: list[Pending] = []
    instances = [(next_instance(a, now), a) for a in saved_alarms(phone) if a.get("enabled")]
    for at, alarm in instances:
        change = round(_state_change(at, now).timestamp() * 1000)
        out.append(Pending(
            RTC_WAKEUP, change, now_elapsed + change - now_ms, PACKAGE, "*walarm*:change_state", 0x5,
            "policy_permission", set_elapsed, operation=_pending_intent(f"state:{alarm['id']}", PACKAGE,
                                                                        "startService")))
    if instances:
        at, alarm = min(instances, key=lambda pair: pair[0])
        trigger = round(at.timestamp() * 1000)
        out.append(Pending(
            RTC_WAKEUP, trigger, now_elapsed + trigger - now_ms, PACKAGE, "*walarm*:indicator", 0x3,
            "policy_permission", set_elapsed, operation=_pending_intent("indicator", PACKAGE, "broadcastIntent"),
            trigger_time=trigger, show_intent=_pending_intent(f"show:{alarm['id']}", PACKAGE, "startActivity")))
    tick = (now_elapsed // 60000 + 1) * 60000
    # Re-armed at every tick, so it was last set at the previous minute (or at boot).
    listener = f"com.android.server.alarm.AlarmManagerService$3@{_hash('tick')}"
    out.append(Pending(ELAPSED, tick, tick, "android", "*alarm*:TIME_TICK", 0x9, "allow-listed",
                       max(tick - 60000, 1), listener=listener))
    return sorted(out, key=lambda p: p.when_elapsed)


def duration(ms: int) -> str:
    """`TimeUtils.formatDuration(long)`: `+1d18h46m48s349ms`, `-11s650ms`, `0`."""
    if ms == 0:
        return "0"
    sign, ms = ("+", ms) if ms > 0 else ("-", -ms)
    seconds, millis = divmod(ms, 1000)
    days, seconds = divmod(seconds, 86400)
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    out = sign
    started = False
    for amount, unit in ((days, "d"), (hours, "h"), (minutes, "m"), (seconds, "s")):
        if amount or started:
            out += f"{amount}{unit}"
            started = True
    return f"{out}{millis}ms"


def _relative(at: int, now: int) -> str:
    # TimeUtils.formatDuration(long time, long now, pw): "--" for an unset (0) time.
    return "--" if at == 0 else duration(at - now)


def _date(ms: int, phone: PhoneState) -> str:
    """SimpleDateFormat `yyyy-MM-dd HH:mm:ss.SSS` in the phone's zone."""
    at = datetime.fromtimestamp(ms / 1000, phone.now().tzinfo)
    return at.strftime("%Y-%m-%d %H:%M:%S.") + f"{ms % 1000:03d}"


def dump(phone: PhoneState) -> str:
    """The text of `dumpsys alarm`: a faithful subset of AlarmManagerService.dumpImpl on Android 14."""
    now_ms = round(phone.now().timestamp() * 1000)
    now_elapsed = phone.elapsed_ms(now_ms / 1000)
    alarms = pending_alarms(phone)
    lines = [
        "Current Alarm Manager state:",
        "  Settings:",
        "    version=1 ",
        "    min_futurity=+5s0ms",
        "    min_interval=+1m0s0ms",
        "    max_interval=+365d0h0m0s0ms",
        "    min_window=+10m0s0ms",
        "    listener_timeout=+5s0ms",
        "  ",
        f"  nowRTC={now_ms}={_date(now_ms, phone)} nowELAPSED={now_elapsed}",
        f"  RuntimeStarted={_date(round(phone.booted_at * 1000), phone)}",
        f"  Runtime uptime (elapsed): {duration(now_elapsed)}",
        "  ",
        "  Next alarm clock information: ",
    ]
    clock = [a for a in alarms if a.trigger_time is not None]
    if clock:
        time = clock[0].trigger_time or 0
        lines.append(f"    user:0 pendingSend:false time:{time} = {_date(time, phone)} = {duration(time - now_ms)}")
    lines += ["  ", f"  {len(alarms)} pending alarms: "]
    for number, alarm in enumerate(alarms, start=1):
        is_rtc = alarm.type in (0, 1)
        lines.append(f"    {_TYPE_NAMES[alarm.type]} #{number}: Alarm{{{_hash('alarm', alarm.tag, alarm.orig_when)} "
                     f"type {alarm.type} origWhen {alarm.orig_when} whenElapsed {alarm.when_elapsed} "
                     f"{alarm.package}}}")
        orig = _date(alarm.orig_when, phone) if is_rtc else _relative(alarm.orig_when, now_elapsed)
        lines += [
            f"      tag={alarm.tag}",
            f"      type={_TYPE_NAMES[alarm.type]} origWhen={orig} window=0 exactAllowReason={alarm.exact_reason} "
            f"repeatInterval=0 count=0 flags=0x{alarm.flags:x}",
            f"      policyWhenElapsed: requester={_relative(alarm.when_elapsed, now_elapsed)} "
            f"app_standby={_relative(alarm.set_elapsed, now_elapsed)} device_idle=-- battery_saver=-- "
            f"tare={_relative(alarm.set_elapsed, now_elapsed)}",
            f"      whenElapsed={_relative(alarm.when_elapsed, now_elapsed)} "
            f"maxWhenElapsed={_relative(alarm.when_elapsed, now_elapsed)}",
        ]
        if alarm.trigger_time is not None:
            lines += ["      Alarm clock:", f"        triggerTime={_date(alarm.trigger_time, phone)}",
                      f"        showIntent={alarm.show_intent}"]
        if alarm.operation is not None:
            lines.append(f"      operation={alarm.operation}")
        if alarm.listener is not None:
            lines.append(f"      listener={alarm.listener}")
    lines += ["  ", "  Past-due non-wakeup alarms: (none)", "    Number of delayed alarms: 0, total delay time: 0",
              "    Max delay time: 0, max non-interactive time: 0", "  ", "  Broadcast ref count: 0", ""]
    return "\n".join(lines) + "\n"
