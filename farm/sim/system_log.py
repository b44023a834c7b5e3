"""What the phone's own processes log, with a real phone's tags, buffers and wording (kept to the lines clients and
people grep for): activity starts, force-stops, the instrumentation runner, screenrecord's outcome.

system_server's `Slog` goes to the system buffer, `Log` (ActivityMetricsLogger's "Displayed") to main.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from farm.sim.logbuf import DEBUG, ERROR, INFO, SHELL_UID, SYSTEM_SERVER_PID, SYSTEM_UID, app_pid

if TYPE_CHECKING:
    from farm.sim.phone import PhoneState

_ATM_TID = 1735
"""A binder thread of system_server: the shell's `am start` arrives on one."""
_APP_UID = 10123
_HEALTHD_PID = 612


def activity_started(phone: PhoneState, intent: str, component: str, *, from_uid: int = SHELL_UID) -> None:
    """ActivityStarter's `START u0 {…}` (system buffer) and ActivityMetricsLogger's `Displayed` (main buffer).

    `intent` is Intent.toShortString's text (`act=… cat=[…] flg=0x… cmp=pkg/.Cls`); `component` the short component.
    """
    logs = phone.logs
    logs.write(INFO, "ActivityTaskManager", f"START u0 {{{intent}}} with LAUNCH_MULTIPLE from uid {from_uid}",
               buffer="system", pid=SYSTEM_SERVER_PID, tid=_ATM_TID, uid=SYSTEM_UID)
    drawn = random.randint(180, 650)  # noqa: S311 - a plausible cold-start time, not a secret
    logs.write(INFO, "ActivityTaskManager", f"Displayed {component} for user 0: +{drawn}ms",
               buffer="main", pid=SYSTEM_SERVER_PID, tid=SYSTEM_SERVER_PID + 57, uid=SYSTEM_UID)


def force_stopped(phone: PhoneState, package: str, caller_pid: int) -> None:
    """ActivityManagerService.forceStopPackage's line."""
    message = f"Force stopping {package} appid={_APP_UID} user=0: from pid {caller_pid}"
    phone.logs.write(INFO, "ActivityManager", message, buffer="system", pid=SYSTEM_SERVER_PID, tid=_ATM_TID,
                     uid=SYSTEM_UID)


def test_runner(phone: PhoneState, package: str, message: str, *, failed: bool = False) -> None:
    """androidx.test's LogRunListener (`TestRunner`: run started, started, finished, failed, run finished)."""
    pid = app_pid(package)
    phone.logs.write(ERROR if failed else INFO, "TestRunner", message, pid=pid, tid=pid + 28, uid=_APP_UID)


def screenrecord_failed(phone: PhoneState, pid: int) -> None:
    """screenrecord's `ALOGD(err == NO_ERROR ? "success" : "failed")`."""
    phone.logs.write(DEBUG, "ScreenRecord", "failed", pid=pid, uid=SHELL_UID)


def idle(phone: PhoneState) -> None:
    """Background chatter of an idle phone: the health HAL's battery line, from the profile's battery."""
    p = phone.profile
    state, charger = (2, "u") if p.charging else (3, "")
    message = f"battery l={p.battery_level} v=3872 t=28.0 h=2 st={state} c=-{p.battery_level * 9} fc=4411000 cc=98"
    phone.logs.write(INFO, "healthd", f"{message} chg={charger}", pid=_HEALTHD_PID, uid=SYSTEM_UID)
