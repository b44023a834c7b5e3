"""The virtual phone keeps one state: what its apps store is what the shell's state commands read.

Each test drives an app as a user would (uiautomator2 through the real adb server), then reads the phone's
state with the read-only command a probe runs on a real Android 14 phone (adbutils, through the same server)
and checks it in the real output format.
"""

from __future__ import annotations

import hashlib
import re
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import adbutils
import pytest
import uiautomator2 as u2

from farm.sim.launcher import SimPhone
from farm.sim.profile import default_profile
from tests.helpers.phones import FarmFactory

CLOCK = "com.android.deskclock"
CONTACTS = "com.android.contacts"
CALENDAR = "com.android.calendar"
FILES = "com.android.documentsui"
SETTINGS = "com.android.settings"
REAL_CAPTURES = Path(__file__).resolve().parents[3] / "shared" / "data" / "state"
_ALARM_LINE = re.compile(r"^    (RTC_WAKEUP|RTC|ELAPSED_WAKEUP|ELAPSED) #(\d+): Alarm\{(\S+) .*\}$", re.M)


def device(phone: SimPhone) -> adbutils.AdbDevice:
    return adbutils.AdbClient(port=phone.adb_port).device(phone.serial)


def pending_alarms(dump: str) -> list[dict[str, str]]:
    """The `N pending alarms:` section of an Android 12+ `dumpsys alarm`: one dict per alarm (type, number,
    first line, tag, origWhen, triggerTime), read the same way from the phone and from a real capture."""
    header = re.search(r"^  (\d+) pending alarms: $", dump, re.M)
    assert header is not None, "no `N pending alarms:` line"
    section = dump[header.end():]
    end = re.search(r"^  \S", section, re.M)
    section = section[:end.start()] if end else section
    alarms = []
    matches = list(_ALARM_LINE.finditer(section))
    for match, following in zip(matches, [*matches[1:], None], strict=True):
        block = section[match.end():following.start() if following else len(section)]
        tag = re.search(r"^      tag=(\S+)", block, re.M)
        orig = re.search(r"origWhen=(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}|\S+)", block)
        trigger = re.search(r"triggerTime=(\S+ \S+)", block)
        alarms.append({"type": match.group(1), "number": match.group(2), "line": match.group(0),
                       "tag": tag.group(1) if tag else "", "origWhen": orig.group(1) if orig else "",
                       "triggerTime": trigger.group(1) if trigger else ""})
    assert len(alarms) == int(header.group(1))
    return alarms


def test_alarm_added_in_the_clock_appears_in_dumpsys_alarm(virtual_phone: SimPhone) -> None:
    d = u2.connect(virtual_phone.serial)
    # Three minutes ahead: the next alarm (the default 07:30 one rings later) and within 30 minutes, so
    # DeskClock schedules its state change for the ring itself.
    ring = (datetime.now(UTC) + timedelta(minutes=3)).replace(second=0, microsecond=0)
    d.app_start(CLOCK)
    d(description="添加闹钟").click()
    d(resourceId=f"{CLOCK}:id/time").set_text(ring.strftime("%H:%M"))
    d(resourceId=f"{CLOCK}:id/edit_label").set_text("吃药")
    d(resourceId=f"{CLOCK}:id/save").click()
    assert d(resourceId=f"{CLOCK}:id/label", text="吃药").exists

    dump = device(virtual_phone).shell("dumpsys alarm")
    alarms = pending_alarms(dump)
    assert [int(a["number"]) for a in alarms] == list(range(1, len(alarms) + 1))
    ring_ms = int(ring.timestamp() * 1000)
    when = ring.strftime("%Y-%m-%d %H:%M:%S.000")
    clock = [a for a in alarms if a["line"].endswith(" com.android.deskclock}")]
    indicator = next(a for a in clock if a["tag"] == "*walarm*:indicator")
    assert indicator["type"] == "RTC_WAKEUP" and f" type 0 origWhen {ring_ms} whenElapsed " in indicator["line"]
    assert indicator["origWhen"] == when and indicator["triggerTime"] == when
    assert any(a["tag"] == "*walarm*:change_state" and a["origWhen"] == when for a in clock)
    # The 07:30 alarm is scheduled too (its next state change), the disabled 09:00 one is not.
    assert len([a for a in clock if a["tag"] == "*walarm*:change_state"]) == 2
    assert f"user:0 pendingSend:false time:{ring_ms} = {when} = +" in dump
    # Like a real phone, AlarmManager never sees the label: it stays on the clock's own screens.
    assert "吃药" not in dump

    labels = [row.get_text() for row in d(resourceId=f"{CLOCK}:id/label")]
    d(resourceId=f"{CLOCK}:id/onoff")[labels.index("吃药")].click()  # switch the new alarm off
    after = pending_alarms(device(virtual_phone).shell("dumpsys alarm"))
    assert all(a["origWhen"] != when for a in after)


@pytest.mark.skipif(not (REAL_CAPTURES / "alarm").is_dir(), reason="real captures not present")
def test_dumpsys_alarm_reads_like_the_real_android_14_capture(virtual_phone: SimPhone) -> None:
    real = (REAL_CAPTURES / "alarm" / "iqoo12-android14-pending.txt").read_text(encoding="utf-8-sig")
    real_alarms = pending_alarms(real)
    clock = [a for a in real_alarms if a["triggerTime"]]
    assert real_alarms and clock and all(re.fullmatch(r"\S+ \S+", a["triggerTime"]) for a in clock)
    ours = pending_alarms(device(virtual_phone).shell("dumpsys alarm"))
    assert {a["type"] for a in ours} <= {a["type"] for a in real_alarms}
    assert all(a["tag"].startswith(("*walarm*:", "*alarm*:")) for a in ours)


def test_contact_saved_in_the_contacts_app_is_in_the_contacts_provider(virtual_phone: SimPhone) -> None:
    d = u2.connect(virtual_phone.serial)
    shell = device(virtual_phone)
    uri = "content://com.android.contacts/data/phones"
    d.app_start(CONTACTS)
    d(description="新建联系人").click()
    d(resourceId=f"{CONTACTS}:id/name").set_text("Ann")
    d(resourceId=f"{CONTACTS}:id/phone").set_text("+1 555 0100")
    d(text="保存").click()

    rows = shell.shell(f"content query --uri {uri} --projection display_name:data1").splitlines()
    assert len(rows) == 4 and all(re.fullmatch(r"Row: \d+ display_name=.+, data1=.+", r) for r in rows)
    assert any(r.endswith("display_name=Ann, data1=+1 555 0100") for r in rows)
    one = shell.shell(f"content query --uri {uri} --projection display_name:data1 --where \"display_name='Ann'\"")
    assert one == "Row: 0 display_name=Ann, data1=+1 555 0100"
    like = shell.shell(f"content query --uri {uri} --projection display_name --where \"data1 LIKE '%555%'\"")
    assert like == "Row: 0 display_name=Ann"
    ordered = shell.shell(f"content query --uri {uri} --projection display_name --sort 'display_name DESC'")
    names = [line.split("=", 1)[1] for line in ordered.splitlines()]
    assert names == sorted(names, reverse=True)
    contact = shell.shell("content query --uri content://com.android.contacts/contacts "
                          "--projection _id:display_name:has_phone_number --where \"display_name = 'Ann'\"")
    assert re.fullmatch(r"Row: 0 _id=\d+, display_name=Ann, has_phone_number=1", contact)
    assert shell.shell(f"content query --uri {uri} --where \"display_name='Bob'\"") == "No result found."

    # A clause outside the simulated SQL subset is refused as a phone's SQLite refuses what it cannot compile.
    refused = shell.shell2(f"content query --uri {uri} --where \"display_name MATCH 'Ann'\"", v2=True)
    assert refused.returncode == 0 and refused.stdout == ""
    assert refused.stderr.startswith("Error while accessing provider:com.android.contacts\n"
                                     "android.database.sqlite.SQLiteException: near \"MATCH\": syntax error")
    unknown = shell.shell(f"content query --uri {uri} --projection nickname")
    assert "java.lang.IllegalArgumentException: Invalid column nickname" in unknown

    # Deleted in the app, gone from the provider.
    d(text="Ann").click()
    d(text="删除").click()
    d(resourceId="android:id/button1").click()
    assert shell.shell(f"content query --uri {uri} --where \"display_name='Ann'\"") == "No result found."


def test_event_saved_in_the_calendar_is_in_the_calendar_provider(virtual_phone: SimPhone) -> None:
    d = u2.connect(virtual_phone.serial)
    d.app_start(CALENDAR)
    d(description="新建活动").click()
    d(resourceId=f"{CALENDAR}:id/title_input").set_text("Dentist")
    d(resourceId=f"{CALENDAR}:id/when").set_text("2026-12-03 09:30")
    d(text="保存").click()
    d(description="新建活动").click()
    d(resourceId=f"{CALENDAR}:id/title_input").set_text("Trip")
    d(resourceId=f"{CALENDAR}:id/when").set_text("2026-12-07")
    d(text="保存").click()

    shell = device(virtual_phone)
    uri = "content://com.android.calendar/events"
    start = int(datetime(2026, 12, 3, 9, 30, tzinfo=UTC).timestamp() * 1000)  # the phone's zone is UTC
    row = shell.shell(f"content query --uri {uri} --projection title:dtstart:dtend:description "
                      "--where \"title='Dentist'\"")
    assert row == f"Row: 0 title=Dentist, dtstart={start}, dtend={start + 3_600_000}, description=NULL"
    all_day = shell.shell(f"content query --uri {uri} --projection title:allDay:dtstart --where \"allDay = 1\"")
    day = int(datetime(2026, 12, 7, tzinfo=UTC).timestamp() * 1000)
    assert all_day == f"Row: 0 title=Trip, allDay=1, dtstart={day}"
    titles = shell.shell(f"content query --uri {uri} --projection title --sort 'dtstart ASC'").splitlines()
    assert titles[:2] == ["Row: 0 title=Dentist", "Row: 1 title=Trip"] and len(titles) == 4  # + two samples


def test_call_log_and_sms_are_real_but_empty_providers(virtual_phone: SimPhone) -> None:
    shell = device(virtual_phone)
    assert shell.shell("content query --uri content://call_log/calls") == "No result found."
    assert shell.shell("content query --uri content://sms --projection address:body:date") == "No result found."
    assert shell.shell("content query --uri content://sms/inbox") == "No result found."
    # The telephony provider's store is the one source of its rows: what is in it is what a query returns.
    store = virtual_phone.root / "data/data/com.android.providers.telephony/files/sms.json"
    store.parent.mkdir(parents=True, exist_ok=True)
    store.write_text('[{"_id": 1, "address": "10086", "body": "余额不足", "type": 1, "date": 1700000000000},'
                     ' {"_id": 2, "address": "95588", "body": "验证码 1234", "type": 1, "date": 1700000100000}]',
                     encoding="utf-8")
    rows = shell.shell("content query --uri content://sms --projection address:body:subject --sort 'date DESC'")
    assert rows.splitlines() == ["Row: 0 address=95588, body=验证码 1234, subject=NULL",
                                 "Row: 1 address=10086, body=余额不足, subject=NULL"]


def test_refused_provider_answers_with_the_phones_permission_denial(virtual_farm: FarmFactory) -> None:
    profile = default_profile()
    profile.refused_providers = ["sms", "call_log"]
    phone = virtual_farm(1, profile=profile)[0]
    shell = device(phone)
    result = shell.shell2("content query --uri content://sms --projection address:body", v2=True)
    # AOSP's Content.Command.execute catches the exception and returns: the real command exits 0.
    assert result.returncode == 0 and result.stdout == ""
    assert re.match(
        r"Error while accessing provider:sms\n"
        r"java\.lang\.SecurityException: Permission Denial: opening provider "
        r"com\.android\.providers\.telephony\.SmsProvider from \(null\) \(pid=\d+, uid=2000\) "
        r"requires android\.permission\.READ_SMS or android\.permission\.WRITE_SMS\n\tat ", result.stderr)
    calls = shell.shell("content query --uri content://call_log/calls")
    assert "requires android.permission.READ_CALL_LOG or android.permission.WRITE_CALL_LOG" in calls
    # The others stay readable; an authority nobody provides is a different error.
    assert shell.shell("content query --uri content://com.android.contacts/contacts --projection display_name")
    missing = shell.shell("content query --uri content://no.such.provider/x")
    assert missing.startswith("Error while accessing provider:no.such.provider\n"
                              "java.lang.IllegalStateException: Could not find provider: no.such.provider")
    usage = shell.shell("content query --projection a")
    assert usage.endswith("[ERROR] Content provider URI not specified. Did you specify --uri argument?")


def test_settings_app_toggles_are_what_settings_get_and_uimode_print(virtual_phone: SimPhone) -> None:
    d = u2.connect(virtual_phone.serial)
    shell = device(virtual_phone)
    d.app_start(SETTINGS)
    d(text="网络和互联网").click()
    d(text="WLAN").click()
    assert shell.shell("settings get global wifi_on") == "0"
    d(text="WLAN").click()
    assert shell.shell("settings get global wifi_on") == "1"
    d.press("back")
    d(text="已连接的设备").click()
    d(text="蓝牙").click()
    assert shell.shell("settings get global bluetooth_on") == "1"
    d.press("back")
    d(text="网络和互联网").click()
    d(text="飞行模式").click()
    # Airplane mode switches the radios off and remembers them (WIFI_DISABLED_APM_ON, BLUETOOTH_ON_AIRPLANE).
    assert shell.shell("settings get global airplane_mode_on") == "1"
    assert shell.shell("settings get global wifi_on") == "3"
    assert shell.shell("settings get global bluetooth_on") == "2"
    assert d(text="WLAN").info["checked"] is False
    d(text="飞行模式").click()
    assert [shell.shell(f"settings get global {k}") for k in ("airplane_mode_on", "wifi_on", "bluetooth_on")] == \
        ["0", "1", "1"]

    assert shell.shell("cmd uimode night") == "Night mode: no"
    d.press("back")
    d(text="显示").click()
    d(text="深色主题").click()
    assert shell.shell("cmd uimode night") == "Night mode: yes"
    assert shell.shell("settings get secure ui_night_mode") == "2"
    # The other way round too: what the shell sets, the Settings app shows.
    assert shell.shell("cmd uimode night no") == "Night mode: no"
    assert d(text="深色主题").info["checked"] is False
    bad = shell.shell2("cmd uimode night maybe", v2=True)
    assert bad.returncode == 255 and bad.stderr.startswith("Error: mode must be 'yes', 'no', or 'auto'")


def _music(dump: str) -> dict[str, str]:
    block = dump.split("- STREAM_MUSIC:\n", 1)[1].split("\n\n", 1)[0]
    return dict(line.strip().split(": ", 1) if ": " in line else line.strip().split(":", 1)
                for line in block.splitlines())


def test_volume_keys_change_stream_music_in_dumpsys_audio(virtual_phone: SimPhone) -> None:
    shell = device(virtual_phone)
    music = _music(shell.shell("dumpsys audio"))
    assert music["Min"] == "0" and music["Max"] == "15" and music["Muted"] == "false"
    assert music["Current"] == "2 (speaker): 5, 40000000 (default): 5"
    shell.shell("input keyevent KEYCODE_VOLUME_UP KEYCODE_VOLUME_UP")
    u2.connect(virtual_phone.serial).press("volume_up")
    music = _music(shell.shell("dumpsys audio"))
    assert music["Current"].startswith("2 (speaker): 8,") and music["streamVolume"] == "8"
    assert shell.shell("settings get system volume_music_speaker") == "8"
    assert "- STREAM_TTS (aliased to: STREAM_MUSIC):\n" in shell.shell("dumpsys audio")
    shell.shell("input keyevent 25")
    shell.shell("input keyevent KEYCODE_VOLUME_MUTE")
    music = _music(shell.shell("dumpsys audio"))
    assert music["Muted"] == "true" and music["Current"].startswith("2 (speaker): 7,")
    shell.shell("input keyevent VOLUME_UP")  # raising the volume unmutes, as on a phone
    assert _music(shell.shell("dumpsys audio"))["Muted"] == "false"
    shell.shell("input keyevent " + " ".join(["VOLUME_UP"] * 20))
    assert _music(shell.shell("dumpsys audio"))["Current"].startswith("2 (speaker): 15,")


def test_files_in_shared_storage_read_like_toybox(virtual_phone: SimPhone, tmp_path: Path) -> None:
    d = u2.connect(virtual_phone.serial)
    shell = device(virtual_phone)
    d.app_start(FILES)
    d(text="新建文件夹").click()
    d(resourceId="android:id/text1").set_text("Trip")
    d(text="确定").click()

    listing = shell.shell("ls -l /sdcard").splitlines()
    assert listing[0].startswith("total ")
    trip = next(line for line in listing if line.endswith(" Trip"))
    assert re.fullmatch(r"drwxrws--- +\d+ u0_a\d+ +media_rw +3452 \d{4}-\d\d-\d\d \d\d:\d\d Trip", trip)
    size, mtime, kind = shell.shell("stat -c '%s %Y %F' /sdcard/Trip").split(" ", 2)
    assert (size, kind) == ("3452", "directory") and abs(int(mtime) - time.time()) < 120

    local = tmp_path / "note.txt"
    local.write_bytes(b"hello world\n")
    shell.sync.push(local, "/sdcard/Trip/note.txt", check=True)
    lines = shell.shell("ls -la /sdcard/Trip").splitlines()
    assert [line.rsplit(" ", 1)[1] for line in lines[1:]] == [".", "..", "note.txt"]
    assert re.fullmatch(r"-rw-rw---- +1 u0_a\d+ media_rw +12 \d{4}-\d\d-\d\d \d\d:\d\d note\.txt", lines[3])
    size, mtime, kind = shell.shell("stat -c '%s %Y %F' /sdcard/Trip/note.txt").split(" ", 2)
    assert (size, kind) == ("12", "regular file") and abs(int(mtime) - time.time()) < 120
    assert shell.shell("head -c 5 /sdcard/Trip/note.txt") == "hello"
    digest = hashlib.sha256(b"hello world\n").hexdigest()
    assert shell.shell("sha256sum /sdcard/Trip/note.txt") == f"{digest}  /sdcard/Trip/note.txt"
    d(text="Trip").click()
    assert d(text="note.txt").exists  # the Files app lists what was pushed: one tree
    for command, message in (
        ("ls /sdcard/Trip/none", "ls: /sdcard/Trip/none: No such file or directory"),
        ("stat -c %s /sdcard/Trip/none", "stat: '/sdcard/Trip/none': No such file or directory"),
        ("head -c 1 /sdcard/Trip/none", "head: /sdcard/Trip/none: No such file or directory"),
        ("sha256sum /sdcard/Trip/none", "sha256sum: /sdcard/Trip/none: No such file or directory"),
    ):
        result = shell.shell2(command, v2=True)
        assert (result.returncode, result.stdout, result.stderr) == (1, "", message + "\n"), command

    # Deleted in the Files app: gone for the shell.
    d.press("back")
    d(text="Trip").long_click()
    d(resourceId=f"{FILES}:id/action_menu_delete").click()
    d(resourceId="android:id/button1").click()
    assert shell.shell2("ls -l /sdcard/Trip", v2=True).returncode == 1


def test_text_file_made_in_the_files_app_reads_back_in_ls_stat_and_head(virtual_phone: SimPhone) -> None:
    d = u2.connect(virtual_phone.serial)
    shell = device(virtual_phone)
    content = "周五下午三点开会\n带上电脑"
    d.app_start(FILES)
    d(text="Download").click()
    d(resourceId=f"{FILES}:id/action_menu_create_file").click()
    d(resourceId=f"{FILES}:id/file_name").set_text("AF-sim-memo.txt")
    d(resourceId=f"{FILES}:id/file_content").set_text(content)
    d(text="确定").click()

    size = len(content.encode("utf-8"))
    lines = shell.shell("ls -la /sdcard/Download").splitlines()
    memo = next(line for line in lines if line.endswith(" AF-sim-memo.txt"))
    assert re.fullmatch(rf"-rw-rw---- +1 u0_a\d+ +media_rw +{size} \d{{4}}-\d\d-\d\d \d\d:\d\d AF-sim-memo\.txt", memo)
    got_size, mtime, kind = shell.shell("stat -c '%s %Y %F' /sdcard/Download/AF-sim-memo.txt").split(" ", 2)
    assert (int(got_size), kind) == (size, "regular file") and abs(int(mtime) - time.time()) < 120
    assert shell.shell("head -c 65536 /sdcard/Download/AF-sim-memo.txt") == content
    assert shell.shell("head -c 24 /sdcard/Download/AF-sim-memo.txt") == "周五下午三点开会"  # 8 × 3 UTF-8 bytes
    assert d(text="AF-sim-memo.txt").exists  # listed in Download, with its size
    # A taken name is refused: the file keeps what it holds.
    d(resourceId=f"{FILES}:id/action_menu_create_file").click()
    d(resourceId=f"{FILES}:id/file_name").set_text("AF-sim-memo.txt")
    d(resourceId=f"{FILES}:id/file_content").set_text("别的内容")
    d(text="确定").click()
    assert shell.shell("head -c 65536 /sdcard/Download/AF-sim-memo.txt") == content
    d.press("back")  # closes the dialog the refusal left open
    shell.shell("rm /sdcard/Download/AF-sim-memo.txt")


def test_package_versions_in_pm_and_dumpsys_package(virtual_phone: SimPhone) -> None:
    shell = device(virtual_phone)
    listed = shell.shell("pm list packages --show-versioncode").splitlines()
    assert "package:com.android.deskclock versionCode:76000" in listed
    assert all(re.fullmatch(r"package:[\w.]+ versionCode:\d+", line) for line in listed)
    dump = shell.shell("dumpsys package dev.agentfarm.notes")
    assert re.search(r"^    versionCode=231 minSdk=\d+ targetSdk=34$", dump, re.M)
    assert re.search(r"^    versionName=2\.3\.1$", dump, re.M)
    assert shell.app_info("dev.agentfarm.notes").version_name == "2.3.1"


def test_where_and_sort_subset_and_its_refusals(tmp_path: Path) -> None:
    from farm.sim import providers
    from tests.helpers.sim_apps import make_phone

    phone = make_phone(tmp_path)
    uri = "content://com.android.contacts/contacts"

    def names(where: str | None = None, sort: str | None = None) -> list[str]:
        _, rows = providers.query(phone, uri, ["display_name"], where, sort)
        return [str(r["display_name"]) for r in rows]

    assert names("display_name LIKE '王%' OR (_id >= 3 AND photo_id IS NULL)") == ["王芳", "张伟"]
    assert names("NOT display_name = '王芳' AND has_phone_number = '1'") == ["李娜", "张伟"]
    assert names("photo_id = NULL") == []  # SQL: a comparison with NULL is never true
    assert names(sort="_id DESC") == ["张伟", "李娜", "王芳"]
    assert names(sort="display_name COLLATE LOCALIZED ASC, _id") == sorted(names())
    for where, message in (("display_name MATCH 'x'", 'near "MATCH": syntax error'),
                           ("nickname = 'x'", "no such column: nickname"),
                           ("display_name = 'x", "unrecognized token: \"'x\""),
                           ("_id IN (1, 2)", 'near "IN": syntax error')):
        with pytest.raises(providers.ProviderError) as caught:
            names(where)
        assert caught.value.exception == "android.database.sqlite.SQLiteException"
        assert message in caught.value.message and "(code 1 SQLITE_ERROR): , while compiling: SELECT" in \
            caught.value.message


def test_settings_put_takes_a_zero_value_and_skips_only_the_user_option(virtual_phone: SimPhone) -> None:
    dev = device(virtual_phone)
    dev.shell("settings put global wifi_on 0")
    assert dev.shell("settings get global wifi_on").strip() == "0"
    dev.shell("settings --user 0 put system screen_off_timeout 0")
    assert dev.shell("settings --user current get system screen_off_timeout").strip() == "0"


def test_setup_commands_switch_what_the_settings_app_shows(virtual_phone: SimPhone) -> None:
    d = u2.connect(virtual_phone.serial)
    shell = device(virtual_phone)
    shell.shell("svc bluetooth enable")
    assert shell.shell("settings get global bluetooth_on") == "1"
    assert shell.shell("svc bluetooth disable") == ""
    assert shell.shell("settings get global bluetooth_on") == "0"
    d.app_start(SETTINGS)
    d(text="已连接的设备").click()
    assert d(text="蓝牙").info["checked"] is False
    # Airplane mode through the shell moves the radios the way the Settings switch does, and back.
    shell.shell("svc bluetooth enable")
    assert shell.shell("cmd connectivity airplane-mode") == "disabled"
    shell.shell("cmd connectivity airplane-mode enable")
    assert [shell.shell(f"settings get global {k}") for k in ("airplane_mode_on", "wifi_on", "bluetooth_on")] == \
        ["1", "3", "2"]
    shell.shell("svc wifi enable")  # on although airplane mode is on
    assert shell.shell("settings get global wifi_on") == "2"
    shell.shell("cmd connectivity airplane-mode disable")
    assert [shell.shell(f"settings get global {k}") for k in ("airplane_mode_on", "wifi_on", "bluetooth_on")] == \
        ["0", "1", "1"]
    bad = shell.shell2("cmd connectivity airplane-mode maybe", v2=True)
    assert bad.returncode == 255 and "Unsupported argument: maybe" in bad.stderr


def test_media_session_volume_sets_a_stream_clamped_to_its_range(virtual_phone: SimPhone) -> None:
    shell = device(virtual_phone)
    shell.shell("cmd media_session volume --stream 3 --set 9")
    assert _music(shell.shell("dumpsys audio"))["Current"].startswith("2 (speaker): 9,")
    assert shell.shell("settings get system volume_music_speaker") == "9"
    shell.shell("cmd media_session volume --stream 3 --set 99")
    assert _music(shell.shell("dumpsys audio"))["Current"].startswith("2 (speaker): 15,")
    for bad in ("--stream 42 --set 3", "--stream 3", "--stream x --set 3"):
        out = shell.shell2(f"cmd media_session volume {bad}", v2=True)
        assert out.returncode == 255 and out.stderr.startswith("Error:"), bad
    assert shell.shell("settings get system volume_music_speaker") == "15"


def _add_alarm(d: u2.Device, at: datetime, label: str) -> None:
    d.app_start(CLOCK)
    d(description="添加闹钟").click()
    d(resourceId=f"{CLOCK}:id/time").set_text(at.strftime("%H:%M"))
    d(resourceId=f"{CLOCK}:id/edit_label").set_text(label)
    d(resourceId=f"{CLOCK}:id/save").click()


def test_an_alarm_within_two_hours_posts_the_upcoming_notification_with_its_label(virtual_phone: SimPhone) -> None:
    from farm.android.state_parsers import parse_dumpsys_notification

    d = u2.connect(virtual_phone.serial)
    shell = device(virtual_phone)
    assert parse_dumpsys_notification(shell.shell("dumpsys notification --noredact")) == []
    soon = (datetime.now(UTC) + timedelta(minutes=90)).replace(second=0, microsecond=0)
    later = soon + timedelta(hours=2)
    _add_alarm(d, soon, "AF-r1-nap")
    _add_alarm(d, later, "AF-r1-late")  # rings in 3½ hours: nothing posted yet, as on a phone
    weekday = "一二三四五六日"[soon.weekday()]
    rows = parse_dumpsys_notification(shell.shell("dumpsys notification --noredact"))
    assert rows == [{"package": CLOCK, "title": "即将响起的闹钟", "text": f"周{weekday} {soon:%H:%M} - AF-r1-nap"}]
    # Without --noredact the phone prints only lengths: the parser says it cannot know the values.
    with pytest.raises(ValueError, match="redacted"):
        parse_dumpsys_notification(shell.shell("dumpsys notification"))
    (key,) = shell.shell("cmd notification list").splitlines()
    assert key.startswith(f"0|{CLOCK}|") and key in shell.shell("dumpsys notification")
    # Switched off, the alarm's notification goes with it.
    labels = [row.get_text() for row in d(resourceId=f"{CLOCK}:id/label")]
    d(resourceId=f"{CLOCK}:id/onoff")[labels.index("AF-r1-nap")].click()
    assert parse_dumpsys_notification(shell.shell("dumpsys notification --noredact")) == []
