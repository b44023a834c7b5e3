"""State parsers: real captures from ../shared/data/state, synthetic samples in tests/data/state, hostile input."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.android import state_parsers as sp
from tests.helpers.shared_data import shared_data

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "state"


def real(*parts: str) -> str:
    return shared_data("state", *parts).read_text(encoding="utf-8")


def sample(name: str) -> str:
    return (SAMPLES / name).read_text(encoding="utf-8")


# --- content query --------------------------------------------------------------------------------------------

CONTACT_KEYS = ["display_name", "data1"]
SMS_KEYS = ["address", "body", "type", "date"]


def test_content_query_splits_at_known_columns_only() -> None:
    rows = sp.parse_content_query(sample("content_query_contacts.txt"), CONTACT_KEYS)
    assert rows == [
        {"display_name": "Ann Lee", "data1": "+1 555-0100"},
        {"display_name": "王小明", "data1": "138 0013 8000"},
        {"display_name": "Smith, John", "data1": "+44 20 7946 0000"},
        {"display_name": "Bo", "data1": "NULL"},
    ]


def test_content_query_value_holding_a_later_column_and_a_line_break() -> None:
    rows = sp.parse_content_query(sample("content_query_sms.txt"), SMS_KEYS)
    assert rows == [
        {"address": "+15550100", "body": "See you at 7, type=2 ok?", "type": "1", "date": "1767225600000"},
        {"address": "10086", "body": "Line one\nline two, date=tomorrow", "type": "2", "date": "1767229200000"},
        {"address": "+15550101", "body": "", "type": "2", "date": "1767232800000"},
    ]


def test_content_query_value_holding_a_later_or_an_earlier_column() -> None:
    rows = sp.parse_content_query("Row: 0 display_name=Ann, data1=+1 999, data1=+1 555\n"
                                  "Row: 1 display_name=Ann, data1=x, display_name=Eve\n", CONTACT_KEYS)
    assert rows == [{"display_name": "Ann, data1=+1 999", "data1": "+1 555"},
                    {"display_name": "Ann", "data1": "x, display_name=Eve"}]


def test_content_query_row_numbers_are_bounded() -> None:
    text = "Row: 0 display_name=Ann, data1=1\nRow: " + "9" * 5000 + " display_name=Bo, data1=2\n"
    rows = sp.parse_content_query(text, CONTACT_KEYS)  # a 5000-digit row number is no row number: text
    assert len(rows) == 1 and rows[0]["display_name"].startswith("Ann, data1=1\nRow: 999")


def test_content_query_no_result_is_no_rows() -> None:
    assert sp.parse_content_query(sample("content_query_no_result.txt"), CONTACT_KEYS) == []
    assert sp.parse_content_query("\ufeffNo result found.\r\n") == []


def test_content_query_without_projection_splits_at_identifiers_and_glues_repeats() -> None:
    rows = sp.parse_content_query("Row: 0 _id=1, name=a, b=c, name=d\nRow: 1 _id=2, name=x\n")
    assert rows == [{"_id": "1", "name": "a", "b": "c, name=d"}, {"_id": "2", "name": "x"}]


def test_content_query_truncated_last_row_is_dropped() -> None:
    text = "Row: 0 address=1, body=hi, type=1, date=5\nRow: 1 address=2, body=cut her"
    assert sp.parse_content_query(text, SMS_KEYS) == [{"address": "1", "body": "hi", "type": "1", "date": "5"}]


def test_content_query_other_columns_than_projected_fall_back_to_identifiers() -> None:
    rows = sp.parse_content_query("Row: 0 _id=4, title=x\nRow: 1 _id=5, title=y\n", ["title", "dtstart"])
    assert rows == [{"_id": "4", "title": "x"}]  # the last row lacks dtstart: read as cut off


def test_content_query_columns_in_another_order_are_kept() -> None:
    rows = sp.parse_content_query("Row: 0 data1=1, display_name=Ann\nRow: 1 data1=2, display_name=Bo\n", CONTACT_KEYS)
    assert rows == [{"display_name": "Ann", "data1": "1"}, {"display_name": "Bo", "data1": "2"}]


def test_content_query_bom_and_crlf() -> None:
    rows = sp.parse_content_query("\ufeffRow: 0 display_name=Ann, data1=1\r\nRow: 1 display_name=Bo, data1=2\r\n",
                                  CONTACT_KEYS)
    assert rows == [{"display_name": "Ann", "data1": "1"}, {"display_name": "Bo", "data1": "2"}]


def test_content_query_preamble_line_is_ignored() -> None:
    text = "WARNING: linker: unused DT entry\nRow: 0 display_name=Ann, data1=1\n"
    assert sp.parse_content_query(text, CONTACT_KEYS) == [{"display_name": "Ann", "data1": "1"}]


def test_content_query_huge_row_is_dropped_with_its_continuation() -> None:
    huge = "x" * (sp.MAX_LINE_CHARS + 1)
    text = f"Row: 0 display_name={huge}, data1=1\nmore of it\nRow: 1 display_name=Bo, data1=2\n"
    assert sp.parse_content_query(text, CONTACT_KEYS) == [{"display_name": "Bo", "data1": "2"}]


def test_content_query_stops_at_the_row_cap() -> None:
    text = "".join(f"Row: {i} display_name=n{i}, data1={i}\n" for i in range(sp.MAX_ROWS + 5))
    rows = sp.parse_content_query(text, CONTACT_KEYS)
    assert len(rows) == sp.MAX_ROWS
    assert rows[-1] == {"display_name": f"n{sp.MAX_ROWS - 1}", "data1": str(sp.MAX_ROWS - 1)}


def test_content_query_garbage_is_refused() -> None:
    with pytest.raises(ValueError, match="no `Row:` lines"):
        sp.parse_content_query("Segmentation fault\n", CONTACT_KEYS)
    with pytest.raises(ValueError, match="empty output"):
        sp.parse_content_query(" \n")


def test_projection_keys() -> None:
    assert sp.projection_keys(["content", "query", "--uri", "content://sms", "--projection", "a : b:c"]) == [
        "a", "b", "c"]
    assert sp.projection_keys(["content", "query", "--uri", "content://sms"]) is None


# --- dumpsys alarm --------------------------------------------------------------------------------------------

def test_alarm_android11_batches() -> None:
    rows = sp.parse_dumpsys_alarm(real("alarm", "vivo-android11-batches.txt"))
    assert len(rows) == 173  # every Alarm{…} of the 67 batches; Top Alarms / Alarm Stats add none
    assert all(set(r) == set(sp.ALARM_FIELDS) for r in rows)
    assert rows[0] == {"type": "ELAPSED", "when": "+6s156ms", "package": "android", "tag": "*alarm*:TIME_TICK",
                       "alarm_clock": ""}
    reminder = next(r for r in rows if r["package"] == "com.example.reminder_app")
    assert reminder["type"] == "RTC_WAKEUP"
    assert reminder["when"] == "2026-04-17 11:03:00.000"
    assert reminder["tag"].endswith("ScheduledNotificationReceiver")
    assert all(r["when"] and r["tag"] for r in rows)


def test_alarm_android14_pending_with_bom() -> None:
    rows = sp.parse_dumpsys_alarm(real("alarm", "iqoo12-android14-pending.txt"))
    assert len(rows) == 236  # "236 pending alarms:"; `Next wake from idle` and the removal history add none
    assert rows[0] == {"type": "RTC", "when": "2026-08-15 13:03:30.414", "package": "com.vivo.aiengine",
                       "tag": "*alarm*:com.vivo.aiengine.intent.action.SMART_SCHEDULER", "alarm_clock": ""}
    clock = [r for r in rows if r["alarm_clock"]]
    assert clock and all(r["package"] == "com.android.BBKClock" for r in clock)
    assert clock[0]["alarm_clock"] == clock[0]["when"] == "2026-08-17 07:50:00.000"


def test_alarm_stats_sections_alone_are_not_pending_alarms() -> None:
    text = ("Current Alarm Manager state:\n  Pending alarm batches: 0\n\n  Top Alarms:\n"
            "    +25s531ms running, 0 wakeups, 1 alarms: 1000:com.vivo.abe\n      *alarm*:com.vivo.behavior.alarm\n"
            "  Alarm Stats:\n  1000:com.vivo.abe +29s349ms running, 1 wakeups:\n")
    assert sp.parse_dumpsys_alarm(text) == []


def test_alarm_without_pending_section_is_refused() -> None:
    with pytest.raises(ValueError, match="no pending-alarms section"):
        sp.parse_dumpsys_alarm("Current Alarm Manager state:\n  Settings:\n")


def test_alarm_crlf_and_huge_line() -> None:
    huge = "      tag=" + "x" * sp.MAX_LINE_CHARS
    text = ("  2 pending alarms: \r\n"
            "    RTC_WAKEUP #0: Alarm{1 uId=1 creatorUid=1 packageName=com.clock operation=null type 0}\r\n"
            f"{huge}\r\n      tag=*walarm*:ALARM\r\n"
            "      type=RTC_WAKEUP origWhen=2026-01-02 07:30:00.000 window=0 count=0 flags=0x3\r\n"
            "  LazyAlarmStore stats:\r\n")
    assert sp.parse_dumpsys_alarm(text) == [{"type": "RTC_WAKEUP", "when": "2026-01-02 07:30:00.000",
                                             "package": "com.clock", "tag": "*walarm*:ALARM", "alarm_clock": ""}]


def test_alarm_unexpected_lines_and_a_cut_header() -> None:
    text = ("  1 pending alarms:\n    vendor extra: mode=3, when=never\n"
            "    RTC_WAKEUP #0: Alarm{2 uId=1 packageName=com.clock operation=PendingIntent{a: PendingIntentRec\n"
            "      tag=*walarm*:ALARM\n      Alarm clock:\n        triggerTime=2026-01-02 07:30:00.000\n"
            "      type=RTC_WAKEUP origWhen=2026-01-02 07:30:00.000 window=0\n  Past-due non-wakeup alarms: (none)\n")
    assert sp.parse_dumpsys_alarm(text) == [{"type": "RTC_WAKEUP", "when": "2026-01-02 07:30:00.000",
                                             "package": "com.clock", "tag": "*walarm*:ALARM",
                                             "alarm_clock": "2026-01-02 07:30:00.000"}]


def test_alarm_row_cap() -> None:
    one = "    RTC #0: Alarm{1 type 1 when 5 flags 0 com.x}\n      tag=t\n      type=1 when=+1s\n"
    rows = sp.parse_dumpsys_alarm("  Pending alarm batches: 1\nBatch{1 num=1}:\n" + one * (sp.MAX_ROWS + 3))
    assert len(rows) == sp.MAX_ROWS


# --- dumpsys audio --------------------------------------------------------------------------------------------

def test_audio_stream_volumes_real_capture() -> None:
    rows = sp.parse_dumpsys_audio(real("audio", "dumpsys-audio-android14plus.txt"))
    streams = {r["stream"]: r for r in rows}
    assert len(rows) == 12 and "UNKNOWN_STREAM_14" not in streams  # the volume-group section is not read
    assert streams["STREAM_MUSIC"] == {"stream": "STREAM_MUSIC", "index": "15", "muted": "false", "min": "0",
                                       "max": "15", "volume": "5", "alias": ""}
    assert streams["STREAM_RING"]["index"] == "4"
    assert streams["STREAM_SYSTEM"]["alias"] == "STREAM_RING"
    assert all(set(r) == set(sp.AUDIO_FIELDS) for r in rows)


def test_audio_default_device_when_no_speaker_and_old_current_format() -> None:
    text = ("Stream volumes (device: index)\r\n- STREAM_MUSIC:\r\n   Muted: true\r\n   Min: 0\r\n   Max: 15\r\n"
            "   Current: 4 (headset): 9, 40000000 (default): 7\r\n- STREAM_ALARM:\r\n   Current: 2: 6, 40000000: 5\r\n"
            "\r\n- mute affected streams = 0x6f\r\n")
    assert sp.parse_dumpsys_audio(text) == [
        {"stream": "STREAM_MUSIC", "index": "7", "muted": "true", "min": "0", "max": "15", "volume": "", "alias": ""},
        {"stream": "STREAM_ALARM", "index": "6", "muted": "", "min": "", "max": "", "volume": "", "alias": ""},
    ]


def test_audio_without_stream_section_is_refused() -> None:
    with pytest.raises(ValueError, match="Stream volumes"):
        sp.parse_dumpsys_audio(real("audio", "dumpsys-media-session.txt"))


# --- dumpsys package ------------------------------------------------------------------------------------------

def test_package_samsung_excerpt_after_resolver_tables() -> None:
    assert sp.parse_dumpsys_package(real("packages", "samsung-dumpsys-package-excerpt.txt")) == [
        {"package": "com.samsung.android.provider.filterprovider", "versionName": "5.0.07",
         "versionCode": "500700000"},
        {"package": "com.sec.android.app.DataCreate", "versionName": "1.0", "versionCode": "1"},
    ]


def test_package_single_dump_with_bom() -> None:
    assert sp.parse_dumpsys_package(real("packages", "vivo-iqoo12-android14-dumpsys-package-one.txt")) == [
        {"package": "com.launchrecorder.app", "versionName": "1.0.0", "versionCode": "1"}]


def test_package_hidden_system_section_and_not_installed() -> None:
    text = ("Packages:\n  Package [com.x] (1):\n    versionCode=20 minSdk=21 targetSdk=34\n    versionName=2.0\n\n"
            "Hidden system packages:\n  Package [com.x] (2):\n    versionCode=1 minSdk=21\n    versionName=1.0\n")
    assert sp.parse_dumpsys_package(text) == [{"package": "com.x", "versionName": "2.0", "versionCode": "20"}]
    assert sp.parse_dumpsys_package("Dexopt state:\n  Unable to find package: com.nothere\n") == []


# --- dumpsys notification -------------------------------------------------------------------------------------

def test_notifications_sample() -> None:
    assert sp.parse_dumpsys_notification(sample("dumpsys_notification_excerpt.txt")) == [
        {"package": "com.example.notes", "title": "Buy milk, eggs", "text": "Before 6 pm\n(corner shop)"},
        {"package": "com.android.systemui", "title": "Charging", "text": ""},
    ]


def test_notifications_redacted_are_refused_not_empty() -> None:
    with pytest.raises(ValueError, match="redacted"):
        sp.parse_dumpsys_notification(sample("dumpsys_notification_redacted.txt"))


def test_notifications_listed_twice_count_once() -> None:
    record = ("    NotificationRecord(0x1: pkg=com.a user=UserHandle{0} id=1 tag=null importance=3"
              " key=0|com.a|1|null|1: Notification(channel=c))\n        android.title=String (Hi)\n")
    assert sp.parse_dumpsys_notification(record + record) == [{"package": "com.a", "title": "Hi", "text": ""}]


# --- files ----------------------------------------------------------------------------------------------------

def test_ls_long_sample() -> None:
    assert sp.parse_ls_long(sample("ls_la_download.txt")) == [
        {"name": "Receipt, May.pdf", "size": "18234", "mtime": "2026-05-02 10:15", "type": "file"},
        {"name": "My Docs", "size": "3452", "mtime": "2026-05-01 08:00", "type": "dir"},
        {"name": "empty.txt", "size": "0", "mtime": "2026-05-02 10:16", "type": "file"},
        {"name": "latest", "size": "21", "mtime": "2026-01-01 00:00", "type": "link"},
    ]


def test_ls_long_empty_folder_and_error_lines() -> None:
    text = "\ufefftotal 0\r\ndrwxrws--- 2 u0_a1 media_rw 3452 2026-05-01 08:00 .\r\n" \
           "drwxrws--- 9 u0_a1 media_rw 3452 2026-05-01 08:00 ..\r\nls: ./x: Permission denied\r\n"
    assert sp.parse_ls_long(text) == []
    with pytest.raises(ValueError, match="no `ls -l` lines"):
        sp.parse_ls_long("Alarms\nDCIM\n")


def test_ls_long_other_locale_or_tool_lines_are_skipped() -> None:
    text = ("total 8\n-rw-rw---- 1 u0_a1 media_rw 5 Mai  2 10:15 busybox-style.txt\n"
            "-rw-rw---- 1 u0_a1 media_rw 7 2026-05-02 10:15 a.txt\n")
    assert sp.parse_ls_long(text) == [{"name": "a.txt", "size": "7", "mtime": "2026-05-02 10:15", "type": "file"}]


def test_ls_long_full_time_and_row_cap() -> None:
    line = "-rw-rw---- 1 u0_a1 media_rw 7 2026-05-02 10:15:09.123456789 +0800 f{}\n"
    rows = sp.parse_ls_long("".join(line.format(i) for i in range(sp.MAX_ROWS + 2)))
    assert len(rows) == sp.MAX_ROWS and rows[0]["mtime"] == "2026-05-02 10:15:09.123456789 +0800"


def test_stat_samples() -> None:
    assert sp.parse_stat(sample("stat_file.txt")) == [{"size": "18234", "mtime": "1777716900", "type": "file"}]
    assert sp.parse_stat(sample("stat_empty_file.txt"))[0]["type"] == "file"
    assert sp.parse_stat("3452 1777716900 directory\n")[0]["type"] == "dir"
    assert sp.parse_stat("0 1 FIFO (named pipe)\n")[0]["type"] == "other"
    with pytest.raises(ValueError, match="stat -c"):
        sp.parse_stat("%s %Y %F\n")


# --- settings list, pm ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["global", "secure", "system"])
def test_settings_list_real_captures(name: str) -> None:
    text = real("settings", f"emulator-android12-{name}.txt")
    rows = sp.parse_settings_list(text)
    assert len(rows) == len([ln for ln in text.splitlines() if ln.strip()])
    assert all(set(r) == {"key", "value"} for r in rows)


def test_settings_list_traps() -> None:
    system = {r["key"]: r["value"] for r in sp.parse_settings_list(real("settings", "emulator-android12-system.txt"))}
    assert system["alarm_alert"] == "content://media/internal/audio/media/50?title=Cesium&canonical=1"
    assert system["radio.data.stall.recovery.action"] == "0"
    secure = {r["key"]: r["value"] for r in sp.parse_settings_list(real("settings", "emulator-android12-secure.txt"))}
    assert secure["assistant"] == ""
    assert secure["adaptive_sleep"] == "null"
    assert secure["lockscreen.disabled"] == "1"


def test_settings_list_line_without_equals_continues_the_value() -> None:
    assert sp.parse_settings_list("\ufeffa=1\r\nb=two\r\nlines\r\n\r\nc=\r\n") == [
        {"key": "a", "value": "1"}, {"key": "b", "value": "two\nlines"}, {"key": "c", "value": ""}]


def test_pm_packages() -> None:
    assert sp.parse_pm_packages(sample("pm_list_packages_versioncode.txt"))[1] == {
        "package": "com.example.notes", "versionCode": "120"}
    assert sp.parse_pm_packages("package:com.a\r\n") == [{"package": "com.a", "versionCode": ""}]
    with pytest.raises(ValueError, match="no `package:` lines"):
        sp.parse_pm_packages("Error: Unknown option: --show-versioncode\n")


# --- refusals -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "program"), [
    ("refusal_content_permission.txt", "content"), ("refusal_content_no_provider.txt", "content"),
    ("refusal_content_unknown_uri.txt", "content"), ("refusal_ls_missing.txt", "ls"),
    ("refusal_stat_missing.txt", "stat"), ("refusal_head_denied.txt", "head"),
    ("refusal_cmd_no_service.txt", "cmd"), ("refusal_dumpsys_no_service.txt", "dumpsys"),
])
def test_refusal_samples(name: str, program: str) -> None:
    text = sample(name)
    assert sp.refusal(text, program) == text.splitlines()[0]


@pytest.mark.parametrize(("text", "program"), [
    ("Permission Denial: can't dump AlarmManager from pid=1, uid=2000\n", "dumpsys"),
    ("java.lang.SecurityException: Permission Denial: reading SmsProvider uri content://sms\n", "content"),
    ("Unknown URI content://sms/x\n", "content"),
    ("Could not find provider: sms\n", "content"),
    ("/system/bin/sh: head: inaccessible or not found\n", "head"),
    ("Error: Unknown option: --show-versioncode\n", "pm"),
    ("\ufeff\r\n/sdcard/x: No such file or directory\r\n", "ls"),
])
def test_refusal_texts(text: str, program: str) -> None:
    assert sp.refusal(text, program) is not None


@pytest.mark.parametrize(("text", "program"), [
    ("Row: 0 body=Permission denied, type=1\n", "content"),
    ("No result found.\n", "content"),
    ("head: this file merely starts like a note\n", "head"),
    ("java.lang.SecurityException in my notes\n", "head"),
    ("null\n", "settings"),
    ("", "dumpsys"),
])
def test_data_is_not_a_refusal(text: str, program: str) -> None:
    assert sp.refusal(text, program) is None


def test_refusal_message_is_bounded() -> None:
    message = sp.refusal("Error while accessing provider:" + "x" * 1000, "content")
    assert message is not None and len(message) == sp.REFUSAL_CHARS


def test_parse_rows_dispatch() -> None:
    argv = ["content", "query", "--uri", "content://sms", "--projection", "address:body:type:date"]
    assert sp.parse_rows("content_query", sample("content_query_sms.txt"), argv)[0]["type"] == "1"
    assert sp.parse_rows("stat", "1 2 directory\n") == [{"size": "1", "mtime": "2", "type": "dir"}]
    with pytest.raises(ValueError, match="unknown row format"):
        sp.parse_rows("nope", "x")
