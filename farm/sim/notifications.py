"""Posted notifications of the virtual phone, as `dumpsys notification` and `cmd notification list` show them.

The clock's alarms are the one source, as on a phone running AOSP DeskClock: from two hours before an enabled
alarm rings (AlarmStateManager's low-notification state) until it rings, DeskClock posts an "upcoming alarm"
notification whose text is the alarm's time and, when it has one, its label (`AlarmUtils.getAlarmText` with the
label: `<time> - <label>`). It is the one place outside the clock where a real phone shows an alarm's label —
`dumpsys alarm` never does — so a task can verify a labelled alarm from the shell when it rings within two hours.

The dump follows AOSP `NotificationManagerService.dumpImpl` / `NotificationRecord.dump` (Android 10–14): one
`NotificationRecord(…)` line per notification, its key, and the `extras={…}` block where `android.title` and
`android.text` print as `String (…)` with `--noredact` and as `String [length=N]` without.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from farm.sim.alarms import next_instance
from farm.sim.apps.clock import PACKAGE as CLOCK
from farm.sim.apps.clock import saved_alarms
from farm.sim.shell_core import Shell, cmd_service

if TYPE_CHECKING:
    from farm.sim.phone import PhoneState

UPCOMING = timedelta(hours=2)
"""How long before an alarm its upcoming-alarm notification is posted (AlarmStateManager's low notification)."""
UPCOMING_TITLE = "即将响起的闹钟"
"""The notification's title (DeskClock's `alarm_alert_predismiss_title`, in the phone's Chinese wording)."""
_WEEKDAYS = ("周一", "周二", "周三", "周四", "周五", "周六", "周日")
_CLOCK_UID = 10000 + zlib.crc32(CLOCK.encode()) % 200


@dataclass(frozen=True)
class Posted:
    """One posted notification."""

    package: str
    id: int
    channel: str
    title: str
    text: str

    @property
    def key(self) -> str:
        """`StatusBarNotification.getKey()`: user|package|id|tag|uid."""
        return f"0|{self.package}|{self.id}|null|{_CLOCK_UID}"


def posted(phone: PhoneState) -> list[Posted]:
    """Notifications on the phone now, newest first."""
    now = phone.now()
    out = []
    for alarm in saved_alarms(phone):
        if not alarm.get("enabled"):
            continue
        at = next_instance(alarm, now)
        if at - now > UPCOMING:
            continue
        label = str(alarm.get("label") or "").strip()
        when = f"{_WEEKDAYS[at.weekday()]} {at:%H:%M}"
        out.append(Posted(CLOCK, zlib.crc32(str(alarm["id"]).encode()) & 0x7FFFFFFF, "alarmUpcomingNotification",
                          UPCOMING_TITLE, f"{when} - {label}" if label else when))
    return out


def _extra(value: str, redact: bool) -> str:
    return f"String [length={len(value)}]" if redact else f"String ({value})"


def dump(phone: PhoneState, *, redact: bool) -> str:
    """`dumpsys notification` (`redact`: without `--noredact`, titles and texts print only their length)."""
    lines = ["Current Notification Manager state:", "  Notification List:"]
    for n in posted(phone):
        ident = f"0x{zlib.crc32(n.key.encode()) & 0xFFFFFFF:08x}"
        lines += [
            f"    NotificationRecord({ident}: pkg={n.package} user=UserHandle{{0}} id={n.id} tag=null importance=2 "
            f"key={n.key}: Notification(channel={n.channel} shortcut=null contentView=null vibrate=null sound=null "
            "defaults=0x0 flags=0x2 color=0x00000000 category=alarm vis=PUBLIC))",
            f"      uid={_CLOCK_UID} userId=0",
            f"      opPkg={n.package}",
            f"      key={n.key}",
            "      notification=",
            "        extras={",
            f"            android.title={_extra(n.title, redact)}",
            f"            android.text={_extra(n.text, redact)}",
            "            android.showWhen=Boolean (false)",
            "        }",
        ]
    lines += ["  Snoozed notifications:", "  mArchive (0 notifications):", ""]
    return "\n".join(lines)


@cmd_service("notification")
def _cmd_notification(sh: Shell, args: list[str]) -> int:
    # NotificationShellCommand: `list` prints each posted notification's key; posting from the shell is not offered.
    if args[:1] == ["list"]:
        sh.out("".join(f"{n.key}\n" for n in posted(sh.phone)))
        return 0
    sh.out("usage: cmd notification SUBCMD [args]\n\nSUBCMDS:\n  list\n    list the notification keys\n")
    return 0 if not args or args[0] in ("help", "-h") else 255
