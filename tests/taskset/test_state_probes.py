"""State probes: the new catalogue entries, the read-only argument shapes, rows values and refusals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import get_args

import pytest

from farm.android import state_parsers
from farm.errors import FarmError
from farm.taskset.probes import (
    ALLOWED_PROGRAMS,
    ROW_FORMAT_PROGRAM,
    ProbeRefused,
    ProbeSpec,
    RowFormat,
    argv_refusal,
    load_catalogue,
    load_probe,
    probe_rows,
    rows_value,
)
from tests.helpers.shared_data import shared_data

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "state"

ROWS_PROBES = {
    "contacts": "content_query", "calendar_events": "content_query", "call_log": "content_query",
    "sms": "content_query", "alarms": "dumpsys_alarm", "volumes": "dumpsys_audio",
    "notifications": "dumpsys_notification", "files": "ls_long", "file_stat": "stat",
    "package_info": "dumpsys_package", "packages": "pm_packages", "settings_list_global": "settings_list",
    "settings_list_secure": "settings_list", "settings_list_system": "settings_list",
}
PARAMETERISED = ["setting_global", "setting_secure", "setting_system", "files", "file_stat", "file_head",
                 "package_info"]


@pytest.fixture(scope="module")
def catalogue() -> dict[str, ProbeSpec]:
    return load_catalogue()


def sample(name: str) -> str:
    return (SAMPLES / name).read_text(encoding="utf-8")


def write(tmp_path: Path, body: str, name: str = "p") -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(body, encoding="utf-8")
    return path


# --- the catalogue --------------------------------------------------------------------------------------------

def test_every_state_probe_loads_with_its_parser(catalogue: dict[str, ProbeSpec]) -> None:
    for name, fmt in ROWS_PROBES.items():
        assert catalogue[name].parser.kind == "rows", name
        assert catalogue[name].parser.format == fmt, name
    assert catalogue["night_mode"].parser.kind == "regex"
    assert catalogue["file_head"].parser.kind == "text"
    assert {n for n in PARAMETERISED if catalogue[n].parameterised} == set(PARAMETERISED)


def test_row_formats_name_the_state_parsers() -> None:
    assert set(get_args(RowFormat)) == set(state_parsers.ROW_FORMATS) == set(ROW_FORMAT_PROGRAM)


def test_content_probes_project_the_documented_columns(catalogue: dict[str, ProbeSpec]) -> None:
    columns = {name: state_parsers.projection_keys(catalogue[name].argv)
               for name in ("contacts", "calendar_events", "call_log", "sms")}
    assert columns == {"contacts": ["display_name", "data1"],
                       "calendar_events": ["title", "dtstart", "dtend", "description"],
                       "call_log": ["number", "type", "date", "duration"],
                       "sms": ["address", "body", "type", "date"]}


def test_parameters_fill_value_positions(catalogue: dict[str, ProbeSpec]) -> None:
    assert catalogue["setting_secure"].command("lockscreen.disabled") == [
        "settings", "get", "secure", "lockscreen.disabled"]
    assert catalogue["files"].command("Download/My Docs") == ["ls", "-la", "/sdcard/Download/My Docs"]
    assert catalogue["files"].command(".") == ["ls", "-la", "/sdcard/."]
    assert catalogue["file_stat"].command("DCIM/a.jpg") == ["stat", "-c", "%s %Y %F", "/sdcard/DCIM/a.jpg"]
    assert catalogue["file_head"].command("notes.txt") == ["head", "-c", "65536", "/sdcard/notes.txt"]
    assert catalogue["package_info"].command("com.tencent.mm") == ["dumpsys", "package", "com.tencent.mm"]


@pytest.mark.parametrize("param", ["../data", "a/../../data", "/etc/passwd", "a;reboot", "a$(id)", "a\nb",
                                   "名字.txt", "", "a`b`"])
def test_path_parameters_are_refused(catalogue: dict[str, ProbeSpec], param: str) -> None:
    for name in ("files", "file_stat", "file_head"):
        with pytest.raises(ValueError, match="does not match|needs a parameter"):
            catalogue[name].command(param or None)


@pytest.mark.parametrize("param", ["a b", "x;y", "-a", "$(id)"])
def test_setting_keys_are_refused(catalogue: dict[str, ProbeSpec], param: str) -> None:
    with pytest.raises(ValueError, match="does not match"):
        catalogue["setting_global"].command(param)


def test_the_filled_command_is_checked_again(tmp_path: Path) -> None:
    spec = load_probe(write(tmp_path, "description: d\nargv: [dumpsys, package, '{param}']\nparam_pattern: '.*'\n"))
    assert spec.command("com.x") == ["dumpsys", "package", "com.x"]
    with pytest.raises(ValueError, match="gives a refused command"):
        spec.command("--checkin")
    spec = load_probe(write(tmp_path, "description: d\nargv: [ls, '/sdcard/{param}']\nparam_pattern: '.*'\n"))
    with pytest.raises(ValueError, match="gives a refused command"):
        spec.command("../../data")


# --- allowed and refused shapes -------------------------------------------------------------------------------

ALLOWED = [
    ["getprop", "ro.build.version.sdk"], ["settings", "get", "secure", "{param}"], ["settings", "list", "system"],
    ["date", "+%Y"], ["ls", "/sdcard/"], ["ls", "-la", "/sdcard/{param}"], ["dumpsys", "battery"],
    ["dumpsys", "alarm"], ["dumpsys", "audio"], ["dumpsys", "notification"], ["dumpsys", "notification", "--noredact"],
    ["dumpsys", "package", "{param}"], ["dumpsys", "package", "com.x.y"], ["pm", "list", "packages"],
    ["pm", "list", "packages", "--show-versioncode"], ["pm", "list", "packages", "-3", "tencent"],
    ["pm", "path", "com.x.y"], ["cmd", "package", "query-activities", "--brief", "-a", "android.intent.action.MAIN"],
    ["cmd", "uimode", "night"], ["cmd", "notification", "list"], ["wm", "size"],
    ["content", "query", "--uri", "content://sms"],
    ["content", "query", "--uri", "content://call_log/calls", "--projection", "number:date", "--where", "type=1",
     "--sort", "date DESC"],
    ["stat", "-c", "%s %Y %F", "/sdcard/{param}"], ["head", "-c", "65536", "/sdcard/{param}"],
    ["head", "-c", "1", "/sdcard/a"],
]

REFUSED = [
    ["rm", "-rf", "/sdcard"], ["sh", "-c", "id"], ["am", "start", "x"], ["input", "tap", "1", "1"],
    ["settings", "put", "global", "x", "1"], ["settings", "delete", "global", "x"], ["settings", "get", "user", "x"],
    ["settings", "get", "global"], ["settings", "get", "global", "a", "b"], ["settings", "list"],
    ["content", "insert", "--uri", "content://sms", "--bind", "body:s:x"],
    ["content", "update", "--uri", "content://sms", "--bind", "read:i:1"],
    ["content", "delete", "--uri", "content://sms"],
    ["content", "call", "--uri", "content://settings", "--method", "x"],
    ["content", "query"], ["content", "query", "--projection", "a"], ["content", "query", "--uri", "file:///sdcard/x"],
    ["content", "query", "--uri", "content://sms", "--uri", "content://call_log/calls"],
    ["content", "query", "--uri", "content://sms", "--user", "0"],
    ["content", "query", "--uri", "content://sms", "--where"],
    ["content", "query", "--uri", "content://sms", "--where", "{param}"],
    ["cmd", "uimode", "night", "yes"], ["cmd", "uimode", "night", "no"], ["cmd", "uimode", "car", "yes"],
    ["cmd", "notification", "post", "-t", "x", "tag", "text"], ["cmd", "package", "install", "x"],
    ["cmd", "wifi", "set-wifi-enabled", "disabled"],
    ["dumpsys", "battery", "set", "level", "5"], ["dumpsys", "battery", "unplug"],
    ["dumpsys", "deviceidle", "force-idle"],
    ["dumpsys", "activity"], ["dumpsys"], ["dumpsys", "notification", "--proto"], ["dumpsys", "package", "r"],
    ["dumpsys", "package", "com.x", "com.y"],
    ["pm", "uninstall", "com.x"], ["pm", "clear", "com.x"], ["pm", "list", "packages", "--user", "0"],
    ["pm", "disable-user", "com.x"], ["pm", "path", "{param}", "x"],
    ["stat", "/sdcard/x"], ["stat", "-c", "%n", "/sdcard/x"], ["stat", "-c", "%s %Y %F", "relative"],
    ["stat", "-c", "%s %Y %F", "/sdcard/../data"],
    ["head", "/sdcard/x"], ["head", "-c", "65537", "/sdcard/x"], ["head", "-c", "0", "/sdcard/x"],
    ["head", "-n", "5", "/sdcard/x"], ["head", "-c", "10", "{param}"], ["head", "-c", "10", "/a", "/b"],
    ["ls", "-R", "/sdcard"], ["ls", "{param}"], ["ls", "/sdcard/../data"], ["ls", "/a", "/b"],
    ["date", "-s", "0101"], ["date", "+%Y", "+%m"], ["getprop", "a", "b"], ["wm", "size", "100x100"], ["wm", "reset"],
]


@pytest.mark.parametrize("argv", ALLOWED, ids=" ".join)
def test_read_only_shapes_are_allowed(argv: list[str]) -> None:
    assert argv_refusal(argv, template=True) is None


@pytest.mark.parametrize("argv", REFUSED, ids=" ".join)
def test_writing_or_unknown_shapes_are_refused(argv: list[str]) -> None:
    assert argv_refusal(argv, template=True) is not None


def test_refusal_messages_name_the_shapes(tmp_path: Path) -> None:
    with pytest.raises(FarmError, match=r"argv: cmd uimode night takes no further argument"):
        load_probe(write(tmp_path, "description: d\nargv: [cmd, uimode, night, 'yes']\n"))
    with pytest.raises(FarmError, match=r"argv: content is only allowed as: content query --uri"):
        load_probe(write(tmp_path, "description: d\nargv: [content, delete, --uri, 'content://sms']\n"))
    assert set(ALLOWED_PROGRAMS) >= {"content", "stat", "head", "cmd", "dumpsys"}


# --- parser declarations --------------------------------------------------------------------------------------

@pytest.mark.parametrize(("parser", "needle"), [
    ("{kind: rows}", "kind rows needs `format`"),
    ("{kind: strip, format: stat}", "`format` is only for kind rows"),
    ("{kind: rows, format: csv}", "parser.format"),
    ("{kind: rows, format: dumpsys_alarm}", "format dumpsys_alarm reads the output of dumpsys, not getprop"),
])
def test_bad_rows_parsers_are_refused(tmp_path: Path, parser: str, needle: str) -> None:
    with pytest.raises(FarmError, match=needle):
        load_probe(write(tmp_path, f"description: d\nargv: [getprop, ro.x]\nparser: {parser}\n"))


# --- values ---------------------------------------------------------------------------------------------------

def test_rows_value_is_canonical_json(catalogue: dict[str, ProbeSpec]) -> None:
    value = catalogue["contacts"].parse(sample("content_query_contacts.txt"))
    rows = [{"display_name": "Ann Lee", "data1": "+1 555-0100"}, {"display_name": "王小明", "data1": "138 0013 8000"},
            {"display_name": "Smith, John", "data1": "+44 20 7946 0000"}, {"display_name": "Bo", "data1": "NULL"}]
    assert value == json.dumps(rows, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    assert value == rows_value(rows) and probe_rows(value) == rows
    assert "王小明" in value  # not \u-escaped


def test_no_result_is_an_empty_rows_value(catalogue: dict[str, ProbeSpec]) -> None:
    assert catalogue["sms"].parse("No result found.\n") == "[]"
    assert probe_rows("[]") == []


@pytest.mark.parametrize("value", ["", "{}", "[1]", '[{"a": 1}]', '[{"a": null}]', "not json", '"x"'])
def test_probe_rows_refuses_anything_else(value: str) -> None:
    with pytest.raises(ValueError, match="rows value"):
        probe_rows(value)


def test_state_probes_on_real_captures(catalogue: dict[str, ProbeSpec]) -> None:
    alarms = probe_rows(catalogue["alarms"].parse(shared_data("state", "alarm", "iqoo12-android14-pending.txt")
                                                  .read_text(encoding="utf-8")))
    assert len(alarms) == 236
    volumes = probe_rows(catalogue["volumes"].parse(shared_data("state", "audio", "dumpsys-audio-android14plus.txt")
                                                    .read_text(encoding="utf-8")))
    assert {"stream": "STREAM_ALARM", "index": "5", "muted": "false", "min": "1", "max": "7", "volume": "5",
            "alias": ""} in volumes
    one = shared_data("state", "packages", "vivo-iqoo12-android14-dumpsys-package-one.txt").read_text(encoding="utf-8")
    assert probe_rows(catalogue["package_info"].parse(one)) == [
        {"package": "com.launchrecorder.app", "versionName": "1.0.0", "versionCode": "1"}]
    settings = shared_data("state", "settings", "emulator-android12-system.txt").read_text(encoding="utf-8")
    assert {"key": "radio.data.stall.recovery.action", "value": "0"} in probe_rows(
        catalogue["settings_list_system"].parse(settings))


def test_string_state_probes(catalogue: dict[str, ProbeSpec]) -> None:
    assert catalogue["night_mode"].parse(sample("uimode_night_auto.txt")) == "auto"
    assert catalogue["night_mode"].parse("Night mode: yes\r\n") == "yes"
    assert catalogue["night_mode"].parse(sample("uimode_night_custom_bedtime.txt")) == "custom_bedtime"
    with pytest.raises(ValueError, match="does not match"):
        catalogue["night_mode"].parse("Night mode: unknown\n")
    assert catalogue["setting_system"].parse("null\n") == "null"
    assert catalogue["setting_secure"].parse("\n") == ""
    assert catalogue["file_head"].parse("\ufeffline 1\r\nline 2\r\n") == "line 1\nline 2\n"
    assert catalogue["file_head"].parse("") == ""
    assert len(catalogue["file_head"].parse("x" * 70_000)) == 65_536


def test_files_probe_lists_rows(catalogue: dict[str, ProbeSpec]) -> None:
    rows = probe_rows(catalogue["files"].parse(sample("ls_la_download.txt")))
    assert [r["name"] for r in rows] == ["Receipt, May.pdf", "My Docs", "empty.txt", "latest"]
    assert probe_rows(catalogue["file_stat"].parse(sample("stat_file.txt"))) == [
        {"size": "18234", "mtime": "1777716900", "type": "file"}]


def test_a_malformed_output_names_the_probe(catalogue: dict[str, ProbeSpec]) -> None:
    with pytest.raises(ValueError, match="probe alarms: no pending-alarms section") as info:
        catalogue["alarms"].parse("Current Alarm Manager state:\n")
    assert not isinstance(info.value, ProbeRefused)


# --- refusals -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("probe", "name"), [
    ("call_log", "refusal_content_permission.txt"), ("calendar_events", "refusal_content_no_provider.txt"),
    ("sms", "refusal_content_unknown_uri.txt"), ("contacts", "refusal_content_permission.txt"),
    ("files", "refusal_ls_missing.txt"), ("file_stat", "refusal_stat_missing.txt"),
    ("file_head", "refusal_head_denied.txt"), ("night_mode", "refusal_cmd_no_service.txt"),
    ("notifications", "refusal_dumpsys_no_service.txt"), ("alarms", "refusal_dumpsys_no_service.txt"),
])
def test_each_refusal_raises_probe_refused(catalogue: dict[str, ProbeSpec], probe: str, name: str) -> None:
    text = sample(name)
    with pytest.raises(ProbeRefused) as info:
        catalogue[probe].parse(text)
    assert str(info.value) == text.splitlines()[0]
    assert isinstance(info.value, ValueError)  # callers that catch ValueError keep working


@pytest.mark.parametrize(("probe", "text"), [
    ("sms", "Error while accessing provider:sms\njava.lang.SecurityException: Permission Denial: reading "
            "com.android.providers.telephony.SmsProvider uri content://sms from pid=1, uid=2000 requires "
            "android.permission.READ_SMS\n"),
    ("volumes", "Permission Denial: can't dump audio from from pid=1, uid=2000\n"),
    ("packages", "Error: Unknown option: --show-versioncode\n"),
    ("setting_global", "/system/bin/sh: settings: inaccessible or not found\n"),
    ("sdk_int", "/system/bin/sh: getprop: not found\n"),
    ("files", "\ufeffls: /sdcard/x: Permission denied\r\n"),
    ("file_head", "head: /sdcard/DCIM: Is a directory\n"),
])
def test_refusals_for_any_kind(catalogue: dict[str, ProbeSpec], probe: str, text: str) -> None:
    with pytest.raises(ProbeRefused):
        catalogue[probe].parse(text)


def test_a_refusal_message_is_the_first_line_bounded(catalogue: dict[str, ProbeSpec]) -> None:
    with pytest.raises(ProbeRefused) as info:
        catalogue["sms"].parse("Error while accessing provider:" + "s" * 500 + "\nstack\n")
    assert len(str(info.value)) == 300 and str(info.value).startswith("Error while accessing provider:")


def test_data_that_mentions_a_refusal_is_data(catalogue: dict[str, ProbeSpec]) -> None:
    value = catalogue["sms"].parse("Row: 0 address=1, body=Permission denied, type=1, date=2\n")
    assert probe_rows(value)[0]["body"] == "Permission denied"
    assert catalogue["file_head"].parse("Permission Denial: a note I wrote\n") == "Permission Denial: a note I wrote\n"
