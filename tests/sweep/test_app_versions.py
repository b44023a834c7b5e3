"""Which versions produced a result: `dumpsys package <pkg>` parsed on real captures and hostile outputs, a phone
asked within bounds, and a sweep that records the agent app's and the tasks' apps' versions before its first unit."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from farm import manifest as mf
from farm.manifest import AppVersion
from farm.sim.profile import default_profile
from farm.sweep import app_versions
from farm.sweep.app_versions import parse_version, read_versions
from farm.sweep.sweep import sweep
from tests.helpers.shared_data import shared_data
from tests.helpers.sweep import scripted_tasks, sweep_request

SAMSUNG = ("state", "packages", "samsung-dumpsys-package-excerpt.txt")
VIVO = ("state", "packages", "vivo-iqoo12-android14-dumpsys-package-one.txt")


def _capture(parts: tuple[str, ...]) -> str:
    return shared_data(*parts).read_bytes().decode("utf-8")


def _block(package: str, *lines: str) -> str:
    return "\n".join([f"  Package [{package}] (63b4f15):", "    appId=10428", *lines,
                      "    User 0: ceDataInode=1 installed=true", ""])


# -- the parser on real captures -------------------------------------------------------------------------------------
def test_the_samsung_capture_gives_each_package_its_own_block() -> None:
    text = _capture(SAMSUNG)
    assert parse_version(text, "com.samsung.android.provider.filterprovider") == AppVersion(
        package="com.samsung.android.provider.filterprovider", version_name="5.0.07", version_code=500700000)
    assert parse_version(text, "com.sec.android.app.DataCreate") == AppVersion(
        package="com.sec.android.app.DataCreate", version_name="1.0", version_code=1)


def test_a_package_only_the_resolver_tables_name_is_not_installed() -> None:
    # Gmail is named by the Receiver Resolver Table of the Samsung capture, and has no Package block in it.
    text = _capture(SAMSUNG)
    assert "com.google.android.gm/" in text
    assert parse_version(text, "com.google.android.gm") is None


def test_the_vivo_single_package_dump_starting_with_a_bom() -> None:
    text = _capture(VIVO)
    assert text.startswith("\ufeff")
    assert parse_version(text, "com.launchrecorder.app") == AppVersion(
        package="com.launchrecorder.app", version_name="1.0.0", version_code=1)


def test_the_captures_with_windows_line_ends_read_the_same() -> None:
    text = _capture(VIVO).replace("\n", "\r\n")
    assert parse_version(text, "com.launchrecorder.app") == AppVersion(
        package="com.launchrecorder.app", version_name="1.0.0", version_code=1)


# -- the parser on hostile outputs -----------------------------------------------------------------------------------
def test_a_version_written_in_the_resolver_tables_is_not_the_packages() -> None:
    text = "\n".join([
        "Activity Resolver Table:", "  Non-Data Actions:", "      android.intent.action.MAIN:",
        "        versionName=9.9.9 com.tencent.mm/.ui.LauncherUI", "    versionCode=999 minSdk=1",
        "Key Set Manager:", "  [com.tencent.mm]", "", "Packages:",
        _block("com.tencent.mm", "    versionCode=2540 minSdk=23 targetSdk=33", "    versionName=8.0.51"),
    ])
    assert parse_version(text, "com.tencent.mm") == AppVersion(
        package="com.tencent.mm", version_name="8.0.51", version_code=2540)


def test_a_block_without_a_version_name_keeps_its_code_and_the_next_block_is_not_read() -> None:
    text = "Packages:\n" + _block("a.b", "    versionCode=7 minSdk=26 targetSdk=34") + _block(
        "c.d", "    versionCode=8 minSdk=26", "    versionName=2.0")
    assert parse_version(text, "a.b") == AppVersion(package="a.b", version_name=None, version_code=7)
    assert parse_version(text, "c.d") == AppVersion(package="c.d", version_name="2.0", version_code=8)


def test_the_hidden_system_package_is_not_the_installed_one() -> None:
    text = ("Packages:\n" + _block("com.android.chrome", "    versionCode=6000 minSdk=29", "    versionName=120.0")
            + "\nHidden system packages:\n" + _block("com.android.chrome", "    versionCode=10 minSdk=29",
                                                    "    versionName=80.0"))
    assert parse_version(text, "com.android.chrome") == AppVersion(
        package="com.android.chrome", version_name="120.0", version_code=6000)


def test_a_package_whose_name_another_extends_is_not_confused_with_it() -> None:
    text = "Packages:\n" + _block("a.b.test", "    versionCode=3 minSdk=1", "    versionName=3.0")
    assert parse_version(text, "a.b") is None
    assert parse_version(text, "a.b.test") is not None


def test_not_installed_and_empty_outputs_give_nothing() -> None:
    assert parse_version("Unable to find package: com.tencent.mm\n", "com.tencent.mm") is None
    assert parse_version("", "com.tencent.mm") is None
    assert parse_version("\ufeff", "com.tencent.mm") is None


def test_a_huge_output_is_read_in_linear_time() -> None:
    resolver = "        1a2b3c com.tencent.mm/.ui.SomeActivity filter 1a2b3c\n" * 200_000  # ~11 MB
    text = "Activity Resolver Table:\n" + resolver + "\nPackages:\n" + _block(
        "com.tencent.mm", "    versionCode=2540 minSdk=23", "    versionName=8.0.51") + ("    x=y\n" * 100_000)
    started = time.monotonic()
    got = parse_version(text, "com.tencent.mm")
    assert time.monotonic() - started < 5
    assert got == AppVersion(package="com.tencent.mm", version_name="8.0.51", version_code=2540)


# -- reading a phone -------------------------------------------------------------------------------------------------
class _Sock:
    def __init__(self, chunks: list[bytes], endless: bytes | None) -> None:
        self.chunks, self.endless, self.read = chunks, endless, 0

    def settimeout(self, _s: float) -> None:
        pass

    def recv(self, n: int) -> bytes:
        data = self.chunks.pop(0) if self.chunks else (self.endless or b"")
        self.read += len(data[:n])
        return data[:n]


class _Conn:
    def __init__(self, sock: _Sock) -> None:
        self.conn, self.closed = sock, False

    def close(self) -> None:
        self.closed = True


class _Phone:
    """A phone whose `dumpsys package <pkg>` answers from `dumps` (package → output, or an exception to raise)."""

    def __init__(self, dumps: dict[str, str | Exception], endless: bytes | None = None) -> None:
        self.dumps, self.endless, self.asked = dumps, endless, list[str]()
        self.conns: list[_Conn] = []

    def shell(self, command: str, stream: bool = False, timeout: float | None = None) -> _Conn:
        assert stream
        package = command.rsplit(" ", 1)[1]
        self.asked.append(command)
        answer = self.dumps.get(package, f"Unable to find package: {package}\n")
        if isinstance(answer, Exception):
            raise answer
        self.conns.append(_Conn(_Sock([answer.encode()] if answer else [], self.endless)))
        return self.conns[-1]


def _dump(package: str, name: str, code: int) -> str:
    return "Packages:\n" + _block(package, f"    versionCode={code} minSdk=26", f"    versionName={name}")


def test_read_versions_leaves_out_what_is_not_installed_or_does_not_answer() -> None:
    from adbutils import AdbError

    phone = _Phone({"com.tencent.mm": _dump("com.tencent.mm", "8.0.51", 2540), "a.b": AdbError("device offline"),
                    "c.d": OSError("connection reset")})
    got = read_versions(phone, ["com.tencent.mm", "a.b", "c.d", "not.installed"])
    assert got == [AppVersion(package="com.tencent.mm", version_name="8.0.51", version_code=2540)]
    assert all(c.closed for c in phone.conns)


def test_read_versions_asks_only_about_package_names_and_at_most_the_limit() -> None:
    phone = _Phone({})
    read_versions(phone, ["a.b", "a.b", "{app:notes}", "x; reboot", "", *(f"p.n{i}" for i in range(100))],
                  limit=5)
    assert phone.asked == ["dumpsys package a.b", *(f"dumpsys package p.n{i}" for i in range(4))]


def test_an_endless_dump_is_cut_at_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(app_versions, "MAX_OUTPUT_BYTES", 1_000_000)
    phone = _Phone({"a.b": "Activity Resolver Table:\n"}, endless=b"        1a2b a.b/.Main filter\n" * 2000)
    assert read_versions(phone, ["a.b"]) == []
    assert phone.conns[0].conn.read == 1_000_000 and phone.conns[0].closed


def test_the_phone_budget_stops_asking() -> None:
    phone = _Phone({"a.b": _dump("a.b", "1.0", 1)})
    assert read_versions(phone, ["a.b", "c.d"], budget_s=0) == []
    assert phone.asked == []


# -- a sweep on the virtual phone ------------------------------------------------------------------------------------
def test_a_sweep_records_the_agent_app_and_the_task_apps_versions_before_the_first_unit(
        virtual_farm, tmp_path: Path) -> None:
    from farm.android.options import AgentOptions

    shop = default_profile().model_copy(deep=True)
    for pkg in shop.packages:
        if pkg.name == "dev.agentfarm.shop":
            pkg.version_name, pkg.version_code = "3.2.1", 321
    phone = virtual_farm(1, profile=shop)[0]
    tasks = scripted_tasks(tmp_path / "tasks", ("read/system/calculator-multiply", "write/clock-alarm-7am",
                                                 "read/shopping/shop-search-headphones"))
    result = sweep(sweep_request(tmp_path, tasks, executor="instrument", host=None, run_id="v1",
                                 agent=AgentOptions(split="all", allow_irreversible=True)))
    (entry,) = mf.load(result.run_dir).phones
    assert entry.serial == phone.serial

    def installed(package: str) -> AppVersion:
        pkg = shop.package(package)
        assert pkg is not None
        return AppVersion(package=package, version_name=pkg.version_name, version_code=pkg.version_code)

    # The agent app first, then the apps the tasks touch: `{app:calculator}` and `{app:clock}` as resolved on the
    # phone, and the Shop both named in `apps` and required installed.
    assert entry.apps == [installed("dev.agentfarm.simagent"), installed("com.android.calculator2"),
                          installed("com.android.deskclock"), installed("dev.agentfarm.shop")]
    assert entry.apps[-1].version_name == "3.2.1"
    on_disk = (result.run_dir / "manifest.json").read_text(encoding="utf-8")
    assert '"version_name": "3.2.1"' in on_disk  # the manifest's own spelling, as every field of a phone


def test_a_host_sweep_has_no_agent_app_on_the_phone(virtual_farm, tmp_path: Path) -> None:
    virtual_farm(1)
    tasks = scripted_tasks(tmp_path / "tasks", ("read/system/calculator-multiply",))
    result = sweep(sweep_request(tmp_path, tasks, run_id="h1"))
    (entry,) = mf.load(result.run_dir).phones
    assert [a.package for a in entry.apps] == ["com.android.calculator2"]
