"""`farm web run --run RUN --resume`: a run the quota stopped (twice) is finished in place — the planned runs never
started, or ended by an infrastructure error, run again into the same results file, their records superseding
the earlier ones — and a finished run resumes to nothing. Everything goes through the real entry point against
the loopback model stub: one scripted sequence (stop, stop again, finish) serves the tests that only read it."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from farm.llm.stub import ModelStub, StubReply
from farm.manifest import LaneEntry, Manifest, load, utc_now
from farm.results.store import RunStore, current_records, read_records
from tests.helpers.shared_run import run_of_other_lanes
from web_bench.paired.matrix import parse_seeds, plan
from web_bench.paired.report import report_file, to_markdown
from web_bench.paired.results import read_results
from web_bench.paired.stored_plan import matrix_spec, seed_ranges

QUOTA_200 = json.dumps({"error": {
    "message": "You exceeded your current quota, please check your plan and billing details.",
    "type": "insufficient_quota", "param": None, "code": "insufficient_quota",
}}).encode()
RUN_ID = "web-q"
PLAN = ["--tasks", "order_lookup,lazy_load", "--seeds", "1", "--backends", "playwright", "--provider", "openai",
        "--model", "stub-model"]
"""Two runs, one backend: the quota stops the first, the second never starts."""
RESUME = ["web", "run", "--run", RUN_ID, "--resume"]


def farm(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("FARM_LLM_")}
    return subprocess.run(
        [sys.executable, "-c", "from farm.cli import main; main()", *args],
        cwd=cwd, capture_output=True, text=True, timeout=600, check=False, env={**clean, **(env or {})},
    )


def _tree(root: Path) -> dict[str, tuple[int, int, bytes | None]]:
    """Every path under `root`: its type bits, mtime and (regular files only) bytes."""
    found: dict[str, tuple[int, int, bytes | None]] = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        content = path.read_bytes() if stat.S_ISREG(info.st_mode) else None
        found[str(path.relative_to(root))] = (stat.S_IFMT(info.st_mode), info.st_mtime_ns, content)
    return found


@dataclass(frozen=True)
class Step:
    result: subprocess.CompletedProcess[str]
    manifest: Manifest
    results_lines: int


@dataclass(frozen=True)
class Sequence:
    cwd: Path
    run_dir: Path
    started: Step
    """The first start: the quota stops the first run."""
    stopped_again: Step
    """`--resume` with the quota still used up."""
    resumed: Step
    """`--resume` with a model that answers."""


@pytest.fixture(scope="module")
def sequence(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sequence]:
    cwd = tmp_path_factory.mktemp("web-resume")
    run_dir = cwd / "runs" / RUN_ID
    results = run_dir / "web" / "results.jsonl"

    def step(*args: str, env: dict[str, str]) -> Step:
        result = farm(*args, cwd=cwd, env=env)
        assert result.returncode == 0, result.stderr
        return Step(result, load(run_dir), len(results.read_bytes().splitlines()))

    with ModelStub(default=StubReply(raw_body=QUOTA_200)) as stub:
        env = {"FARM_LLM_BASE_URL": stub.base_url_openai, "OPENAI_API_KEY": "test-key"}
        started = step("web", "run", *PLAN, "--run", RUN_ID, env=env)
        stopped_again = step(*RESUME, env=env)
        # The quota is back: the stand-in model answers (wrongly, so the runs fail validation, as an agent's do).
        stub.default = StubReply(text="I cannot tell.")
        resumed = step(*RESUME, env=env)
    yield Sequence(cwd, run_dir, started, stopped_again, resumed)


def test_the_quota_stop_line_names_the_resume_command(sequence: Sequence) -> None:
    (line,) = [n for n in sequence.started.result.stderr.splitlines() if "stopped dispatch" in n]
    assert line.startswith("web: stopped dispatch: model provider openai at 127.0.0.1:")
    assert line.endswith("; 1 of 2 runs not started; resume with: farm web run --run web-q --resume")
    manifest = sequence.started.manifest
    assert manifest.status == "interrupted" and sequence.started.results_lines == 1
    # The manifest keeps the note as before; the command is for the person at the terminal.
    (note,) = [n for n in manifest.notes if "stopped dispatch" in n]
    assert note.endswith("; 1 of 2 runs not started")


def test_the_plan_is_stored_in_the_web_lane_entry(sequence: Sequence) -> None:
    (lane,) = sequence.started.manifest.lanes
    assert lane.detail["plan"] == {
        "tasks": ["order_lookup", "lazy_load"], "seeds": "1", "trials": 1, "backends": ["playwright"],
        "smoke": False, "policy": "model", "timeoutMs": 120000, "provider": "openai", "model": "stub-model",
        "reasoningEffort": None, "virtualPhone": False, "results": "web/results.jsonl", "ownsStatus": True,
    }


def test_a_second_stop_says_so_again_and_leaves_the_run_interrupted(sequence: Sequence) -> None:
    step = sequence.stopped_again
    assert "resuming web run web-q: 2 of 2 runs to go" in step.result.stdout
    assert step.result.stderr.count("stopped dispatch") == 1
    assert "resume with: farm web run --run web-q --resume" in step.result.stderr
    assert step.manifest.status == "interrupted"
    assert len([n for n in step.manifest.notes if "stopped dispatch" in n]) == 2
    assert [n for n in step.manifest.notes if n.startswith("web: resumed at ")][0].endswith(": 2 of 2 runs to go")
    assert step.results_lines == 2  # appended to the same file


def test_the_resumed_run_finishes_with_one_current_record_per_planned_run(sequence: Sequence) -> None:
    step = sequence.resumed
    assert "resuming web run web-q: 2 of 2 runs to go" in step.result.stdout
    assert "stopped dispatch" not in step.result.stderr
    assert step.manifest.status == "finished" and step.manifest.finished_at is not None
    assert step.results_lines == 4
    records = read_records(sequence.run_dir / "records.jsonl")
    # Two quota errors of the first run, superseded; then one line per planned run.
    assert [(r.task_id, r.outcome) for r in records] == [
        ("order_lookup", "error"), ("order_lookup", "error"), ("order_lookup", "failed"), ("lazy_load", "failed"),
    ]
    current = current_records(records)
    assert sorted((r.task_id, r.device, r.outcome) for r in current) == [
        ("lazy_load", "playwright", "failed"), ("order_lookup", "playwright", "failed"),
    ]
    assert [r.source for r in current] == ["web/results.jsonl:3", "web/results.jsonl:4"]


def test_the_lane_report_counts_each_pair_once_and_is_rewritten(
    sequence: Sequence, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(sequence.cwd)  # the report names its source as the command found it
    results = Path("runs", RUN_ID, "web", "results.jsonl")
    assert len(read_results(results).runs) == 4
    rep = report_file(results)
    stats = rep.backends["playwright"]
    assert (stats.runs, stats.successes, stats.infrastructure_errors) == (2, 0, 0)
    assert rep.tasks == {"order_lookup": {"playwright": "0/1"}, "lazy_load": {"playwright": "0/1"}}
    assert len(rep.duplicate_runs) == 1 and "lines 1, 2, 3 are one run" in rep.duplicate_runs[0]
    written = results.with_suffix(".report.md").read_text(encoding="utf-8")
    assert written == to_markdown(rep)


def test_resuming_a_finished_run_runs_nothing_and_says_so(sequence: Sequence) -> None:
    before = _tree(sequence.cwd)
    # No model anywhere: nothing may start.
    result = farm(*RESUME, cwd=sequence.cwd)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "web run web-q: all 2 planned runs done; nothing to resume"
    assert _tree(sequence.cwd) == before


def test_the_original_plan_flags_may_be_given_again(sequence: Sequence) -> None:
    result = farm("web", "run", *PLAN, *RESUME[2:], "--timeout-ms", "120000", "--policy", "model",
                  "--out", "runs/web-q/web/results.jsonl", cwd=sequence.cwd)
    assert result.returncode == 0, result.stderr
    assert "nothing to resume" in result.stdout


def _refused(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for word in words:
        assert word in lines[0], lines[0]


@pytest.mark.parametrize(("flags", "flag"), [
    (["--seeds", "2"], "--seeds"),
    (["--tasks", "order_lookup"], "--tasks"),
    (["--trials", "2"], "--trials"),
    (["--backends", "playwright,extension"], "--backends"),
    (["--smoke"], "--smoke"),
    (["--policy", "scripted"], "--policy"),
    (["--timeout-ms", "5000"], "--timeout-ms"),
    (["--model", "other-model"], "--model"),
    (["--output", "elsewhere.jsonl"], "--output"),
])
def test_resume_refuses_plan_flags_that_differ_from_the_stored_plan(
    sequence: Sequence, flags: list[str], flag: str,
) -> None:
    before = _tree(sequence.cwd)
    _refused(farm(*RESUME, *flags, cwd=sequence.cwd),
             f"--resume: {flag} differs from run web-q's stored plan",
             f"drop {flag}: farm web run --run web-q --resume")
    assert _tree(sequence.cwd) == before


def test_resume_refuses_a_run_that_does_not_exist(tmp_path: Path) -> None:
    _refused(farm(*RESUME, cwd=tmp_path), "--resume: no run web-q in runs", "pass --run with the id of a run")
    assert not (tmp_path / "runs").exists()


def test_resume_refuses_without_a_run(tmp_path: Path) -> None:
    _refused(farm("web", "run", "--resume", cwd=tmp_path), "--resume: no run named", "farm web run --run RUN --resume")


def test_resume_refuses_a_run_without_a_web_lane(tmp_path: Path) -> None:
    run_of_other_lanes(tmp_path / "runs", RUN_ID)
    before = _tree(tmp_path)
    _refused(farm(*RESUME, cwd=tmp_path), "--resume: run web-q has no web lane",
             "drop --resume to add one to it: farm web run --run web-q")
    assert _tree(tmp_path) == before


def test_resume_refuses_a_web_lane_without_a_stored_plan(tmp_path: Path) -> None:
    # A web lane written before plans were stored.
    RunStore.create(tmp_path / "runs", Manifest(run_id=RUN_ID, created_at=utc_now(), status="interrupted",
                                                lanes=[LaneEntry(lane="web", outputs=["web/results.jsonl"],
                                                                 detail={"suiteVersion": 2})]))
    _refused(farm(*RESUME, cwd=tmp_path), "--resume: run web-q's web lane holds no stored plan",
             "start the benchmark as a new run: farm web run --run NEW-ID")


@pytest.mark.parametrize(("tasks", "seeds", "trials", "backends"), [
    (["order_lookup", "lazy_load"], [1, 2, 3, 9], 2, ["playwright", "extension"]),
    (["contact_form"], [7, 3], 1, ["extension", "playwright", "android-chrome"]),
    (["inventory_filter", "order_lookup"], [0], 3, ["android-chrome", "playwright"]),
])
def test_a_whole_plan_is_recovered_from_its_runs(
    tasks: list[str], seeds: list[int], trials: int, backends: list[str],
) -> None:
    runs = plan(tasks, seeds, trials, backends)  # type: ignore[arg-type]
    assert matrix_spec(runs) == (tasks, seeds, trials, backends)
    assert parse_seeds(seed_ranges(seeds)) == seeds
    # A hand-picked part of a plan is not one: nothing would say which runs it left out.
    assert matrix_spec(runs[1:]) is None and matrix_spec(runs[:-1]) is None and matrix_spec([]) is None
