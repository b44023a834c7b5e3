"""The phone's log: `log` writes, `logcat` reads (dump, clear, filters, formats, streaming) through the adb CLI and
adbutils, as on a real phone; the ring stays bounded under a flood, a huge message is cut as liblog cuts it, and a
streaming reader whose client goes away leaves nothing behind."""

from __future__ import annotations

import datetime as dt
import re
import subprocess
import threading
from pathlib import Path

import adbutils
import pytest

from farm.sim.launcher import SimPhone, adb_binary
from farm.sim.logbuf import MAX_PAYLOAD, RING_BYTES
from tests.sim.clients import adb, logcat_tasks, phone_loop, wait_until

THREADTIME = re.compile(r"(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{3}) ([ \d]{5}) ([ \d]{5}) ([VDIWEFS]) (.{8,}?): (.*)")


def shell(phone: SimPhone, command: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return adb(phone, "shell", command, stdin=stdin)


def device(phone: SimPhone) -> adbutils.AdbDevice:
    return adbutils.AdbClient(port=phone.adb_port).device(phone.serial)


def test_threadtime_is_the_default_in_aosps_layout(virtual_phone: SimPhone) -> None:
    assert shell(virtual_phone, "log -p w -t Probe 'disk almost full'").returncode == 0
    out = adb(virtual_phone, "logcat", "-d").stdout.decode()
    lines = out.splitlines()
    assert lines[0] == "--------- beginning of main"
    match = THREADTIME.fullmatch(lines[1])
    assert match is not None, lines[1]
    month, day, hour, minute, sec, _ms, pid, tid, prio, tag, message = match.groups()
    assert (prio, tag, message) == ("W", "Probe   ", "disk almost full")
    assert pid == tid and int(pid) > 0
    stamp = dt.datetime(virtual_phone.state.now().year, int(month), int(day), int(hour), int(minute), int(sec),
                        tzinfo=virtual_phone.state.now().tzinfo)
    assert abs((virtual_phone.state.now() - stamp).total_seconds()) < 120  # the phone's local time, not UTC


def test_formats_brief_time_tag_raw_long(virtual_phone: SimPhone) -> None:
    shell(virtual_phone, "log -t Fmt 'one\ntwo'")
    brief = adb(virtual_phone, "logcat", "-d", "-v", "brief", "-s", "Fmt").stdout.decode().splitlines()
    assert re.fullmatch(r"I/Fmt     \( *\d+\): one", brief[1]) and re.fullmatch(r"I/Fmt     \( *\d+\): two", brief[2])
    timed = adb(virtual_phone, "logcat", "-d", "-v", "time", "-s", "Fmt").stdout.decode().splitlines()
    assert re.fullmatch(r"\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} I/Fmt     \( *\d+\): one", timed[1])
    assert adb(virtual_phone, "logcat", "-d", "-v", "tag", "-s", "Fmt").stdout.decode().splitlines()[1:] == [
        "I/Fmt     : one", "I/Fmt     : two"]
    assert adb(virtual_phone, "logcat", "-d", "-v", "raw", "-s", "Fmt").stdout == (
        b"--------- beginning of main\none\ntwo\n")
    long = adb(virtual_phone, "logcat", "-d", "-v", "long,year", "-s", "Fmt").stdout.decode()
    assert re.search(r"^\[ \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} +\d+: *\d+ I/Fmt      \]\none\ntwo\n\n$", long, re.M)


def test_filter_specs_priorities_and_silence(virtual_phone: SimPhone) -> None:
    for prio, text in (("v", "verbose"), ("d", "debug"), ("i", "info"), ("e", "error")):
        shell(virtual_phone, f"log -p {prio} -t Flt {text}")
    shell(virtual_phone, "log -t Other noise")

    def raw(*spec: str) -> list[str]:
        done = adb(virtual_phone, "logcat", "-d", "-v", "raw", *spec)
        assert done.returncode == 0, done.stderr
        return [line for line in done.stdout.decode().splitlines() if not line.startswith("---------")]

    assert raw("Flt:I", "*:S") == ["info", "error"]
    assert raw("-s", "Flt") == ["verbose", "debug", "info", "error"]
    assert raw("*") == ["debug", "info", "error", "noise"]  # '*' alone is '*:D'
    assert raw("Flt:S") == ["noise"]
    assert raw("-e", "^(de|er)") == ["debug", "error"]
    assert raw("-s", "Flt", "-m", "2") == ["verbose", "debug"]
    assert raw("-t", "2") == ["error", "noise"]


@pytest.mark.parametrize(("args", "message"), [
    (["Flt:Q"], "logcat: Invalid filter expression 'Flt:Q'.\n"),
    ([":V"], "logcat: Invalid filter expression ':V'.\n"),
    (["Flt:"], "logcat: Invalid filter expression 'Flt:'.\n"),
    (["-b", "nosuch"], "logcat: Unknown -b buffer 'nosuch'.\n"),
    (["-v", "fancy"], "logcat: Invalid -v 'fancy'.\n"),
    (["--bogus"], "logcat: Unknown option '--bogus'.\n"),
    (["-m", "0"], "logcat: -m '0' isn't an integer greater than zero.\n"),
    (["-t", "yesterday"], "logcat: -t 'yesterday' not in time format.\n"),
])
def test_bad_arguments_fail_as_logcat_does(virtual_phone: SimPhone, args: list[str], message: str) -> None:
    done = adb(virtual_phone, "logcat", "-d", *args)
    assert (done.returncode, done.stdout, done.stderr.decode()) == (1, b"", message)


def test_buffers_clear_and_sizes(virtual_phone: SimPhone) -> None:
    shell(virtual_phone, "log -b crash -p f -t Crashy boom; log -b radio -t RIL signal; log -t Main hello")
    assert b"RIL" not in adb(virtual_phone, "logcat", "-d").stdout  # radio is not a default buffer
    crash = adb(virtual_phone, "logcat", "-d", "-b", "crash", "-v", "brief").stdout.decode().splitlines()
    assert crash[0] == "--------- beginning of crash" and crash[1].startswith("F/Crashy  (")
    every = adb(virtual_phone, "logcat", "-d", "-b", "all", "-v", "tag", "-D").stdout.decode()
    assert every == ("--------- beginning of crash\nF/Crashy  : boom\n"
                     "--------- beginning of radio\nI/RIL     : signal\n"
                     "--------- beginning of main\nI/Main    : hello\n")
    shell(virtual_phone, "log -b crash -t Crashy again")
    dividers = adb(virtual_phone, "logcat", "-d", "-b", "main,crash", "-v", "raw", "-D").stdout.decode()
    assert dividers == ("--------- beginning of crash\nboom\n--------- beginning of main\nhello\n"
                        "--------- switch to crash\nagain\n")
    sizes = adb(virtual_phone, "logcat", "-g", "-b", "main").stdout.decode()
    assert re.fullmatch(r"main: ring buffer is 256 KiB \(\d+ B consumed, \d+ B readable\), max entry is 5120 B, "
                        r"max payload is 4068 B\n", sizes)
    assert adb(virtual_phone, "logcat", "-c").returncode == 0
    assert adb(virtual_phone, "logcat", "-d").stdout == b""
    assert b"RIL" in adb(virtual_phone, "logcat", "-d", "-b", "radio").stdout  # -c cleared the default buffers only


def test_log_reads_stdin_and_cuts_long_arguments(virtual_phone: SimPhone) -> None:
    assert shell(virtual_phone, "log -t Piped", stdin=b"first\nsecond\n").returncode == 0
    piped = adb(virtual_phone, "logcat", "-d", "-v", "raw", "-s", "Piped").stdout.decode().splitlines()
    assert piped[1:] == ["first", "second", ""]  # toybox logs its empty argument buffer after the lines
    long_word = "x" * 3000
    done = shell(virtual_phone, f"log -t Cut {long_word}")
    assert (done.returncode, done.stderr) == (1, b"log: log cut at 1024 bytes\n")
    cut = adb(virtual_phone, "logcat", "-d", "-v", "raw", "-s", "Cut").stdout.decode().splitlines()[1]
    assert cut == "x" * 1024
    bad = shell(virtual_phone, "log -p z -t T m")
    assert (bad.returncode, bad.stderr) == (1, b"log: bad -p 'z'\n")


def test_a_huge_message_is_cut_at_the_payload_limit(virtual_phone: SimPhone) -> None:
    huge = b"h" * 2_000_000 + b"\n"
    assert shell(virtual_phone, "log -t Big", stdin=huge).returncode == 0
    lines = adb(virtual_phone, "logcat", "-d", "-v", "raw", "-s", "Big").stdout.splitlines()
    # priority + "Big\0" + message fill LOGGER_ENTRY_MAX_PAYLOAD; the message loses its NUL.
    assert lines[1] == b"h" * (MAX_PAYLOAD - 1 - len(b"Big\0"))
    assert shell(virtual_phone, "echo alive").stdout == b"alive\n"


def test_a_flood_keeps_the_newest_lines_within_the_ring(virtual_phone: SimPhone) -> None:
    sent = [f"flood line {i:06d} " + "." * 60 for i in range(30000)]  # ~2.4 MB, ten rings' worth
    assert shell(virtual_phone, "log -t Flood", stdin=("\n".join(sent) + "\n").encode()).returncode == 0
    logs = virtual_phone.state.logs
    assert logs.used("main") <= RING_BYTES
    kept = adb(virtual_phone, "logcat", "-d", "-v", "raw", "-s", "Flood").stdout.decode().splitlines()[1:]
    assert kept[-1] == ""  # toybox's trailing empty entry is the newest
    kept = kept[:-1]
    assert 1000 < len(kept) < len(sent) // 5
    assert kept == sent[-len(kept):]  # the oldest went first, nothing in between is lost
    consumed = adb(virtual_phone, "logcat", "-g", "-b", "main").stdout.decode()
    used = re.search(r"ring buffer is 256 KiB \((\d+) KiB consumed", consumed)
    assert used is not None and 200 <= int(used.group(1)) <= 256


def test_streaming_logcat_prints_new_lines_until_the_client_closes(virtual_phone: SimPhone) -> None:
    reader = subprocess.Popen(
        [adb_binary(), "-P", str(virtual_phone.adb_port), "-s", virtual_phone.serial, "logcat", "-v", "brief",
         "-s", "Live"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    guard = threading.Timer(60, reader.kill)  # a reader that never prints fails the test instead of hanging it
    guard.start()
    try:
        loop = phone_loop(virtual_phone)
        assert shell(virtual_phone, "log -t Live streamed").returncode == 0
        assert reader.stdout is not None
        assert reader.stdout.readline() == b"--------- beginning of main\n"
        assert re.fullmatch(rb"I/Live    \( *\d+\): streamed\n", reader.stdout.readline())
        assert reader.poll() is None  # still streaming
    finally:
        guard.cancel()
        reader.terminate()
        reader.wait(10)
    wait_until(lambda: not virtual_phone.state.logs.waiters, "the streaming logcat to end")
    wait_until(lambda: not logcat_tasks(loop), "the streaming logcat's tasks to finish")
    assert shell(virtual_phone, "echo after").stdout == b"after\n"


def test_adbutils_logcat_to_a_file(virtual_phone: SimPhone, tmp_path: Path) -> None:
    # adbutils' own e2e test: clear, stream `logcat -v time` into a file, log, stop.
    d = device(virtual_phone)
    shell(virtual_phone, "log -t TAG before-the-clear")
    path = tmp_path / "logcat.txt"
    stop = d.logcat(path, clear=True, command="logcat -v time", re_filter="I/TAG")
    phone_loop(virtual_phone)
    d.shell(["log", "-p", "i", "-t", "TAG", "hello"])
    # adbutils' reader checks for stop between lines: let it take the line first (its own test sleeps 0.1 s).
    wait_until(lambda: "hello" in path.read_text(encoding="utf-8"), "adbutils to write the line")
    stop.stop(timeout=30)  # returns once the next line arrives: the idle phone's chatter is one
    text = path.read_text(encoding="utf-8")
    assert re.search(r"^\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} I/TAG     \( *\d+\): hello$", text, re.M)
    assert "before-the-clear" not in text
    wait_until(lambda: not virtual_phone.state.logs.waiters, "adbutils' logcat stream to end")


def test_what_the_phone_logs_itself(virtual_phone: SimPhone) -> None:
    shell(virtual_phone, "am start -n com.android.settings/.Settings; monkey -p com.android.settings 1")
    shell(virtual_phone, "am force-stop com.android.settings")
    system = adb(virtual_phone, "logcat", "-d", "-b", "system", "-v", "tag").stdout.decode().splitlines()
    assert system[1:3] == [
        "I/ActivityTaskManager: START u0 {flg=0x10000000 cmp=com.android.settings/.Settings} with LAUNCH_MULTIPLE"
        " from uid 2000",
        "I/ActivityTaskManager: START u0 {act=android.intent.action.MAIN cat=[android.intent.category.LAUNCHER]"
        " flg=0x10200000 cmp=com.android.settings/.Settings} with LAUNCH_MULTIPLE from uid 2000",
    ]
    assert len(system) == 4
    assert re.fullmatch(r"I/ActivityManager: Force stopping com\.android\.settings appid=10123 user=0: from pid \d+",
                        system[3])
    displayed = adb(virtual_phone, "logcat", "-d", "-b", "main", "-v", "raw", "ActivityTaskManager:I", "*:S")
    assert re.fullmatch(r"(Displayed com\.android\.settings/\.Settings for user 0: \+\d+ms\n){2}",
                        displayed.stdout.decode().split("\n", 1)[1])


def test_logcat_to_a_file_and_its_clear(virtual_phone: SimPhone) -> None:
    shell(virtual_phone, "log -t ToFile kept")
    assert shell(virtual_phone, "logcat -d -v raw -s ToFile -f /sdcard/log.txt").stdout == b""
    assert (virtual_phone.root / "sdcard/log.txt").read_bytes() == b"--------- beginning of main\nkept\n"
    assert shell(virtual_phone, "logcat -c -f /sdcard/log.txt").returncode == 0
    assert not (virtual_phone.root / "sdcard/log.txt").exists()
    assert b"kept" in adb(virtual_phone, "logcat", "-d").stdout  # -c with -f clears the file, not the log


def test_screenrecord_answers_as_a_phone_without_an_encoder(virtual_phone: SimPhone) -> None:
    assert shell(virtual_phone, "which screenrecord").stdout == b"/system/bin/screenrecord\n"
    done = shell(virtual_phone, "screenrecord --time-limit 5 /sdcard/clip.mp4")
    assert (done.returncode, done.stderr) == (0, b"ERROR: unable to create video/avc codec instance\n")
    assert (virtual_phone.root / "sdcard/clip.mp4").read_bytes() == b""  # opened before recording, as AOSP does
    assert adb(virtual_phone, "logcat", "-d", "-v", "tag", "-s", "ScreenRecord").stdout.endswith(
        b"D/ScreenRecord: failed\n")
    assert shell(virtual_phone, "screenrecord").returncode == 2
    over = shell(virtual_phone, "screenrecord --time-limit 999 /sdcard/x.mp4")
    assert (over.returncode, over.stderr) == (2, b"Time limit 999s outside acceptable range [1,180]\n")
    assert shell(virtual_phone, "which nosuchtool").returncode == 1


def test_adbutils_screenrecord_script_gets_the_empty_file(virtual_phone: SimPhone, tmp_path: Path) -> None:
    # adbutils' recorder (no scrcpy on the host) pushes this script and runs it with the remote path as $1.
    script = b'#!/system/bin/sh\nscreenrecord "$1" &\nPID=$!\nread ANY\nkill -INT $PID\nwait\n'
    d = device(virtual_phone)
    d.sync.push(script, "/sdcard/adbutils-screenrecord.sh")
    out = d.shell2(["sh", "/sdcard/adbutils-screenrecord.sh", "/sdcard/adbutils-tmp-video.mp4"])
    assert "ERROR: unable to create video/avc codec instance" in out.output
    d.sync.pull("/sdcard/adbutils-tmp-video.mp4", str(tmp_path / "output.mp4"))
    assert (tmp_path / "output.mp4").read_bytes() == b""


def test_tail_and_max_count_bound_a_streaming_reader(virtual_phone: SimPhone) -> None:
    # -m ends a streaming logcat by itself once enough lines matched; -T starts it from the newest lines.
    shell(virtual_phone, "log -t Tail old1; log -t Tail old2")
    reader = subprocess.Popen(
        [adb_binary(), "-P", str(virtual_phone.adb_port), "-s", virtual_phone.serial, "logcat", "-v", "raw",
         "-T", "1", "-m", "2", "-s", "Tail"], stdout=subprocess.PIPE)
    phone_loop(virtual_phone)
    shell(virtual_phone, "log -t Tail new")
    out, _ = reader.communicate(timeout=30)
    assert out == b"--------- beginning of main\nold2\nnew\n"
    assert reader.returncode == 0
