"""State commands that read what the virtual phone's apps stored: `content query` and `cmd uimode night`.

`content` follows AOSP's `com.android.commands.content.Content` (Android 14): rows print as `Row: N col=value,
…` (`NULL` for null), an empty cursor as `No result found.`, a bad command line as the usage text plus `[ERROR] …`
on stdout. Whatever goes wrong at the provider — an unknown authority, a `Permission Denial`, an SQLite error —
is caught by `Content.Command.execute`, which prints `Error while accessing provider:AUTHORITY` and the stack
trace on stderr and returns normally: the real command then exits with status 0, and so does this one (a caller
must read the text, not the status, to tell a refusal from an empty provider).
"""

from __future__ import annotations

from farm.sim import providers
from farm.sim.shell_core import Shell, cmd_service, command

_USAGE = (
    "usage: adb shell content [subcommand] [options]\n"
    "\n"
    "usage: adb shell content query --uri <URI> [--user <USER_ID>] [--projection <PROJECTION>] [--where <WHERE>]"
    " [--sort <SORT_ORDER>]\n"
    "  <PROJECTION> is a list of colon separated column names and is formatted:\n"
    "  <COLUMN_NAME>[:<COLUMN_NAME>...]\n"
    "  <SORT_ORDER> is the order in which rows in the result should be sorted.\n"
    "  Example:\n"
    "  # Select \"name\" and \"value\" columns from secure settings where \"name\" is equal to \"new_setting\" and"
    " sort the result by name in ascending order.\n"
    "  adb shell content query --uri content://settings/secure --projection name:value"
    " --where \"name='new_setting'\" --sort \"name ASC\"\n"
    "\n"
)
"""The query part of Content.USAGE (the real text goes on to insert, update, delete, call, read, write, gettype)."""
_SHELL_PID = 21342
"""The pid a refusal names: the `app_process` running `content` (any shell child's pid on a phone)."""
_MAIN = (
    "\tat com.android.commands.content.Content$Command.execute(Content.java:522)\n"
    "\tat com.android.commands.content.Content.main(Content.java:743)\n"
    "\tat com.android.internal.os.RuntimeInit.nativeFinishInit(Native Method)\n"
    "\tat com.android.internal.os.RuntimeInit.main(RuntimeInit.java:369)\n"
)
# Line numbers are those of one Android 14 build; they differ between builds, as on real phones.
_FROM_ACTIVITY_MANAGER = (
    "\tat android.os.Parcel.createExceptionOrNull(Parcel.java:3069)\n"
    "\tat android.os.Parcel.createException(Parcel.java:3053)\n"
    "\tat android.os.Parcel.readException(Parcel.java:3036)\n"
    "\tat android.os.Parcel.readException(Parcel.java:2978)\n"
    "\tat android.app.IActivityManager$Stub$Proxy.getContentProviderExternal(IActivityManager.java:7040)\n"
)


def _from_provider(operation: str) -> str:
    """The frames of an exception the provider threw back through the binder call of `operation`."""
    return (
        "\tat android.database.DatabaseUtils.readExceptionFromParcel(DatabaseUtils.java:172)\n"
        "\tat android.database.DatabaseUtils.readExceptionFromParcel(DatabaseUtils.java:142)\n"
        f"\tat android.content.ContentProviderProxy.{operation}(ContentProviderNative.java:481)\n"
        f"\tat com.android.commands.content.Content${operation.capitalize()}Command.onExecute(Content.java:669)\n"
    )


def _usage_error(sh: Shell, message: str) -> int:
    # Parser.parseCommand prints the usage and the error on stdout and runs nothing: status 0.
    sh.out(_USAGE + "\n[ERROR] " + message + "\n")
    return 0


def _provider_error(sh: Shell, authority: str, exception: str, frames: str) -> int:
    sh.err(f"Error while accessing provider:{authority}\n{exception}\n{frames}{_MAIN}")
    return 0


def _value(value: providers.Value) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, float):
        return repr(value)
    return str(value)


@command("content")
def _content(sh: Shell, args: list[str]) -> int:
    if not args or args[0] not in ("query", "insert", "update", "delete", "call", "read", "write", "gettype"):
        return _usage_error(sh, f"Unsupported operation: {args[0] if args else 'null'}")
    operation, rest = args[0], args[1:]
    options: dict[str, str] = {}
    it = iter(rest)
    for arg in it:
        known = ("--uri", "--user", "--where", "--sort", "--projection") if operation == "query" else \
            ("--uri", "--user", "--where", "--bind", "--method", "--arg", "--extra")
        if arg not in known:
            return _usage_error(sh, f"Unsupported argument: {arg}")
        value = next(it, None)
        if not value or value.startswith("--"):
            return _usage_error(sh, f"No value for argument: {arg}")
        options[arg] = value
    uri = options.get("--uri")
    if uri is None:
        return _usage_error(sh, "Content provider URI not specified. Did you specify --uri argument?")
    authority, _ = providers.split_uri(uri)
    provider = providers.PROVIDERS.get(authority)
    if provider is None:
        return _provider_error(sh, authority, f"java.lang.IllegalStateException: Could not find provider: {authority}",
                               "")
    if authority in sh.phone.profile.refused_providers:
        denial = (f"java.lang.SecurityException: Permission Denial: opening provider {provider.class_name} from "
                  f"(null) (pid={_SHELL_PID}, uid=2000) requires {provider.read_permission} or "
                  f"{provider.write_permission}")
        return _provider_error(sh, authority, denial, _FROM_ACTIVITY_MANAGER)
    if operation != "query":
        # Only reading is simulated: a change through `content` would bypass the app that owns the data.
        return _provider_error(sh, authority, "java.lang.UnsupportedOperationException: the virtual phone's "
                               f"providers are read-only ({operation})", _from_provider(operation))
    projection = None
    if "--projection" in options:
        projection = [c.strip() for c in options["--projection"].split(":")]
    try:
        columns, rows = providers.query(sh.phone, uri, projection, options.get("--where"), options.get("--sort"))
    except providers.ProviderError as exc:
        return _provider_error(sh, authority, f"{exc.exception}: {exc.message}", _from_provider("query"))
    if not rows:
        sh.out("No result found.\n")
        return 0
    for number, row in enumerate(rows):
        sh.out(f"Row: {number} " + ", ".join(f"{c}={_value(row[c])}" for c in columns) + "\n")
    return 0


# Settings.Secure.UI_NIGHT_MODE values (UiModeManager.MODE_NIGHT_*) and the words `cmd uimode night` uses; a
# custom mode (3) is told apart by UI_NIGHT_MODE_CUSTOM_TYPE (0 schedule, 1 bedtime).
_NIGHT_WORDS = {"0": "auto", "1": "no", "2": "yes"}
_NIGHT_MODES = {"auto": ("0", None), "no": ("1", None), "yes": ("2", None), "custom_schedule": ("3", "0"),
                "custom_bedtime": ("3", "1")}


@cmd_service("uimode")
def _uimode(sh: Shell, args: list[str]) -> int:
    secure = sh.phone.settings.setdefault("secure", {})
    if not args or args[0] in ("help", "-h"):
        # BasicShellCommandHandler.handleDefaultCommands: the help text, and -1 as for any command it handles.
        sh.out("UiModeManager service (uimode) commands:\n  help\n    Print this help text.\n"
               "  night [yes|no|auto|custom_schedule|custom_bedtime]\n    Set or read night mode.\n")
        return 255
    if args[0] != "night":
        # Only night mode is simulated (car mode, the custom schedule's times are not).
        sh.out(f"Unknown command: {args[0]}\n")
        return 255
    if len(args) > 1:
        chosen = _NIGHT_MODES.get(args[1])
        if chosen is None:
            sh.err("Error: mode must be 'yes', 'no', or 'auto', or 'custom_schedule', or 'custom_bedtime'\n")
            return 255
        # The shell holds MODIFY_DAY_NIGHT_MODE: UiModeManagerService persists the mode where Settings reads it.
        secure["ui_night_mode"], custom = chosen
        if custom is not None:
            secure["ui_night_mode_custom_type"] = custom
    mode = secure.get("ui_night_mode", "1")
    if mode == "3":
        word = "custom_bedtime" if secure.get("ui_night_mode_custom_type") == "1" else "custom_schedule"
    else:
        word = _NIGHT_WORDS.get(mode, "unknown")
    sh.out(f"Night mode: {word}\n")
    return 0
