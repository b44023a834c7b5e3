"""Shell commands through the real adb server, in the formats adbutils/uiautomator2 parse."""

from __future__ import annotations

import datetime as dt
import zoneinfo
from pathlib import Path

import adbutils
import pytest

from farm.sim.launcher import SimPhone
from farm.sim.profile import default_profile
from farm.sim.shell_fs import u2_jar_md5
from tests.helpers.phones import FarmFactory


def device(phone: SimPhone) -> adbutils.AdbDevice:
    return adbutils.AdbClient(port=phone.adb_port).device(phone.serial)


def test_getprop_all_and_one(virtual_phone: SimPhone) -> None:
    d = device(virtual_phone)
    everything = d.shell("getprop")
    assert f"[ro.product.model]: [{virtual_phone.profile.model}]" in everything.splitlines()
    assert d.shell("getprop ro.build.version.sdk") == str(virtual_phone.profile.sdk)
    assert d.shell("getprop no.such.key") == ""
    assert d.prop.model == virtual_phone.profile.model


def test_settings_put_then_get(virtual_phone: SimPhone) -> None:
    d = device(virtual_phone)
    assert d.shell("settings get global airplane_mode_on") == "0"
    d.shell("settings put system screen_brightness 42")
    assert d.brightness_value == 42
    assert virtual_phone.state.settings["system"]["screen_brightness"] == "42"
    assert d.shell("settings get secure not_there") == "null"


def test_date_honours_profile_timezone(virtual_farm: FarmFactory) -> None:
    profile = default_profile()
    profile.timezone = "Asia/Shanghai"
    phone = virtual_farm(1, profile=profile)[0]
    d = device(phone)
    assert d.shell("date +%Z") == "CST"
    offset = d.shell("date +%z")
    assert offset == "+0800"
    epoch = int(d.shell("date +%s"))
    assert abs(epoch - dt.datetime.now(zoneinfo.ZoneInfo("UTC")).timestamp()) < 120
    assert d.shell("getprop persist.sys.timezone") == "Asia/Shanghai"


def test_ls_variants_and_errors(virtual_phone: SimPhone) -> None:
    (virtual_phone.root / "sdcard/Download/.hidden").write_text("h")
    (virtual_phone.root / "sdcard/Download/a.txt").write_text("abc")
    d = device(virtual_phone)
    assert d.shell("ls /sdcard/Download").splitlines() == ["a.txt"]
    assert ".hidden" in d.shell("ls -a /sdcard/Download").splitlines()
    long = d.shell("ls -l /storage/emulated/0/Download").splitlines()
    assert long[0].startswith("total ") and long[1].startswith("-rw") and long[1].endswith(" a.txt")
    result = d.shell2("ls /sdcard/nothing")
    assert result.returncode == 1 and "ls: /sdcard/nothing: No such file or directory" in result.output


def test_file_commands_change_the_file_system(virtual_phone: SimPhone) -> None:
    d = device(virtual_phone)
    assert d.shell2("mkdir -p /sdcard/Documents/a/b && echo 'hi there' > /sdcard/Documents/a/b/x.txt").returncode == 0
    assert (virtual_phone.root / "sdcard/Documents/a/b/x.txt").read_text() == "hi there\n"
    assert d.shell("cat /sdcard/Documents/a/b/x.txt") == "hi there"
    assert "File exists" in d.shell2("mkdir /sdcard/Documents/a").output
    assert d.shell2("rm /sdcard/Documents/a").returncode == 1
    assert d.shell2("rm -r -f /sdcard/Documents/a").returncode == 0
    assert not (virtual_phone.root / "sdcard/Documents/a").exists()
    assert d.shell2("rm -f /sdcard/Documents/gone").returncode == 0


def test_unknown_command_answers_like_android(virtual_phone: SimPhone) -> None:
    result = device(virtual_phone).shell2("frobnicate --now")
    assert result.returncode == 127
    assert "/system/bin/sh: frobnicate: inaccessible or not found" in result.output


def test_chaining_quoting_and_sh_c(virtual_phone: SimPhone) -> None:
    d = device(virtual_phone)
    assert d.shell("false && echo no; false || echo yes") == "yes"
    assert d.shell("echo \"a  b\" 'c;d' e\\ f") == "a  b c;d e f"
    assert d.shell("sh -c 'echo inner; exit_not_found'; echo $?") == (
        "inner\n/system/bin/sh: exit_not_found: inaccessible or not found\n127"
    )
    assert d.shell("echo one | grep -c one") == "1"
    assert d.shell("V=7; echo ${V}x") == "7x"


def test_df_reports_profile_free_space(virtual_phone: SimPhone) -> None:
    lines = device(virtual_phone).shell("df /sdcard").splitlines()
    assert lines[0].split()[:4] == ["Filesystem", "1K-blocks", "Used", "Available"]
    assert int(lines[1].split()[3]) == virtual_phone.profile.storage_free_mb * 1024


def test_pm_list_packages_filters(virtual_phone: SimPhone) -> None:
    d = device(virtual_phone)
    every = set(d.list_packages())
    third = set(d.list_packages(["-3"]))
    assert {p.name for p in virtual_phone.profile.packages} == every
    assert third == {p.name for p in virtual_phone.profile.packages if p.third_party}
    with_paths = d.shell("pm list packages -f").splitlines()
    assert any(line.endswith("=com.android.calculator2") and line.startswith("package:/system/") for line in with_paths)
    assert d.shell("pm path dev.agentfarm.shop").startswith("package:/data/app/")
    assert d.shell2("pm path no.such.pkg").returncode == 1


def test_app_info_version_from_dumpsys_package(virtual_phone: SimPhone) -> None:
    info = device(virtual_phone).app_info("dev.agentfarm.shop")
    assert info is not None
    pkg = virtual_phone.profile.package("dev.agentfarm.shop")
    assert pkg is not None
    assert info.version_name == pkg.version_name and info.version_code == pkg.version_code


def test_intent_queries_resolve_standard_capabilities(virtual_phone: SimPhone) -> None:
    d = device(virtual_phone)
    calc = d.shell(
        "cmd package query-activities --brief -a android.intent.action.MAIN -c android.intent.category.APP_CALCULATOR"
    ).splitlines()
    assert calc[0] == "1 activities found:" and calc[1] == "  Activity #0:"
    assert calc[3] == "    com.android.calculator2/.Calculator"
    alarm = d.shell("cmd package resolve-activity --brief -a android.intent.action.SET_ALARM").splitlines()
    assert alarm[0].startswith("priority=") and alarm[1] == "com.android.deskclock/.HandleApiCalls"
    assert d.shell("cmd package resolve-activity --brief -a android.intent.action.NOPE") == "No activity found"
    assert d.shell("cmd package query-activities --brief -a android.intent.action.NOPE") == "No activities found"


def test_battery_window_and_power_dumps(virtual_phone: SimPhone) -> None:
    d = device(virtual_phone)
    battery = d.battery()
    assert battery.level == virtual_phone.profile.battery_level
    assert d.window_size() == (virtual_phone.profile.screen.width, virtual_phone.profile.screen.height)
    assert "mWakefulness=Awake" in d.shell("dumpsys power")
    assert d.is_screen_on()


def test_screen_power_and_keyguard(virtual_phone: SimPhone) -> None:
    d = device(virtual_phone)
    d.shell("input keyevent KEYCODE_SLEEP")
    assert "mWakefulness=Asleep" in d.shell("dumpsys power")
    assert virtual_phone.state.locked
    d.shell("input keyevent 224")
    assert virtual_phone.state.screen_on
    d.shell("wm dismiss-keyguard")
    assert not virtual_phone.state.locked


def test_monkey_and_am_start_bring_app_to_front(virtual_phone: SimPhone) -> None:
    d = device(virtual_phone)
    d.shell("monkey -p com.android.calculator2 -c android.intent.category.LAUNCHER 1")
    assert d.app_current().package == "com.android.calculator2"
    d.shell("am start -n com.android.settings/.Settings")
    assert d.app_current().package == "com.android.settings"
    d.shell("am start -a android.intent.action.SET_ALARM")
    assert d.app_current().package == "com.android.deskclock"
    assert "Error: Activity not started" in d.shell("am start -n no.such/.Main")


def test_screencap_and_uiautomator_dump(virtual_phone: SimPhone) -> None:
    d = device(virtual_phone)
    png = d.shell("screencap -p", encoding=None)
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert d.shell("uiautomator dump /sdcard/dump.xml") == "UI hierchary dumped to: /sdcard/dump.xml"
    xml = (virtual_phone.root / "sdcard/dump.xml").read_text()
    assert xml.startswith("<?xml") and "<hierarchy" in xml


def test_u2_jar_md5_matches_uiautomator2_asset(virtual_phone: SimPhone) -> None:
    out = device(virtual_phone).shell(["toybox", "md5sum", "/data/local/tmp/u2.jar"])
    assert out == f"{u2_jar_md5()}  /data/local/tmp/u2.jar"


def test_app_process_keeps_uiautomator_server_up_until_closed(virtual_phone: SimPhone) -> None:
    d = device(virtual_phone)
    conn = d.shell("CLASSPATH=/data/local/tmp/u2.jar app_process / com.wetest.uia2.Main -p 9008", stream=True)
    conn.conn.settimeout(10)
    assert b"Starting Server" in conn.conn.recv(4096)
    assert virtual_phone.state.u2_server_streams == 1
    conn.close()
    for _ in range(100):
        if virtual_phone.state.u2_server_streams == 0:
            break
        import time

        time.sleep(0.05)
    assert virtual_phone.state.u2_server_streams == 0


def test_parser_splits_operators_and_keeps_quotes() -> None:
    from farm.sim.shell_core import parse

    script = parse("a 'b;c' && d \"e f\" || g; h | i > /sdcard/o 2>&1")
    assert [op for _pipeline, op in script] == ["&&", "||", ";", ";"]
    words = [["".join(part[0] for part in word) for word in simple.words] for simple in script[0][0]]
    assert words == [["a", "b;c"]]
    last = script[3][0]
    assert len(last) == 2 and [op for op, _ in last[1].redirects] == [">", "2>&1"]


def test_exit_status_and_sh_c_scope(virtual_phone: SimPhone) -> None:
    d = device(virtual_phone)
    assert d.shell2("echo a; exit 3; echo never", v2=True).returncode == 3
    assert d.shell("sh -c 'exit 4'; echo after $?") == "after 4"


def test_piped_stdin_runs_each_line(virtual_phone: SimPhone) -> None:
    import subprocess

    from farm.sim.launcher import adb_binary

    done = subprocess.run(
        [adb_binary(), "-P", str(virtual_phone.adb_port), "-s", virtual_phone.serial, "shell"],
        input="echo first\ngetprop ro.product.device\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stdout.splitlines() == ["first", virtual_phone.profile.device]


def test_exec_out_streams_raw_bytes(virtual_phone: SimPhone) -> None:
    import subprocess

    from farm.sim.launcher import adb_binary

    blob = bytes(range(256)) * 1000
    (virtual_phone.root / "sdcard/raw.bin").write_bytes(blob)
    done = subprocess.run(
        [adb_binary(), "-P", str(virtual_phone.adb_port), "-s", virtual_phone.serial, "exec-out",
         "cat /sdcard/raw.bin"],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.stdout == blob


def test_am_instrument_streams_status_protocol(virtual_phone: SimPhone) -> None:
    agent = virtual_phone.profile.agent
    conn = device(virtual_phone).shell(
        f"am instrument -w -r -e class {agent.eval_class} -e evalRun r1 {agent.test_package}/{agent.runner}",
        stream=True,
    )
    conn.conn.settimeout(60)
    output = conn.read_until_close()
    assert "INSTRUMENTATION_CODE:" in output
    assert output.rstrip().splitlines()[-1].startswith("INSTRUMENTATION_CODE:")


def test_host_path_refuses_escapes(tmp_path: Path) -> None:
    from farm.sim.phone import PathEscapeError, PhoneState

    phone = PhoneState(root=tmp_path / "phone")
    assert phone.host_path("/storage/emulated/0/DCIM") == phone.root / "sdcard" / "DCIM"
    assert phone.host_path("/../../etc/passwd") == phone.root / "etc" / "passwd"
    # An absolute link target is a device path: it names the phone's own /tmp, never the host's.
    (phone.root / "sdcard" / "out").symlink_to(tmp_path)
    landed = phone.host_path("/sdcard/out/x")
    assert landed == phone.root / tmp_path.relative_to("/") / "x"
    (phone.root / "sdcard" / "up").symlink_to("../../..")
    with pytest.raises(PathEscapeError):
        phone.host_path("/sdcard/up/x")


def test_export_and_exec_as_adb_logcat_uses_them(virtual_phone: SimPhone) -> None:
    d = device(virtual_phone)
    assert d.shell("export GREETING=hi; echo $GREETING") == "hi"
    assert d.shell("exec echo replaced; echo never") == "replaced"


def test_phones_with_one_profile_have_distinct_hardware_serials(virtual_farm: FarmFactory) -> None:
    phones = virtual_farm(2)
    serials = {device(p).shell("getprop ro.serialno") for p in phones}
    assert len(serials) == 2 and all(s.startswith("SIM") for s in serials)


def test_scripts_get_positional_parameters(virtual_phone: SimPhone) -> None:
    (virtual_phone.root / "sdcard/args.sh").write_text('echo "$0|$1|${2}|$#|$*"; echo $1x $10\n')
    d = device(virtual_phone)
    assert d.shell("sh /sdcard/args.sh one two") == "/sdcard/args.sh|one|two|2|one two\nonex one0"
    assert d.shell("sh -c 'echo $0 $1 $#' name first; echo [$1]") == "name first 1\n[]"
