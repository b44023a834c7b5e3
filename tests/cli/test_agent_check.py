"""`farm agent check` names each defect of an app's eval tree on its own line (`file:line:field: problem — fix`),
exits 2 on a violation and 0 with only warnings; `farm schema` lists and prints the contract's schemas."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from farm.android.agent_schemas import SCHEMAS, schema_file, schema_text
from farm.scoring.transcript import HarnessLook
from farm.sim.launcher import SimPhone
from farm.sim.profile import default_profile
from tests.helpers.cli import error_line, farm
from tests.helpers.sim_apps import eval_dir, instrument_argv, make_phone, push_bundle, run_to_text, task

AGENT_EVAL = "/sdcard/Android/data/dev.agentfarm.simagent/files/eval"


@pytest.fixture(scope="module")
def clean_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An eval tree the virtual phone's agent app wrote: three tasks, one of them skipped."""
    base = tmp_path_factory.mktemp("clean")
    profile = default_profile()
    profile.agent.time_scale = 1_000_000
    profile.agent.pass_rate = 1.0
    phone = make_phone(base, profile)
    tasks = [task("calc", apps=["com.android.calculator2"]), task("ask", answers={"几点": "7点"},
                                                                     checks=[{"type": "asked_user"}]),
             task("send", "irreversible")]
    run_to_text(phone, instrument_argv("R1", push_bundle(phone, "R1", tasks)))
    return eval_dir(phone, "R1")


@pytest.fixture
def tree(clean_tree: Path, tmp_path: Path) -> Path:
    """A fresh copy of the clean tree to damage."""
    return Path(shutil.copytree(clean_tree, tmp_path / "tree", symlinks=True))


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]


def _write_lines(path: Path, rows: list[dict[str, object]]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def test_the_reference_apps_tree_passes(tree: Path) -> None:
    proc = farm(tree.parent, "agent", "check", str(tree))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == [f"ok: {tree} follows agent-app contract 1 (3 tasks, 0 warning(s))"]


def test_a_missing_file_is_named_with_what_it_costs(tree: Path) -> None:
    (tree / "scores.jsonl").unlink()
    (tree / "calc" / "run" / "final.json").unlink()
    proc = farm(tree.parent, "agent", "check", str(tree))
    assert "violation(s) of agent-app contract 1" in error_line(proc)
    first = proc.stdout.splitlines()[0]
    assert first.startswith("scores.jsonl:0:-: missing — write one JSON line per task"), proc.stdout
    # Without scores lines nothing names the task directories: each is said to be unnamed.
    assert "warning: calc:0:-: a directory no scores line names" in proc.stdout

    _write_lines(tree / "scores.jsonl", [{"id": "calc", "outcome": "succeeded", "partition": "tune",
                                          "expect": "succeeded"}])
    proc = farm(tree.parent, "agent", "check", str(tree))
    assert proc.returncode == 2
    assert "calc/run/final.json:0:-: missing — write final.json when the attempt ends" in proc.stdout


def test_a_wrong_type_names_the_line_and_the_field(tree: Path) -> None:
    rows = _lines(tree / "scores.jsonl")
    rows[1]["tokens"] = {"input": "many", "output": -3}
    _write_lines(tree / "scores.jsonl", rows)
    proc = farm(tree.parent, "agent", "check", str(tree))
    assert proc.returncode == 2
    problems = [ln for ln in proc.stdout.splitlines() if ln.startswith("scores.jsonl:2:tokens.")]
    assert problems == [
        'scores.jsonl:2:tokens.input: Input should be a valid integer, unable to parse string as an integer '
        '(got "many") — write counts from 0 to 10^12, or null when unknown',
        "scores.jsonl:2:tokens.output: Input should be greater than or equal to 0 (got -3) — write counts from 0 to "
        "10^12, or null when unknown",
    ]


def test_a_line_that_is_not_json_is_named(tree: Path) -> None:
    with (tree / "scores.jsonl").open("a", encoding="utf-8") as fh:
        fh.write("{not json\n")
    proc = farm(tree.parent, "agent", "check", str(tree))
    assert proc.returncode == 2
    (line,) = [ln for ln in proc.stdout.splitlines() if ln.startswith("scores.jsonl:4:")]
    assert line.startswith("scores.jsonl:4:-: not JSON (") and line.endswith("— write one JSON object (UTF-8, no NaN)")


def test_a_step_without_a_screenshot_is_a_warning_naming_what_the_viewer_loses(tree: Path) -> None:
    steps = tree / "calc" / "run" / "steps.jsonl"
    rows = _lines(steps)
    observation = rows[1]["observation"]
    assert isinstance(observation, dict)
    del observation["screenshot"]
    _write_lines(steps, rows)
    proc = farm(tree.parent, "agent", "check", str(tree))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == [
        f"warning: calc/run/steps.jsonl:2:observation.screenshot: no screenshot (1 of {len(rows)} steps): the viewer "
        "shows 'no screenshot kept' — save a PNG or JPEG of the screen next to steps.jsonl and name it",
        f"ok: {tree} follows agent-app contract 1 (3 tasks, 1 warning(s))",
    ]


def test_a_screenshot_named_but_absent_is_a_violation(tree: Path) -> None:
    steps = tree / "calc" / "run" / "steps.jsonl"
    name = _lines(steps)[0]["observation"]["screenshot"]  # type: ignore[index]
    for shot in (tree / "calc" / "run").glob("shot-*.png"):
        shot.unlink()
    proc = farm(tree.parent, "agent", "check", str(tree))
    assert proc.returncode == 2
    assert f"calc/run/steps.jsonl:1:observation.screenshot: {name} is not a file next to steps.jsonl" in proc.stdout


def test_a_look_the_app_wrote_in_the_harnesss_name_is_a_violation(tree: Path) -> None:
    (tree / "calc" / "run" / "harness-look.json").write_text('{"looks": []}', encoding="utf-8")
    proc = farm(tree.parent, "agent", "check", str(tree))
    assert proc.returncode == 2
    assert "calc/run/harness-look.json:0:-: written by the app: farm deletes it" in proc.stdout


def test_a_huge_scores_file_is_refused_in_one_line_naming_the_bound(tree: Path) -> None:
    line = json.dumps({"id": "x", "outcome": "failed", "reason": "y" * 1000}) + "\n"
    (tree / "scores.jsonl").write_text(line * (10 * 1024 * 1024 // len(line) + 1), encoding="utf-8")
    proc = farm(tree.parent, "agent", "check", str(tree))
    assert proc.returncode == 2
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("scores.jsonl")]
    assert lines == ["scores.jsonl:0:-: 10.0 MB, over the 8 MB farm agent check reads — keep it smaller (long texts "
                     "belong in <id>/run/, one file per attempt)"]


def test_many_problems_print_the_first_fifty_and_a_count(tree: Path) -> None:
    (tree / "scores.jsonl").write_text("{bad\n" * 120, encoding="utf-8")
    proc = farm(tree.parent, "agent", "check", str(tree))
    out = [ln for ln in proc.stdout.splitlines() if not ln.startswith("warning: ")]
    assert len(out) == 51 and out[-1] == "… and 70 more"
    assert "120 violation(s)" in error_line(proc)


def test_a_valid_look_in_a_tree_farm_pulled_is_farms_own(tree: Path) -> None:
    look = HarnessLook(at="2026-12-07T00:00:00Z").model_dump_json(by_alias=True)
    (tree / "calc" / "run" / "harness-look.json").write_text(look, encoding="utf-8")
    proc = farm(tree.parent, "agent", "check", str(tree))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_any_look_on_the_phone_is_the_apps(virtual_phone: SimPhone, clean_tree: Path, tmp_path: Path) -> None:
    remote = virtual_phone.state.host_path(f"{AGENT_EVAL}/nightly")
    shutil.copytree(clean_tree, remote)
    look = HarnessLook(at="2026-12-07T00:00:00Z").model_dump_json(by_alias=True)
    (remote / "calc" / "run" / "harness-look.json").write_text(look, encoding="utf-8")
    proc = farm(tmp_path, "agent", "check", "--device", virtual_phone.serial, "--run", "nightly",
                ANDROID_ADB_SERVER_PORT=str(virtual_phone.adb_port))
    assert proc.returncode == 2
    assert "calc/run/harness-look.json:0:-: written by the app" in proc.stdout


def test_check_reads_a_phones_own_tree_through_the_pull(virtual_phone: SimPhone, clean_tree: Path,
                                                        tmp_path: Path) -> None:
    remote = virtual_phone.state.host_path(f"{AGENT_EVAL}/nightly")
    shutil.copytree(clean_tree, remote)
    port = str(virtual_phone.adb_port)
    proc = farm(tmp_path, "agent", "check", "--device", virtual_phone.serial, "--run", "nightly",
                ANDROID_ADB_SERVER_PORT=port)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().endswith("follows agent-app contract 1 (3 tasks, 0 warning(s))")
    assert f"{virtual_phone.serial}:{AGENT_EVAL}/nightly" in proc.stdout
    # What the pull refuses is named as the violation it is.
    (remote / "calc" / "run" / "etc-link").symlink_to("/etc")
    proc = farm(tmp_path, "agent", "check", "--device", virtual_phone.serial, "--run", "nightly",
                ANDROID_ADB_SERVER_PORT=port)
    assert proc.returncode == 2
    assert "etc-link" in proc.stdout and "refused by the pull (symlink (not followed))" in proc.stdout
    assert "no such run on the phone" in error_line(farm(
        tmp_path, "agent", "check", "--device", virtual_phone.serial, "--run", "other", ANDROID_ADB_SERVER_PORT=port))


@pytest.mark.parametrize(("args", "said"), [
    ((), "give TREE or --device SERIAL --run RUN"),
    (("--device", "X"), "--device needs --run RUN"),
    (("somewhere", "--run", "r"), "--run goes with --device"),
    (("no-such-dir",), "no-such-dir: not a directory"),
])
def test_usage_mistakes_are_one_line(tmp_path: Path, args: tuple[str, ...], said: str) -> None:
    assert said in error_line(farm(tmp_path, "agent", "check", *args))


def test_farm_schema_lists_prints_and_refuses(tmp_path: Path) -> None:
    listed = farm(tmp_path, "schema")
    assert listed.returncode == 0
    rows = [ln.split("\t")[:2] for ln in listed.stdout.splitlines()]
    assert rows == [["name", "file"]] + [[n, schema_file(n)] for n in SCHEMAS]
    one = farm(tmp_path, "schema", "step")
    assert one.returncode == 0 and one.stdout == schema_text("step")
    assert error_line(farm(tmp_path, "schema", "steps")) == (
        "error: schema 'steps': no such schema — use one of bundle, score-line, metrics, step, final")
    written = farm(tmp_path, "schema", "--write", "--out", str(tmp_path / "out"))
    assert written.returncode == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(schema_file(n) for n in SCHEMAS)
