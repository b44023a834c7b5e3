"""Package-manager commands: `pm`, `cmd package`, `dumpsys package` (real output formats)."""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from farm.sim.features import list_lines
from farm.sim.profile import PackageInfo
from farm.sim.shell_core import CMD_SERVICES, Shell, command

ACTION_MAIN = "android.intent.action.MAIN"
CATEGORY_LAUNCHER = "android.intent.category.LAUNCHER"
_EXTRA_OPTIONS = ("--ei", "--es", "--ez", "--el", "--ef", "--eu", "-e", "--esa", "--eia", "--ela")
_VALUE_OPTIONS = ("-t", "--user", "-f", "--receiver-permission")
_RESOLVER = "android/com.android.internal.app.ResolverActivity"


@dataclass
class Intent:
    """The parts of an intent that resolution looks at."""

    action: str | None = None
    categories: tuple[str, ...] = ()
    component: str | None = None
    package: str | None = None
    data: str | None = None


def short_component(package: str, activity: str) -> str:
    """ComponentName.flattenToShortString: `pkg/.Cls` when the class lives in the package."""
    full = package + activity if activity.startswith(".") else activity
    if full.startswith(package + "."):
        return f"{package}/{full[len(package):]}"
    return f"{package}/{full}"


def filters(pkg: PackageInfo) -> list[tuple[str, tuple[str, ...], str]]:
    """Every (action, categories, activity) the package handles, launcher entry included."""
    out: list[tuple[str, tuple[str, ...], str]] = []
    if pkg.launcher_activity:
        out.append((ACTION_MAIN, (CATEGORY_LAUNCHER,), pkg.launcher_activity))
    out.extend((f.action, tuple(f.categories), f.activity) for f in pkg.intents)
    return out


def query(sh: Shell, intent: Intent) -> list[tuple[PackageInfo, str]]:
    """Activities matching the intent, one per (package, activity)."""
    found: list[tuple[PackageInfo, str]] = []
    for pkg in sh.phone.profile.packages:
        if intent.package and pkg.name != intent.package:
            continue
        for action, categories, activity in filters(pkg):
            if intent.component:
                want_pkg, _, want_cls = intent.component.partition("/")
                if want_pkg != pkg.name or pkg.full_activity(want_cls) != pkg.full_activity(activity):
                    continue
            elif intent.action and action != intent.action:
                continue
            elif not intent.action and not intent.categories:
                continue
            if not intent.component and not set(intent.categories) <= set(categories):
                continue
            if all(p.name != pkg.name or p_act != activity for p, p_act in found):
                found.append((pkg, activity))
    return found


def parse_intent(args: list[str]) -> tuple[Intent, list[str], set[str]]:
    """Parse `am`/`cmd package` intent arguments; returns (intent, positional, flags)."""
    intent = Intent()
    cats: list[str] = []
    flags: set[str] = set()
    positional: list[str] = []
    it = iter(args)
    for arg in it:
        if arg == "-a":
            intent.action = next(it, None)
        elif arg == "-c":
            cats.append(next(it, ""))
        elif arg == "-n":
            intent.component = next(it, None)
        elif arg == "-d":
            intent.data = next(it, None)
        elif arg in _EXTRA_OPTIONS:
            next(it, None)
            next(it, None)
        elif arg in _VALUE_OPTIONS:
            next(it, None)
        elif arg.startswith("-"):
            flags.add(arg)
        else:
            positional.append(arg)
    intent.categories = tuple(cats)
    if positional and not intent.component and "/" in positional[-1]:
        intent.component = positional.pop()
    elif positional and not intent.package and "." in positional[-1] and intent.action:
        intent.package = positional.pop()
    return intent, positional, flags


def _resolve_info(prefix: str, package: str, activity: str, components_only: bool) -> str:
    comp = short_component(package, activity) if package != "android" else _RESOLVER
    if components_only:
        return f"{prefix}{comp}\n"
    return f"{prefix}priority=0 preferredOrder=0 match=0x108000 specificIndex=-1 isDefault=false\n{prefix}{comp}\n"


def _cmd_package(sh: Shell, args: list[str]) -> int:
    if not args:
        return sh.fail("Package manager (package) commands: see `pm help`")
    sub, rest = args[0], args[1:]
    if sub == "query-activities":
        intent, _, flags = parse_intent(rest)
        found = query(sh, intent)
        if not found:
            sh.out("No activities found\n")
            return 0
        if "--components" in flags:
            sh.out("".join(_resolve_info("", p.name, a, True) for p, a in found))
            return 0
        sh.out(f"{len(found)} activities found:\n")
        for index, (pkg, activity) in enumerate(found):
            sh.out(f"  Activity #{index}:\n" + _resolve_info("    ", pkg.name, activity, False))
        return 0
    if sub == "resolve-activity":
        intent, _, flags = parse_intent(rest)
        found = query(sh, intent)
        if not found:
            sh.out("No activity found\n")
            return 0
        pkg_name, activity = (found[0][0].name, found[0][1]) if len(found) == 1 else ("android", "")
        sh.out(_resolve_info("", pkg_name, activity, "--components" in flags))
        return 0
    if sub == "list":
        return _pm_list(sh, rest)
    if sub == "path":
        return _pm_path(sh, rest)
    if sub == "has-feature":
        return _has_feature(sh, rest)
    if sub in ("clear", "grant", "revoke", "disable-user", "enable", "set-home-activity"):
        if sub == "clear":
            sh.out("Success\n")
        return 0
    if sub == "uninstall":
        gone = sh.phone.profile.package(rest[-1] if rest else "")
        if gone is None:
            sh.out("Failure [DELETE_FAILED_INTERNAL_ERROR]\n")
            return 1
        sh.phone.profile.packages.remove(gone)
        sh.out("Success\n")
        return 0
    if sub == "install":
        sh.out("Failure [INSTALL_FAILED_INVALID_APK: the virtual phone cannot install APKs]\n")
        return 1
    return sh.fail(f"Unknown command: {sub}", 255)


def _pm_list(sh: Shell, args: list[str]) -> int:
    if args and args[0] == "features":
        sh.out("".join(line + "\n" for line in list_lines(sh.phone.profile.features, sh.phone.profile.gles_version)))
        return 0
    if not args or args[0] != "packages":
        if args and args[0] == "instrumentation":
            agent = sh.phone.profile.agent
            sh.out(f"instrumentation:{agent.test_package}/{agent.runner} (target={agent.package})\n")
            return 0
        return sh.fail(f"Error: unknown list type '{args[0] if args else ''}'")
    flags = {a for a in args[1:] if a.startswith("-")}
    needles = [a for a in args[1:] if not a.startswith("-") and a != "0"]
    for pkg in sh.phone.profile.packages:
        if "-3" in flags and not pkg.third_party or "-s" in flags and pkg.third_party:
            continue
        if needles and not any(n in pkg.name for n in needles):
            continue
        line = f"package:{pkg.apk_path()}={pkg.name}" if "-f" in flags else f"package:{pkg.name}"
        if "--show-versioncode" in flags:
            line += f" versionCode:{pkg.version_code}"
        if "-U" in flags:
            line += f" uid:{_uid(pkg)}"
        sh.out(line + "\n")
    return 0


def uid_of(pkg: PackageInfo) -> int:
    """The package's Linux uid (`pm list packages -U`, `userId=` of `dumpsys package`, file owners)."""
    return 10000 + zlib.crc32(pkg.name.encode()) % 900 if pkg.third_party else 1000


_uid = uid_of


def _has_feature(sh: Shell, args: list[str]) -> int:
    """PackageManagerShellCommand.runHasFeature: `true`/`false`, status 0/1; an optional version to reach."""
    if not args:
        return sh.fail("Error: expected FEATURE name")
    try:
        wanted = int(args[1]) if len(args) > 1 else 0
    except ValueError:
        return sh.fail(f"Error: illegal version number {args[1]}")
    found = False
    for entry in sh.phone.profile.features:
        name, _, version = entry.partition("=")
        found = found or name == args[0] and int(version or 0) >= wanted
    sh.out(f"{str(found).lower()}\n")
    return 0 if found else 1


def _pm_path(sh: Shell, args: list[str]) -> int:
    names = [a for a in args if not a.startswith("-")]
    pkg = sh.phone.profile.package(names[-1]) if names else None
    if pkg is None:
        return 1
    sh.out(f"package:{pkg.apk_path()}\n")
    return 0


@command("pm")
def _pm(sh: Shell, args: list[str]) -> int:
    return _cmd_package(sh, args)


@command("cmd")
def _cmd(sh: Shell, args: list[str]) -> int:
    if args and args[0] == "package":
        return _cmd_package(sh, args[1:])
    if args and args[0] in CMD_SERVICES:
        return CMD_SERVICES[args[0]](sh, args[1:])
    if args and args[0] in ("statusbar", "notification", "role", "input_method", "wifi", "activity"):
        return 0
    return sh.fail(f"cmd: Can't find service: {args[0] if args else ''}", 20)


def dumpsys_package(sh: Shell, name: str) -> int:
    """`dumpsys package <pkg>` with the fields adbutils' app_info parses."""
    pkg = sh.phone.profile.package(name)
    if pkg is None:
        sh.out(f"Unable to find package: {name}\n")
        return 0
    uid = _uid(pkg)
    flags = "HAS_CODE ALLOW_CLEAR_USER_DATA"
    flags = f"{flags} ALLOW_BACKUP" if pkg.third_party else f"SYSTEM {flags}"
    code_path = pkg.apk_path().rsplit("/", 1)[0]
    sig = f"{zlib.crc32(pkg.name.encode()):08x}"
    lines = ["Activity Resolver Table:", "  Non-Data Actions:"]
    for action, _cats, activity in filters(pkg):
        lines += [f"      {action}:", f"        {sig[:7]} {short_component(pkg.name, activity)} filter {sig}"]
    lines += [
        "",
        "Packages:",
        f"  Package [{pkg.name}] ({sig}):",
        f"    userId={uid}",
        f"    pkg=Package{{{sig[:7]} {pkg.name}}}",
        f"    codePath={code_path}",
        f"    resourcePath={code_path}",
        "    primaryCpuAbi=arm64-v8a",
        f"    versionCode={pkg.version_code} minSdk=26 targetSdk={sh.phone.profile.sdk}",
        f"    versionName={pkg.version_name}",
        f"    flags=[ {flags} ]",
        "    timeStamp=2024-01-05 10:00:00",
        "    firstInstallTime=2024-01-05 10:00:00",
        "    lastUpdateTime=2024-01-05 10:00:00",
        f"    signatures=PackageSignatures{{{sig[:7]} version:3, signatures:[{sig}], past signatures:[]}}",
        f"    pkgFlags=[ {flags} ]",
        "    User 0: ceDataInode=0 installed=true hidden=false suspended=false stopped=false notLaunched=false"
        " enabled=0 instant=false virtual=false",
    ]
    sh.out("\n".join(lines) + "\n")
    return 0
