"""System commands: getprop, settings, date, dumpsys, wm, input, monkey, am, screencap, uiautomator."""

from __future__ import annotations

import datetime as dt
import os
import zoneinfo

from farm.sim import (
    alarms,
    audio,
    notifications,
    radios,  # noqa: F401 - registers svc, cmd connectivity and cmd media_session
    rootfs,
    system_log,
)
from farm.sim.logbuf import app_pid
from farm.sim.phone import PhoneState
from farm.sim.shell_core import Shell, async_command, command
from farm.sim.shell_pm import Intent, dumpsys_package, parse_intent, query, short_component

_HOME = ("com.android.launcher3", "com.android.launcher3.uioverrides.QuickstepLauncher")
_WAKE_KEYS = {"KEYCODE_WAKEUP", "WAKEUP", "224"}
_SLEEP_KEYS = {"KEYCODE_SLEEP", "SLEEP", "223"}
_POWER_KEYS = {"KEYCODE_POWER", "POWER", "26"}
_MENU_KEYS = {"KEYCODE_MENU", "MENU", "82"}


def foreground(phone: PhoneState) -> tuple[str, str]:
    """(package, activity) in front, from the simulated UI (the home screen without it)."""
    try:
        return phone.ui.foreground()
    except ImportError:
        return _HOME


def _ui_available(phone: PhoneState) -> bool:
    try:
        phone.ui  # noqa: B018 - creates the UI on first use
    except ImportError:
        return False
    return True


@command("getprop")
def _getprop(sh: Shell, args: list[str]) -> int:
    props = sh.phone.props
    if not args:
        sh.out("".join(f"[{k}]: [{v}]\n" for k, v in sorted(props.items())))
    else:
        sh.out(props.get(args[0], args[1] if len(args) > 1 else "") + "\n")
    return 0


@command("setprop")
def _setprop(sh: Shell, args: list[str]) -> int:
    if len(args) != 2:
        return sh.fail("setprop: need 2 arguments")
    if args[0].startswith("ro.") and args[0] in sh.phone.props:
        return sh.fail(f"Failed to set property '{args[0]}' to '{args[1]}'.")
    sh.phone.props[args[0]] = args[1]
    return 0


@command("settings")
def _settings(sh: Shell, args: list[str]) -> int:
    # `--user N` (or `--user current`) and `--lineage` are options; a value such as `0` is not.
    rest: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a == "--user":
            skip = True
        elif a != "--lineage":
            rest.append(a)
    if len(rest) < 2 or rest[1] not in sh.phone.settings:
        return sh.fail("Invalid namespace: use system, secure or global", 255)
    verb, table = rest[0], sh.phone.settings[rest[1]]
    if verb == "get" and len(rest) == 3:
        sh.out(table.get(rest[2], "null") + "\n")
    elif verb == "put" and len(rest) >= 4:
        table[rest[2]] = rest[3]
    elif verb == "delete" and len(rest) == 3:
        sh.out(f"Deleted {1 if table.pop(rest[2], None) is not None else 0} rows\n")
    elif verb == "list":
        sh.out("".join(f"{k}={v}\n" for k, v in sorted(table.items())))
    else:
        return sh.fail(f"Invalid command: {verb}", 255)
    return 0


def _now(sh: Shell, utc: bool) -> dt.datetime:
    try:
        zone: dt.tzinfo = dt.UTC if utc else zoneinfo.ZoneInfo(sh.phone.profile.timezone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        zone = dt.UTC
    return dt.datetime.now(zone)


@command("date")
def _date(sh: Shell, args: list[str]) -> int:
    utc = "-u" in args
    fmt = next((a[1:] for a in args if a.startswith("+")), "%a %b %e %H:%M:%S %Z %Y")
    now = _now(sh, utc)
    # %s and %N are GNU/toybox extensions that strftime would get wrong for an aware time.
    fmt = fmt.replace("%%", "\0").replace("%s", str(int(now.timestamp())))
    fmt = fmt.replace("%N", f"{now.microsecond * 1000:09d}").replace("\0", "%%")
    text = now.strftime(fmt)
    sh.out(text + "\n")
    return 0


def _battery(sh: Shell) -> str:
    p = sh.phone.profile
    return (
        "Current Battery Service state:\n"
        f"  AC powered: false\n  USB powered: {str(p.charging).lower()}\n  Wireless powered: false\n"
        "  Dock powered: false\n  Max charging current: 500000\n  Max charging voltage: 5000000\n"
        f"  Charge counter: {p.battery_level * 45000}\n  status: {2 if p.charging else 3}\n  health: 2\n"
        f"  present: true\n  level: {p.battery_level}\n  scale: 100\n  voltage: 3872\n"
        "  temperature: 280\n  technology: Li-ion\n"
    )


def _window(sh: Shell) -> str:
    pkg, activity = foreground(sh.phone)
    full = pkg + activity if activity.startswith(".") else activity
    short = short_component(pkg, activity)
    locked = str(sh.phone.locked).lower()
    focus = f"Window{{8a1c3f0 u0 {pkg}/{full}}}" if not sh.phone.locked else "Window{3b2f1c9 u0 NotificationShade}"
    return (
        "WINDOW MANAGER WINDOWS (dumpsys window windows)\n"
        f"  Window #0 Window{{8a1c3f0 u0 {pkg}/{full}}}:\n"
        f"    mDisplayId=0 rootTaskId=12 mSession=Session{{5d2e1 4321:u0a10123}} mClient=android.os.BinderProxy\n"
        f"\n  mCurrentFocus={focus}\n"
        f"  mFocusedApp=ActivityRecord{{5e1b2a u0 {short} t12}}\n"
        f"  mShowingLockscreen={locked} mShowingDream=false mDreamingLockscreen={locked}\n"
        f"  isStatusBarKeyguard={locked}\n"
    )


def _display(sh: Shell) -> str:
    s = sh.phone.profile.screen
    return (
        "DISPLAY MANAGER (dumpsys display)\n"
        f"  mViewports=[DisplayViewport{{type=INTERNAL, valid=true, isActive=true, displayId=0, uniqueId='local:0',"
        f" physicalPort=0, orientation=0, logicalFrame=Rect(0, 0 - {s.width}, {s.height}),"
        f" physicalFrame=Rect(0, 0 - {s.width}, {s.height}), deviceWidth={s.width}, deviceHeight={s.height}}}]\n"
        f"  mDefaultDisplayDensity={s.density}\n"
    )


def _power(sh: Shell) -> str:
    on = sh.phone.screen_on
    return (
        "POWER MANAGER (dumpsys power)\n"
        f"  mWakefulness={'Awake' if on else 'Asleep'}\n  mWakefulnessChanging=false\n"
        f"  mIsPowered={str(sh.phone.profile.charging).lower()}\n  mStayOn=false\n"
        f"  mHoldingWakeLockSuspendBlocker=false\n  mHoldingDisplaySuspendBlocker={str(on).lower()}\n"
        f"  Display Power: state={'ON' if on else 'OFF'}\n"
    )


def _activity(sh: Shell, what: str) -> str:
    pkg, activity = foreground(sh.phone)
    short = short_component(pkg, activity)
    pid = app_pid(pkg)
    if what == "top":
        return f"TASK 12 id=12 userId=0\n  ACTIVITY {short} 5e1b2a pid={pid}\n"
    return (
        "ACTIVITY MANAGER ACTIVITIES (dumpsys activity activities)\n"
        f"  mResumedActivity: ActivityRecord{{5e1b2a u0 {short} t12}}\n"
        f"  ResumedActivity: ActivityRecord{{5e1b2a u0 {short} t12}}\n"
    )


_SERVICES = ("activity", "alarm", "audio", "battery", "display", "package", "power", "window")


@command("dumpsys")
def _dumpsys(sh: Shell, args: list[str]) -> int:
    if not args:
        sh.out("Currently running services:\n" + "".join(f"  {name}\n" for name in _SERVICES))
        return 0
    service, rest = args[0], args[1:]
    if service == "battery":
        sh.out(_battery(sh))
    elif service == "alarm":
        sh.out(alarms.dump(sh.phone))
    elif service == "audio":
        sh.out(audio.dump(sh.phone))
    elif service == "window":
        sh.out(_window(sh))
    elif service == "display":
        sh.out(_display(sh))
    elif service == "power":
        sh.out(_power(sh))
    elif service == "activity":
        sh.out(_activity(sh, rest[0] if rest else "activities"))
    elif service == "package":
        names = [a for a in rest if not a.startswith("-")]
        if names:
            return dumpsys_package(sh, names[0])
        sh.out("".join(f"Package [{p.name}]\n" for p in sh.phone.profile.packages))
    elif service == "SurfaceFlinger":
        sh.out("Display 4619827259835644672 (HWC display 0): port=0 pnpId=GGL displayName=\"Built-In Display\"\n")
    elif service == "notification":
        sh.out(notifications.dump(sh.phone, redact="--noredact" not in rest))
    elif service in ("input_method", "statusbar", "wifi", "connectivity", "meminfo", "cpuinfo"):
        sh.out(f"DUMP OF SERVICE {service}:\n")
    else:
        sh.out(f"Can't find service: {service}\n")
    return 0


@command("wm")
def _wm(sh: Shell, args: list[str]) -> int:
    s = sh.phone.profile.screen
    sub = args[0] if args else ""
    if sub == "size":
        sh.out(f"Physical size: {s.width}x{s.height}\n")
    elif sub == "density":
        sh.out(f"Physical density: {s.density}\n")
    elif sub == "dismiss-keyguard":
        sh.phone.locked = False
    else:
        return sh.fail(f"Error: unknown command '{sub}'", 255)
    return 0


def _key(sh: Shell, key: str) -> None:
    if _ui_available(sh.phone):
        sh.phone.ui.key(int(key) if key.lstrip("-").isdigit() else key)
        return
    # Without the simulated UI only the power state and the volume react.
    name = key.upper()
    volume = {"KEYCODE_VOLUME_UP": 1, "VOLUME_UP": 1, "24": 1, "KEYCODE_VOLUME_DOWN": -1, "VOLUME_DOWN": -1,
              "25": -1, "KEYCODE_VOLUME_MUTE": 0, "VOLUME_MUTE": 0, "164": 0}.get(name)
    if volume is not None and sh.phone.screen_on:
        audio.adjust(sh.phone, audio.MUSIC, volume)
    elif name in _WAKE_KEYS:
        sh.phone.screen_on = True
    elif name in _SLEEP_KEYS or name in _POWER_KEYS and sh.phone.screen_on:
        sh.phone.screen_on, sh.phone.locked = False, True
    elif name in _POWER_KEYS:
        sh.phone.screen_on = True
    elif name in _MENU_KEYS and sh.phone.screen_on:
        sh.phone.locked = False


@command("input")
def _input(sh: Shell, args: list[str]) -> int:
    if args and args[0] in ("touchscreen", "keyboard", "mouse", "trackball", "dpad", "gamepad"):
        args = args[1:]
    if not args:
        return sh.fail("Usage: input [<source>] <command> [<arg>...]", 1)
    sub, rest = args[0], args[1:]
    ui = _ui_available(sh.phone)
    try:
        if sub == "keyevent":
            for key in [k for k in rest if not k.startswith("--")]:
                _key(sh, key)
        elif sub == "tap" and len(rest) >= 2:
            if ui:
                sh.phone.ui.tap(float(rest[0]), float(rest[1]))
        elif sub in ("swipe", "draganddrop") and len(rest) >= 4:
            x1, y1, x2, y2 = (float(v) for v in rest[:4])
            duration = int(float(rest[4])) if len(rest) > 4 else 300
            if ui:
                sh.phone.ui.swipe(x1, y1, x2, y2, duration)
            elif sh.phone.locked and sh.phone.screen_on and y2 < y1:
                sh.phone.locked = False
        elif sub == "text" and rest:
            if ui:
                sh.phone.ui.input_text(" ".join(rest).replace("%s", " "))
        elif sub in ("longpress", "press", "roll", "motionevent"):
            pass
        else:
            return sh.fail(f"Error: Unknown command: {sub}", 1)
    except ValueError:
        return sh.fail(f"Error: Invalid arguments for command: {sub}", 1)
    return 0


def _launch(sh: Shell, package: str, activity: str | None, intent: Intent | None = None) -> bool:
    info = sh.phone.profile.package(package)
    started = info is not None if not _ui_available(sh.phone) else bool(sh.phone.ui.launch(package, activity))
    target = activity or (info.full_activity(info.launcher_activity) if info and info.launcher_activity else None)
    if started and target:
        launcher = Intent("android.intent.action.MAIN", ("android.intent.category.LAUNCHER",))
        parts = _parts(intent or launcher, "0x10000000" if intent else "0x10200000")
        parts.append(f"cmp={short_component(package, target)}")
        system_log.activity_started(sh.phone, " ".join(parts), short_component(package, target))
    return started


@command("monkey")
def _monkey(sh: Shell, args: list[str]) -> int:
    package = args[args.index("-p") + 1] if "-p" in args and args.index("-p") + 1 < len(args) else None
    sh.out("".join(f"  bash arg: {a}\n" for a in args))
    pkg = sh.phone.profile.package(package) if package else None
    if pkg is None or not pkg.launcher_activity:
        sh.out("** No activities found to run, monkey aborted.\n")
        return 252
    _launch(sh, pkg.name, None)
    sh.out("Events injected: 1\n## Network stats: elapsed time=12ms (0ms mobile, 0ms wifi, 12ms not connected)\n")
    return 0


def _parts(intent: Intent, flags: str | None = None) -> list[str]:
    """Intent.toShortString's fields before the component (`flg=` only once the activity manager set it)."""
    parts = []
    if intent.action:
        parts.append(f"act={intent.action}")
    if intent.categories:
        parts.append("cat=[" + ",".join(intent.categories) + "]")
    if intent.data:
        parts.append(f"dat={intent.data}")
    if flags:
        parts.append(f"flg={flags}")
    return parts


def _describe(intent: Intent) -> str:
    parts = _parts(intent)
    if intent.component:
        pkg, _, cls = intent.component.partition("/")
        parts.append(f"cmp={short_component(pkg, cls)}")
    return "Intent { " + " ".join(parts) + " }"


def _am_start(sh: Shell, args: list[str]) -> int:
    intent, _, _flags = parse_intent(args)
    if intent.data and not intent.action:
        intent.action = "android.intent.action.VIEW"
    sh.out(f"Starting: {_describe(intent)}\n")
    found = query(sh, Intent(intent.action, intent.categories, intent.component, intent.package))
    if not found and intent.action == "android.intent.action.VIEW" and intent.data:
        found = query(sh, Intent("android.intent.action.MAIN", ("android.intent.category.APP_BROWSER",)))
    if not found:
        sh.err(f"Error: Activity not started, unable to resolve {_describe(intent)}\n")
        return 1
    pkg, activity = found[0]
    _launch(sh, pkg.name, pkg.full_activity(activity), intent)
    return 0


@async_command("am")
async def _am(sh: Shell, args: list[str]) -> int:
    sub, rest = (args[0], args[1:]) if args else ("", [])
    if sub in ("start", "start-activity"):
        return _am_start(sh, rest)
    if sub == "force-stop":
        names = [a for a in rest if not a.startswith("-") and a != "0"]
        if names and _ui_available(sh.phone):
            sh.phone.ui.force_stop(names[-1])
        if names and sh.phone.profile.package(names[-1]) is not None:
            system_log.force_stopped(sh.phone, names[-1], sh.phone.logs.new_pid())
        return 0
    if sub == "broadcast":
        intent, _, _ = parse_intent(rest)
        sh.out(f"Broadcasting: {_describe(intent)}\nBroadcast completed: result=0\n")
        return 0
    if sub == "instrument":
        return await _am_instrument(sh, rest)
    if sub in ("get-current-user",):
        sh.out("0\n")
        return 0
    if sub in ("kill", "kill-all", "stack", "clear-debug-app", "set-debug-app"):
        return 0
    return sh.fail(f"Error: Unknown command: {sub}", 255)


async def _am_instrument(sh: Shell, args: list[str]) -> int:
    from farm.sim.instrument import run_instrument

    await sh.flush()
    async for chunk in run_instrument(sh.phone, args):
        sh.out(chunk)
        await sh.flush()
    return 0


@command("screencap")
def _screencap(sh: Shell, args: list[str]) -> int:
    if not _ui_available(sh.phone):
        return sh.fail("screencap: no display", 1)
    files = [a for a in args if not a.startswith("-")]
    if "-d" in args and files:
        files = files[1:]
    png = sh.phone.ui.screenshot_png()
    if files:
        try:
            with rootfs.open_write(sh.host(files[-1])) as handle:
                handle.write(png)
        except OSError:
            return sh.fail(f"Error opening file: {files[-1]} (No such file or directory)")
    else:
        sh.out(png)
    return 0


@command("uiautomator")
def _uiautomator(sh: Shell, args: list[str]) -> int:
    if not args or args[0] != "dump":
        return sh.fail("Usage: uiautomator dump [--compressed] [file]", 1)
    if not _ui_available(sh.phone):
        return sh.fail("ERROR: could not get idle state.", 1)
    files = [a for a in args[1:] if not a.startswith("-")]
    path = files[0] if files else "/sdcard/window_dump.xml"
    xml = sh.phone.ui.hierarchy_xml()
    if path == "/dev/tty":
        sh.out(xml)
    else:
        try:
            host = sh.host(path)
            os.makedirs(host.parent, exist_ok=True)
            with rootfs.open_write(host) as handle:
                handle.write(xml.encode("utf-8"))
        except OSError:
            return sh.fail(f"ERROR: could not write {path}", 1)
    sh.out(f"UI hierchary dumped to: {path}\n")
    return 0


@async_command("app_process", "app_process64")
async def _app_process(sh: Shell, args: list[str]) -> int:
    if "com.wetest.uia2.Main" not in args:
        return sh.fail("Error: Could not find class", 1)
    sh.phone.u2_server_streams += 1
    try:
        sh.out("[server] INFO: [UiAutomator2Server] Starting Server\n")
        await sh.flush()
        if sh.wait_host_close is not None:
            await sh.wait_host_close()
    finally:
        sh.phone.u2_server_streams -= 1
    return 0


@command("ime")
def _ime(sh: Shell, args: list[str]) -> int:
    if args and args[0] == "list":
        sh.out(sh.phone.settings["secure"]["default_input_method"] + "\n")
    elif args and args[0] == "set" and len(args) > 1:
        sh.phone.settings["secure"]["default_input_method"] = args[1]
        sh.out(f"Input method {args[1]} selected for user #0\n")
    return 0


@command("locksettings", "reboot", "pidof_ignore")
def _quiet(sh: Shell, args: list[str]) -> int:
    return 0


def _processes(sh: Shell) -> list[tuple[str, int, str]]:
    procs = [("root", 1, "init"), ("system", 900, "system_server"), ("u0_a100", 1800, "com.android.systemui")]
    pkg, _ = foreground(sh.phone)
    procs.append(("u0_a123", app_pid(pkg), pkg))
    if sh.phone.u2_server_streams:
        procs.append(("shell", 7777, "com.wetest.uia2.Main"))
    return procs


@command("ps")
def _ps(sh: Shell, args: list[str]) -> int:
    sh.out("USER            PID   PPID     VSZ    RSS WCHAN            ADDR S NAME\n")
    for user, pid, name in _processes(sh):
        sh.out(f"{user:<12} {pid:>6} {1 if pid > 1 else 0:>6} 1234567  89012 0                   0 S {name}\n")
    return 0


@command("pidof")
def _pidof(sh: Shell, args: list[str]) -> int:
    pids = [str(pid) for _u, pid, name in _processes(sh) if name in args]
    if not pids:
        return 1
    sh.out(" ".join(pids) + "\n")
    return 0
