"""Parsers that turn a phone's read-only state dumps into rows (`list[dict[str, str]]`) for state probes.

Each parser takes the text a command printed (`content query`, `dumpsys alarm|audio|package|notification`,
toybox `ls -l` / `stat`, `settings list`, `pm list packages`) and returns rows with the same keys in every row,
so a state check can compare rows and fields. Every parser here is pure and bounded: it reads at most
`MAX_INPUT_CHARS` of the text, skips any line longer than `MAX_LINE_CHARS` and stops after `MAX_ROWS` rows, so a
372 KB `dumpsys alarm` or a hostile file name costs the controller nothing. A UTF-8 BOM (a capture saved on a PC)
and CRLF line ends (`adb shell` through a pty) are tolerated everywhere.

`refusal` recognises the phone's refusal (a provider the shell may not read, a missing file, an unknown
service) so the caller can tell "the phone would not say" from "the phone said nothing matches".

The formats were read from AOSP sources (Content.java's QueryCommand, AlarmManagerService, AudioService,
PackageManagerService, NotificationRecord, toybox ls/stat) and checked against the real captures in
`../shared/data/state/` (see its README for the traps each parser handles).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence

MAX_INPUT_CHARS = 16 * 1024 * 1024
"""Characters of one command's output read; the rest is ignored (a full `dumpsys package` is a few MB)."""
MAX_LINE_CHARS = 16_384
"""Longest line read; a longer one is skipped (a real alarm line is ~1.3 KB, a long SMS a few KB)."""
MAX_ROW_CHARS = 65_536
"""Longest `content query` row, continuation lines included; a longer row is dropped."""
MAX_ROWS = 10_000
"""Rows returned by one parse; the rest of the output is not read."""
MAX_CONTINUATION_LINES = 50
"""Lines a notification title or text may span before the parser gives up on its closing parenthesis."""
REFUSAL_CHARS = 300
"""Longest refusal message kept (the phone's first line, cut)."""

Row = dict[str, str]
"""One row: field name → value, every value a string (the phone's own spelling)."""

_BOM = "\ufeff"


def _raw_lines(text: str) -> Iterator[str]:
    """The output's lines (of its first `MAX_INPUT_CHARS`), without a leading BOM, the CR of a CRLF or the line
    end(s) after the last line."""
    for line in text[:MAX_INPUT_CHARS].removeprefix(_BOM).rstrip("\r\n").split("\n"):
        yield line.removesuffix("\r")


def _lines(text: str) -> Iterator[str | None]:
    """`_raw_lines`, with None standing for a line longer than `MAX_LINE_CHARS` (which parsers skip)."""
    for line in _raw_lines(text):
        yield None if len(line) > MAX_LINE_CHARS else line


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _non_empty(text: str) -> None:
    if not text[:MAX_INPUT_CHARS].removeprefix(_BOM).strip():
        raise ValueError("empty output")


# --- refusals -------------------------------------------------------------------------------------------------

_FILE_ERRORS = r"(?:No such file or directory|Permission denied|Not a directory|Is a directory)"
_REFUSED_BY_ANY = [re.compile(p) for p in (
    r"^Error while accessing provider:",  # Content.java prints this, then the exception, on any failure
    r"^(?:java\.lang\.)?SecurityException\b",
    r"^Permission Denial\b",  # dumpsys of a service the shell may not dump
    r"^(?:java\.lang\.\w+: )?(?:Unknown URI|Could not find provider|Unknown authority)\b",
    r"^(?:cmd: )?Can't find service: ",  # `cmd` (cmd.cpp) and `dumpsys` for a service this build lacks
    r"^/system/bin/sh: ",  # the program itself is missing or not executable
)]
_REFUSED_BY_PROGRAM: dict[str, list[re.Pattern[str]]] = {
    "content": [re.compile(r"^usage: "), re.compile(r"^\[ERROR\] ")],
    "pm": [re.compile(r"^Error: ")],
    "cmd": [re.compile(r"^Error: "), re.compile(r"^No shell command implementation")],
    "ls": [re.compile(rf"^(?:(?:ls|toybox): .*|/\S*): {_FILE_ERRORS}$")],  # toybox, and old toolbox (`/x: …`)
    "stat": [re.compile(rf"^(?:(?:stat|toybox): .*|/\S*): {_FILE_ERRORS}$")],
}
# `head` prints a file's own bytes, so only its error line (never "data that looks like an error") counts.
_REFUSED_HEAD = [re.compile(rf"^(?:head|toybox): .*: {_FILE_ERRORS}$"), re.compile(r"^/system/bin/sh: ")]


def refusal(output: str, program: str) -> str | None:
    """The phone's refusal line when `output` (of `program`) is a refusal rather than data, else None.

    Only the first non-empty line is looked at, and only for refusals anchored at its start, so a value that
    merely mentions "Permission denied" further on is data. The message is that line, cut to `REFUSAL_CHARS`."""
    first = next((line.strip() for line in _lines(output) if line is not None and line.strip()), None)
    if first is None:
        return None
    patterns = _REFUSED_HEAD if program == "head" else [*_REFUSED_BY_ANY, *_REFUSED_BY_PROGRAM.get(program, [])]
    if any(p.search(first) for p in patterns):
        return first[:REFUSAL_CHARS]
    return None


# --- content query --------------------------------------------------------------------------------------------

_ROW = re.compile(r"^Row: (\d{1,9}) ")
_NO_RESULT = "No result found."
_GENERIC_SPLIT = re.compile(r", (?=[A-Za-z_][A-Za-z0-9_]*=)")
_IDENT_EQ = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=")


def projection_keys(argv: Sequence[str]) -> list[str] | None:
    """The column names of a `content query` argv's `--projection a:b:c` (None without one)."""
    for flag, value in zip(argv, argv[1:], strict=False):
        if flag == "--projection":
            # Content.java splits on ":" with surrounding blanks.
            keys = [k.strip() for k in value.split(":")]
            return [k for k in keys if k] or None
    return None


def _split_known(body: str, keys: Sequence[str]) -> Row | None:
    """Split `k0=v0, k1=v1, …` when the columns and their order are known; None when the body does not fit.

    Boundaries are taken right to left: the last `, kN=`, then the last `, kN-1=` before it, and so on. A value
    may then hold `, <any later column>=` or `, <an earlier column>=` and still split right; only a value that
    holds `, <its own column>=` is cut at the wrong place (that text is ambiguous to anyone)."""
    if not body.startswith(keys[0] + "="):
        return None
    start0 = len(keys[0]) + 1
    values: Row = {}
    end = len(body)
    for key in reversed(keys[1:]):
        sep = f", {key}="
        pos = body.rfind(sep, start0, end)
        if pos < 0:
            return None
        values[key] = body[pos + len(sep):end]
        end = pos
    values[keys[0]] = body[start0:end]
    return values


def _split_generic(body: str) -> Row | None:
    """Split at every `, <identifier>=`; a piece whose column repeats one already seen is glued back onto the
    value before it (the value held `, name=`). None when the body does not start with `name=`."""
    if not _IDENT_EQ.match(body):
        return None
    row: Row = {}
    last: str | None = None
    for piece in _GENERIC_SPLIT.split(body):
        match = _IDENT_EQ.match(piece)
        if match is None or match.group(1) in row:
            if last is not None:
                row[last] += ", " + piece
            continue
        last = match.group(1)
        row[last] = piece[match.end():]
    return row


def parse_content_query(text: str, keys: Sequence[str] | None = None) -> list[Row]:
    """Rows of `content query` output (`Row: 0 display_name=Ann, data1=+1 555…`; "No result found." → []).

    `keys` are the `--projection` columns in order; with them a row splits only at `, <known column>=`
    boundaries, without them at every `, <identifier>=`. A value that holds a line break continues on the next
    lines (they join the row with "\\n"). A row that does not fit the known columns in order is split generically
    (a provider may order or name columns its own way), except that a last row lacking a projected column is
    dropped (the output was cut). NULL is the text `NULL`, a blob `BLOB`.
    ValueError when the output has neither rows nor "No result found."."""
    _non_empty(text)
    bodies: list[str | None] = []
    expected = 0
    no_result = False
    for line in _raw_lines(text):
        too_long = len(line) > MAX_LINE_CHARS
        match = _ROW.match(line)
        if match is not None and int(match.group(1)) >= expected:
            if len(bodies) >= MAX_ROWS:
                break
            expected = int(match.group(1)) + 1
            bodies.append(None if too_long else line[match.end():])
        elif too_long:
            if bodies:
                bodies[-1] = None  # a skipped line belongs to this row: drop the row rather than half of it
        elif bodies:
            body = bodies[-1]
            if body is not None:
                body += "\n" + line
                bodies[-1] = body if len(body) <= MAX_ROW_CHARS else None
        elif line.strip() == _NO_RESULT:
            no_result = True
    if not bodies:
        if no_result:
            return []
        raise ValueError("content query output has no `Row:` lines and no \"No result found.\"")
    rows: list[Row] = []
    for i, body in enumerate(bodies):
        if body is None:
            continue
        row = _split_known(body, keys) if keys else None
        if row is None:
            row = _split_generic(body)
            if keys and i == len(bodies) - 1 and (row is None or not set(keys) <= set(row)):
                continue  # the last row lacks a projected column: the output was cut
        if row is not None:
            rows.append(row)
    return rows


# --- dumpsys alarm --------------------------------------------------------------------------------------------

_PENDING = re.compile(r"^\s*(?:Pending alarm batches: \d+|\d+ pending alarms:)\s*$")
_ALARM_HEAD = re.compile(r"^\s+(?P<type>[A-Z][A-Z_]*) #\d+: Alarm\{(?P<body>.*)$")  # `}` may be cut off
_PACKAGE_NAME = re.compile(r"\bpackageName=(\S+)")
_DATE_OR_TOKEN = r"(?P<v>-?\d{4,}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?|\S+)"
_WHEN_12 = re.compile(r"\borigWhen=" + _DATE_OR_TOKEN)  # Android 12+: `type=RTC origWhen=2026-08-15 13:03:30.414`
_WHEN_11 = re.compile(r"\bwhen=" + _DATE_OR_TOKEN)  # ≤ 11: `type=0 … when=2026-04-17 11:03:00.000` (last field)
_TAG = re.compile(r"^\s+tag=(.*)$")
_TRIGGER = re.compile(r"^\s+triggerTime=(.*)$")
ALARM_FIELDS = ("type", "when", "package", "tag", "alarm_clock")
"""Keys of every `dumpsys alarm` row."""


def parse_dumpsys_alarm(text: str) -> list[Row]:
    """Pending alarms of `dumpsys alarm`: type (`RTC_WAKEUP`…), when, package, tag, alarm_clock.

    Reads both layouts: Android ≤ 11 (`Pending alarm batches: N`, then `Batch{…}` groups) and Android 12+
    (`N pending alarms:`). Only that section is read, so `Top Alarms`, `Alarm Stats`, `Next wake from idle` and
    the removal history, which name the same packages, never count as pending alarms. `when` is the phone's
    wall-clock time (`2026-04-17 11:03:00.000`) for RTC alarms and a time relative to now (`+6s156ms`) for
    ELAPSED ones; `alarm_clock` is the trigger time of an alarm set with setAlarmClock (what a clock app's
    alarms are), else "". ValueError when the output has no pending-alarms section."""
    _non_empty(text)
    rows: list[Row] = []
    in_pending = False
    found = False
    current: Row | None = None
    clock_next = False
    for line in _lines(text):
        if line is None:
            continue
        if not in_pending:
            if _PENDING.match(line):
                in_pending = found = True
            continue
        if not line.strip():
            continue
        if _indent(line) <= 2 and not line.startswith("Batch{"):
            break  # the next section of the dump
        head = _ALARM_HEAD.match(line)
        if head is not None:
            if len(rows) >= MAX_ROWS:
                break
            body = head.group("body").rstrip().removesuffix("}")
            named = _PACKAGE_NAME.search(body)
            package = named.group(1) if named else (body.split()[-1] if body.split() else "")
            current = dict.fromkeys(ALARM_FIELDS, "")
            current.update(type=head.group("type"), package=package)
            rows.append(current)
            clock_next = False
            continue
        if current is None:
            continue
        stripped = line.strip()
        if (tag := _TAG.match(line)) is not None and not current["tag"]:
            current["tag"] = tag.group(1).strip()
        elif stripped.startswith("type=") and not current["when"]:
            when = _WHEN_12.search(stripped) or _WHEN_11.search(stripped)
            current["when"] = when.group("v") if when else ""
        elif stripped == "Alarm clock:":
            clock_next = True
        elif clock_next and (trigger := _TRIGGER.match(line)) is not None:
            current["alarm_clock"] = trigger.group(1).strip()
            clock_next = False
    if not found:
        raise ValueError("no pending-alarms section (neither `Pending alarm batches: N` nor `N pending alarms:`)")
    return rows


# --- dumpsys audio --------------------------------------------------------------------------------------------

_STREAMS_HEADER = re.compile(r"^Stream volumes \(device: index\)")
_STREAM = re.compile(r"^- (?P<stream>STREAM_[A-Z0-9_]+)(?: \(aliased to: (?P<alias>STREAM_[A-Z0-9_]+)\))?:\s*$")
_CURRENT_PAIR = re.compile(r"(?P<dev>[0-9a-fA-F]+)(?: \((?P<name>[^)]*)\))?: (?P<index>\d+)")
_SPEAKER, _DEFAULT = "2", "40000000"
AUDIO_FIELDS = ("stream", "index", "muted", "min", "max", "volume", "alias")
"""Keys of every `dumpsys audio` row."""


def _current_index(current: str) -> str:
    """The index for the speaker (device 0x2), else for the default device (0x40000000), else ""."""
    pairs = {m.group("dev").lower(): m.group("index") for m in _CURRENT_PAIR.finditer(current)}
    return pairs.get(_SPEAKER) or pairs.get(_DEFAULT) or ""


def parse_dumpsys_audio(text: str) -> list[Row]:
    """Stream volumes of `dumpsys audio`: stream (`STREAM_MUSIC`…), index, muted, min, max, volume, alias.

    `index` is the stream's index for the speaker, else for the default device, from the `Current:` list of
    `hexdevice (name): index` pairs; `volume` is the `streamVolume:` line (the index for the device the stream
    plays on now), "" where the build does not print it; `alias` names the stream this one follows
    (`(aliased to: STREAM_RING)`), else "". Only the `Stream volumes` section is read: the volume-group section
    uses the same keys and is ignored. ValueError when there is no `Stream volumes` section."""
    _non_empty(text)
    rows: list[Row] = []
    in_section = False
    found = False
    current: Row | None = None
    for line in _lines(text):
        if line is None:
            continue
        if not in_section:
            if _STREAMS_HEADER.match(line):
                in_section = found = True
            continue
        if not line.strip():
            continue
        stream = _STREAM.match(line)
        if stream is not None:
            if len(rows) >= MAX_ROWS:
                break
            current = dict.fromkeys(AUDIO_FIELDS, "")
            current.update(stream=stream.group("stream"), alias=stream.group("alias") or "")
            rows.append(current)
            continue
        if _indent(line) == 0:
            break  # `- mute affected streams`, `Volume Groups …`: the section is over
        if current is None:
            continue
        key, sep, value = line.strip().partition(":")
        if not sep:
            continue
        key, value = key.strip(), value.strip()
        if key == "Muted":
            current["muted"] = value
        elif key in ("Min", "Max"):
            current[key.lower()] = value
        elif key == "streamVolume":
            current["volume"] = value
        elif key == "Current":
            current["index"] = _current_index(value)
    if not found:
        raise ValueError("no `Stream volumes (device: index)` section")
    return rows


# --- dumpsys package ------------------------------------------------------------------------------------------

_PACKAGE = re.compile(r"^\s+Package \[(?P<name>[^\]]+)\]")
_VERSION_CODE = re.compile(r"\bversionCode=(\d+)")
_VERSION_NAME = re.compile(r"^\s+versionName=(.*)$")
PACKAGE_FIELDS = ("package", "versionName", "versionCode")
"""Keys of every `dumpsys package` row."""


def parse_dumpsys_package(text: str) -> list[Row]:
    """Packages of `dumpsys package [<pkg>]`: package, versionName, versionCode.

    Only the `Packages:` section is read: the resolver tables before it name the same packages, and `Hidden
    system packages:` after it holds the factory version of an updated app. `versionCode=` shares its line with
    `minSdk=`/`targetSdk=`; `versionName=` has its own. No `Packages:` section → [] (the package is not
    installed)."""
    _non_empty(text)
    rows: list[Row] = []
    in_section = False
    current: Row | None = None
    for line in _lines(text):
        if line is None:
            continue
        if not in_section:
            in_section = line.rstrip() == "Packages:"
            continue
        if line.strip() and _indent(line) == 0:
            break
        package = _PACKAGE.match(line)
        if package is not None:
            if len(rows) >= MAX_ROWS:
                break
            current = dict.fromkeys(PACKAGE_FIELDS, "")
            current["package"] = package.group("name")
            rows.append(current)
            continue
        if current is None:
            continue
        if not current["versionCode"] and (code := _VERSION_CODE.search(line)) is not None:
            current["versionCode"] = code.group(1)
        elif not current["versionName"] and (name := _VERSION_NAME.match(line)) is not None:
            current["versionName"] = name.group(1).strip()
    return rows


# --- dumpsys notification -------------------------------------------------------------------------------------

_RECORD = re.compile(r"^(?P<indent>\s*)NotificationRecord\(.*?\bpkg=(?P<pkg>\S+)")
_RECORD_KEY = re.compile(r"\bkey=(?P<key>.+?)(?:: Notification\(|\s|$)")
_EXTRA = re.compile(r"^\s*android\.(?P<field>title|text)=(?P<rest>.*)$")
_EXTRA_VALUE = re.compile(r"^\w+ \((?P<v>.*)$")
NOTIFICATION_FIELDS = ("package", "title", "text")
"""Keys of every `dumpsys notification` row."""


def _extra_value(rest: str, following: Iterator[str | None]) -> str | None:
    """`String (Hello)` → Hello; `null` → ""; a redacted value (`String [length=5]`, or a bare `String` on old
    builds) → None. A value whose closing parenthesis is on a later line takes those lines (at most
    `MAX_CONTINUATION_LINES`)."""
    rest = rest.strip()
    if rest == "null":
        return ""
    match = _EXTRA_VALUE.match(rest)
    if match is None:
        return None
    value = match.group("v")
    for _ in range(MAX_CONTINUATION_LINES):
        if value.endswith(")"):
            return value[:-1]
        nxt = next(following, None)
        if nxt is None:
            break
        value += "\n" + nxt
    return value.removesuffix(")")


def parse_dumpsys_notification(text: str) -> list[Row]:
    """Posted notifications of `dumpsys notification --noredact`: package, title, text.

    Each `NotificationRecord(… pkg=<package> … key=<key>…)` is one row (a record listed twice, once per list,
    counts once, by key); its title and text come from the `android.title=` / `android.text=` lines of its
    extras (`String (…)`, `SpannableString (…)`), "" when absent or null. Archived notifications
    (`StatusBarNotification(…)` lines) are not read. ValueError when a title or text is redacted (`String
    [length=5]`: the command lacked `--noredact` or the build ignores it), since its value is then unknown."""
    _non_empty(text)
    rows: list[Row] = []
    seen: set[str] = set()
    current: Row | None = None
    indent = 0
    lines = _lines(text)
    for line in lines:
        if line is None:
            continue
        record = _RECORD.match(line)
        if record is not None:
            key = _RECORD_KEY.search(line)
            ident = key.group("key") if key else f"#{len(rows)}"
            current = None
            if ident in seen:
                continue
            if len(rows) >= MAX_ROWS:
                break
            seen.add(ident)
            indent = len(record.group("indent"))
            current = dict.fromkeys(NOTIFICATION_FIELDS, "")
            current["package"] = record.group("pkg")
            rows.append(current)
            continue
        if current is None:
            continue
        if line.strip() and _indent(line) <= indent:
            current = None  # the record's block is over
            continue
        extra = _EXTRA.match(line)
        if extra is not None and not current[extra.group("field")]:
            value = _extra_value(extra.group("rest"), lines)
            if value is None:
                raise ValueError(f"notification {extra.group('field')}s are redacted (run with --noredact)")
            current[extra.group("field")] = value
    return rows


# --- files: ls -l and stat ------------------------------------------------------------------------------------

_LS_LONG = re.compile(
    r"^(?P<perm>[-dlcbps][-rwxsStT]{9})[.+@]?\s+(?:\d+\s+)?\S+\s+\S+\s+"
    r"(?P<size>\d+|\d+,\s*\d+)\s+(?P<mtime>\d{4}-\d\d-\d\d \d\d:\d\d(?::\d\d(?:\.\d+)?)?(?: [-+]\d{4})?) (?P<name>.*)$")
_TYPE_OF_MODE = {"-": "file", "d": "dir", "l": "link"}
FILE_FIELDS = ("name", "size", "mtime", "type")
"""Keys of every `ls -l` / `stat` row."""


def parse_ls_long(text: str) -> list[Row]:
    """Entries of toybox `ls -l` / `ls -la`: name, size (bytes), mtime, type (file|dir|link|other).

    `mtime` is the phone's local time as ls prints it (`2026-04-17 11:03`); `.`, `..` and the `total N` line are
    skipped; a link's name is the part before ` -> `. Lines that are not entries (an error about one unreadable
    entry) are skipped. ValueError when nothing in the output is an ls line."""
    _non_empty(text)
    rows: list[Row] = []
    recognised = False
    for line in _lines(text):
        if line is None:
            continue
        if re.match(r"^total \d+", line):
            recognised = True
            continue
        match = _LS_LONG.match(line)
        if match is None:
            continue
        recognised = True
        kind = _TYPE_OF_MODE.get(match.group("perm")[0], "other")
        name = match.group("name")
        if kind == "link":
            name = name.split(" -> ", 1)[0]
        if name in (".", ".."):
            continue
        if len(rows) >= MAX_ROWS:
            break
        rows.append({"name": name, "size": match.group("size"), "mtime": match.group("mtime"), "type": kind})
    if not recognised:
        raise ValueError("no `ls -l` lines in the output")
    return rows


STAT_FORMAT = "%s %Y %F"
"""The one `stat -c` format state probes use: size in bytes, mtime in epoch seconds, file type in words."""
_STAT = re.compile(r"^(?P<size>\d+) (?P<mtime>\d+) (?P<type>[A-Za-z][A-Za-z ()]*)$")
_STAT_TYPES = {"regular file": "file", "regular empty file": "file", "directory": "dir", "symbolic link": "link"}


def parse_stat(text: str) -> list[Row]:
    """One row per line of `stat -c '%s %Y %F' <path>`: size (bytes), mtime (epoch seconds), type
    (file|dir|link|other; toybox says "regular empty file" for an empty file, which is a file).
    ValueError when no line has that shape."""
    _non_empty(text)
    rows: list[Row] = []
    for line in _lines(text):
        match = _STAT.match(line.strip()) if line is not None else None
        if match is None:
            continue
        if len(rows) >= MAX_ROWS:
            break
        kind = _STAT_TYPES.get(match.group("type").strip(), "other")
        rows.append({"size": match.group("size"), "mtime": match.group("mtime"), "type": kind})
    if not rows:
        raise ValueError(f"no `stat -c '{STAT_FORMAT}'` line in the output")
    return rows


# --- settings list, pm list packages --------------------------------------------------------------------------

_SETTING = re.compile(r"^(?P<key>[^\s=]+)=(?P<value>.*)$")


def parse_settings_list(text: str) -> list[Row]:
    """Rows of `settings list global|secure|system`: key, value.

    Split at the first `=` (a value may hold `=`: `alarm_alert=content://…?title=Cesium&canonical=1`); keys may
    hold dots; `null` and an empty value are kept as printed; a line without `=` continues the value before
    it (a value with a line break)."""
    _non_empty(text)
    rows: list[Row] = []
    for line in _lines(text):
        if line is None:
            continue
        match = _SETTING.match(line)
        if match is None:
            if rows and line:
                rows[-1]["value"] += "\n" + line
            continue
        if len(rows) >= MAX_ROWS:
            break
        rows.append({"key": match.group("key"), "value": match.group("value")})
    return rows


_PM_PACKAGE = re.compile(r"^package:(?P<package>[^\s=]+)(?: versionCode:(?P<code>-?\d+))?\s*$")


def parse_pm_packages(text: str) -> list[Row]:
    """Rows of `pm list packages --show-versioncode`: package, versionCode ("" when the build omits it).
    ValueError when no line is a `package:` line."""
    _non_empty(text)
    rows: list[Row] = []
    for line in _lines(text):
        match = _PM_PACKAGE.match(line.strip()) if line is not None else None
        if match is None:
            continue
        if len(rows) >= MAX_ROWS:
            break
        rows.append({"package": match.group("package"), "versionCode": match.group("code") or ""})
    if not rows:
        raise ValueError("no `package:` lines in the output")
    return rows


# --- dispatch -------------------------------------------------------------------------------------------------

ROW_PARSERS: dict[str, Callable[[str], list[Row]]] = {
    "dumpsys_alarm": parse_dumpsys_alarm,
    "dumpsys_audio": parse_dumpsys_audio,
    "dumpsys_package": parse_dumpsys_package,
    "dumpsys_notification": parse_dumpsys_notification,
    "ls_long": parse_ls_long,
    "stat": parse_stat,
    "settings_list": parse_settings_list,
    "pm_packages": parse_pm_packages,
}
"""Row format name (a probe's `parser.format`) → parser, for the formats that need nothing but the text."""
ROW_FORMATS = ("content_query", *ROW_PARSERS)
"""Every row format a probe may name."""


def parse_rows(fmt: str, text: str, argv: Sequence[str] = ()) -> list[Row]:
    """Rows of `text` in format `fmt`; `argv` is the command that printed it (`content_query` takes its
    `--projection` columns from there). ValueError when the text is not in that format."""
    if fmt == "content_query":
        return parse_content_query(text, projection_keys(argv))
    parser = ROW_PARSERS.get(fmt)
    if parser is None:
        raise ValueError(f"unknown row format {fmt!r} (known: {', '.join(ROW_FORMATS)})")
    return parser(text)
