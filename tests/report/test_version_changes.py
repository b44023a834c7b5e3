"""Which app versions produced a result: `farm history` says, night over night and per phone, which app versions
changed beside the rate that moved; a comparison of two runs lists the versions that differ per phone beside its
difference. One computation (`app_version_changes`) feeds both."""

from __future__ import annotations

from pathlib import Path

from pydantic import JsonValue

from farm import manifest
from farm.manifest import AppVersion, PhoneEntry
from farm.report.build import build
from farm.report.history import render_history_html, render_history_markdown
from farm.report.history_data import build_history, load_history
from farm.report.markdown import render_markdown
from farm.report.run_setup import AppVersionChange, app_version_changes, comparable, run_setup
from farm.report.since import previous_comparable
from farm.report.writers import render_html
from tests.helpers.compare_runs import mixed_run
from tests.helpers.history_nights import mem_night
from tests.helpers.nights import night_records, write_night

DETAIL: dict[str, JsonValue] = {"split": "all", "executor": "instrument"}
"""The android lane both runs of a comparison record: alike, so only app versions differ."""
AGENT = AppVersion(package="dev.agentfarm.simagent", version_name="0.9.0", version_code=90)


def _wechat(name: str, code: int) -> AppVersion:
    return AppVersion(package="com.tencent.mm", version_name=name, version_code=code)


def _set_apps(run_dir: Path, apps: dict[str, list[AppVersion]]) -> Path:
    """Give the run's phones (serial → versions) the app versions a sweep would have read."""

    def change(m: manifest.Manifest) -> None:
        for phone in m.phones:
            phone.apps = apps.get(phone.serial, [])

    manifest.update(run_dir, change)
    return run_dir


# -- the one computation ---------------------------------------------------------------------------------------------
def test_changes_pair_phones_by_serial_and_say_nothing_of_what_one_side_did_not_record() -> None:
    before = [PhoneEntry(serial="S1", apps=[AGENT, _wechat("8.0.50", 2520)]),
              PhoneEntry(serial="S2", apps=[AGENT, _wechat("8.0.50", 2520)]),
              PhoneEntry(serial="S3", apps=[])]  # a run recorded before versions were
    after = [PhoneEntry(serial="S2", apps=[AGENT, _wechat("8.0.51", 2540)]),
             PhoneEntry(serial="S1", apps=[AGENT]),  # WeChat not installed, or no selected task touches it now
             PhoneEntry(serial="S3", apps=[_wechat("8.0.51", 2540)]),
             PhoneEntry(serial="S4", apps=[_wechat("8.0.51", 2540)])]  # a phone new to the farm
    changes = app_version_changes(before, after, {"S2": "Pixel 8 · S2"})
    assert [(c.phone, c.text()) for c in changes] == [("Pixel 8 · S2", "com.tencent.mm 8.0.50 → 8.0.51")]


def test_the_codes_are_shown_when_the_names_do_not_tell_the_versions_apart() -> None:
    def text(before: AppVersion, after: AppVersion) -> str:
        return AppVersionChange(phone="p", serial="s", package="a.b", before=before, after=after).text()

    assert text(AppVersion(package="a.b", version_name="1.0", version_code=1),
                AppVersion(package="a.b", version_name="1.0", version_code=2)) == "a.b 1.0 (code 1) → 1.0 (code 2)"
    assert text(AppVersion(package="a.b", version_code=1), AppVersion(package="a.b", version_code=2)) == \
        "a.b code 1 → code 2"
    assert text(AppVersion(package="a.b"), AppVersion(package="a.b", version_name="2.0")) == "a.b unknown → 2.0"


# -- farm history ----------------------------------------------------------------------------------------------------
def _nights(runs: Path) -> None:
    """Two nights; on night 2 WeChat went 8.0.50 → 8.0.51 on P1 only, and t-chat regressed there."""
    for day, wechat in ((1, _wechat("8.0.50", 2520)), (2, _wechat("8.0.51", 2540))):
        verdicts = {("t-chat", "P1"): day == 1, ("t-chat", "P2"): True, ("t-ok", "G1"): True}
        run_dir = write_night(runs, f"n{day}", night_records(f"n{day}", verdicts), day=day)
        _set_apps(run_dir, {"P1": [AGENT, wechat], "P2": [AGENT, _wechat("8.0.50", 2520)], "G1": [AGENT]})


def test_history_shows_the_version_change_next_to_the_rate_change(tmp_path: Path) -> None:
    _nights(tmp_path)
    h = load_history(tmp_path, label="nightly")
    assert [(c.before_run, c.after_run, c.phone, c.text()) for c in h.app_changes] == [
        ("n1", "n2", "Pixel 8 · P1", "com.tencent.mm 8.0.50 → 8.0.51")]
    md = render_history_markdown(h)
    rate_table = md.split("## Pass rate per night", 1)[1].split("\n#", 1)[0]
    rows = {line.split(" | ")[0]: line for line in rate_table.splitlines() if line.startswith("| n")}
    # The night's rate row says what changed under it: the rate fell from 100 % to 66.7 %.
    assert "| 66.7% |" in rows["| n2"] and rows["| n2"].endswith(
        "| com.tencent.mm 8.0.50 → 8.0.51 (Pixel 8 · P1) |")
    assert rows["| n1"].endswith("| 0 |  |")
    assert ("App versions changed on the newest night: Pixel 8 · P1: com.tencent.mm 8.0.50 → 8.0.51." in md)
    assert "| t-chat | android | Pixel 8 · P1 | 1/1 passed | 0/1 passed |" in md  # the regression beside it
    assert "## App version changes (1)" in md
    assert "| n1 → n2 | Pixel 8 · P1 | com.tencent.mm | 8.0.50 → 8.0.51 |" in md
    html = render_history_html(h)
    assert "<td>com.tencent.mm 8.0.50 → 8.0.51 (Pixel 8 · P1)</td>" in html
    assert "<td>n1 → n2</td><td>Pixel 8 · P1</td><td>com.tencent.mm</td><td>8.0.50 → 8.0.51</td>" in html


def test_a_version_name_from_the_phone_cannot_break_the_history() -> None:
    nights = [mem_night(f"n{d}", {("t", "S1"): True}, day=d) for d in (1, 2)]
    nights[0].manifest.phones[0].apps = [_wechat("1.0", 1)]
    nights[1].manifest.phones[0].apps = [_wechat("[x](javascript:alert(1)) | <b>", 2)]
    h = build_history(nights, label="nightly")
    md = render_history_markdown(h)
    assert "[x](javascript" not in md and "<b>" not in md
    assert ("App versions changed on the newest night: Pixel 8 · S1: com.tencent.mm 1.0 → "
            "\\[x\\](javascript:alert(1)) \\| &lt;b&gt;." in md)
    html = render_history_html(h)
    assert "<b>" not in html and "com.tencent.mm 1.0 → [x](javascript:alert(1)) | &lt;b&gt;" in html


def test_the_same_update_on_several_phones_is_named_once_in_the_nights_row() -> None:
    nights = [mem_night(f"n{d}", {("t", "S1"): True}, day=d) for d in (1, 2)]
    for night, version in zip(nights, (_wechat("8.0.50", 2520), _wechat("8.0.51", 2540)), strict=True):
        for phone in night.manifest.phones:
            phone.apps = [version]
    md = render_history_markdown(build_history(nights, label="nightly"))
    assert "| com.tencent.mm 8.0.50 → 8.0.51 (6 phones) |" in md
    assert "## App version changes (6)" in md


def test_a_phone_that_missed_a_night_is_compared_with_its_own_previous_night() -> None:
    nights = [mem_night(f"n{d}", {("t", "S1"): True}, day=d) for d in (1, 2, 3)]
    nights[0].manifest.phones[0].apps = [_wechat("8.0.49", 2500)]
    nights[1].manifest.phones[0].status = "left_out"  # left out: no versions read
    nights[2].manifest.phones[0].apps = [_wechat("8.0.51", 2540)]
    h = build_history(nights, label="nightly")
    assert [(c.before_run, c.after_run, c.text()) for c in h.app_changes] == [
        ("n1", "n3", "com.tencent.mm 8.0.49 → 8.0.51")]


def test_nights_recorded_before_versions_were_say_nothing(tmp_path: Path) -> None:
    for day in (1, 2):
        write_night(tmp_path, f"n{day}", night_records(f"n{day}", {("t", "P1"): True}), day=day)
    md = render_history_markdown(load_history(tmp_path, label="nightly"))
    assert "## App version changes (0)" in md and "App versions changed on the newest night" not in md


def test_an_app_update_does_not_make_the_nights_unlike(tmp_path: Path) -> None:
    _nights(tmp_path)
    now = tmp_path / "n2"
    found = previous_comparable(now)
    assert found is not None and found[1].run_id == "n1"
    a, b = manifest.load(tmp_path / "n1"), manifest.load(now)
    assert comparable(run_setup(tmp_path / "n1", a, include_holdout=True), run_setup(now, b, include_holdout=True))


# -- a comparison of two runs ----------------------------------------------------------------------------------------
def test_a_comparison_lists_the_versions_that_differ_per_phone(tmp_path: Path) -> None:
    a = _set_apps(mixed_run(tmp_path, "ra", DETAIL), {"SER1": [AGENT, _wechat("8.0.50", 2520)],
                                                      "SER2": [AGENT, _wechat("8.0.50", 2520)]})
    b = _set_apps(mixed_run(tmp_path, "rb", DETAIL, flip=True), {
        "SER1": [AppVersion(package="dev.agentfarm.simagent", version_name="1.0.0", version_code=100),
                 _wechat("8.0.51", 2540)],
        "SER2": [AGENT, _wechat("8.0.50", 2520)]})
    d = build([a, b]).data
    assert d.comparison is not None and d.comparison.differences == []  # an app update is no setting
    md = render_markdown(d)
    section = md.split("## Paired comparison", 1)[1].split("\n## ", 1)[0]
    assert "App versions that differ between A and B, per phone" in section
    assert ("- Pixel 8 · SER1: com.tencent.mm 8.0.50 → 8.0.51, dev.agentfarm.simagent 0.9.0 → 1.0.0"
            in section)
    assert "SER2:" not in section
    # Beside the difference of the rates, before the table of units.
    assert section.index("Difference B − A") < section.index("App versions that differ") < section.index("| units")
    html = render_html(d)
    assert ("<li>Pixel 8 · SER1: com.tencent.mm 8.0.50 → 8.0.51, dev.agentfarm.simagent 0.9.0 → 1.0.0</li>"
            in html)


def test_a_comparison_of_runs_without_versions_says_nothing_of_them(tmp_path: Path) -> None:
    d = build([mixed_run(tmp_path, "ra", DETAIL), mixed_run(tmp_path, "rb", DETAIL, flip=True)]).data
    assert "App versions that differ" not in render_markdown(d)
    assert "App versions that differ" not in render_html(d)


def test_a_version_name_from_the_phone_cannot_break_the_report(tmp_path: Path) -> None:
    a = _set_apps(mixed_run(tmp_path, "ra", DETAIL), {"SER1": [_wechat("1.0", 1)]})
    b = _set_apps(mixed_run(tmp_path, "rb", DETAIL, flip=True), {"SER1": [_wechat("<b>2</b> | [x](y)", 2)]})
    d = build([a, b]).data
    assert "com.tencent.mm 1.0 → &lt;b&gt;2&lt;/b&gt; \\| \\[x\\](y)" in render_markdown(d)
    assert "com.tencent.mm 1.0 → &lt;b&gt;2&lt;/b&gt; | [x](y)" in render_html(d)
