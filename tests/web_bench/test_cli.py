"""`farm web …` through the real entry point: refusals are one line and exit 2; a scripted smoke run
writes results, a report and the run manifest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from farm.llm.stub import ModelStub, StubReply, StubUsage
from farm.manifest import load
from farm.results.store import read_records
from tests.helpers.web import web_run
from web_bench.paired.results import append_run, read_runs


def farm(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from farm.cli import main; main()", *args],
        cwd=cwd, capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, **(env or {})},
    )


def _refused(result: subprocess.CompletedProcess[str], words: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], result.stderr


def test_unknown_task_is_refused(tmp_path: Path) -> None:
    result = farm("web", "run", "--tasks", "order_lookup,teleport", "--dry-run", cwd=tmp_path)
    _refused(result, "unknown task 'teleport'")


def test_bad_seed_range_is_refused(tmp_path: Path) -> None:
    _refused(farm("web", "run", "--seeds", "5-1", "--dry-run", cwd=tmp_path), "bad seed range")


def test_existing_output_is_refused(tmp_path: Path) -> None:
    existing = tmp_path / "old.jsonl"
    existing.write_text("{}\n")
    result = farm("web", "run", "--policy", "scripted", "--backends", "playwright", "--output", str(existing),
                  cwd=tmp_path)
    _refused(result, "already exists")
    assert existing.read_text() == "{}\n"
    assert not (tmp_path / "runs").exists()


def test_missing_chromium_is_refused(tmp_path: Path) -> None:
    result = farm("web", "run", "--smoke", "--policy", "scripted", "--backends", "playwright",
                  "--chromium", str(tmp_path / "no-chromium"), cwd=tmp_path)
    _refused(result, "no Chromium executable")
    assert not (tmp_path / "runs").exists()


def test_mixed_suite_versions_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    append_run(path, web_run(seed=1))
    append_run(path, web_run(seed=2, benchmark_suite_version=3))
    _refused(farm("web", "report", str(path), cwd=tmp_path), "mixes benchmarkSuiteVersion")


def test_dry_run_default_matrix_is_sixty_runs(tmp_path: Path) -> None:
    result = farm("web", "run", "--dry-run", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "60 runs" in result.stdout


def test_scripted_smoke_run_writes_results_records_report_and_manifest(tmp_path: Path) -> None:
    result = farm("web", "run", "--smoke", "--tasks", "order_lookup,lazy_load", "--policy", "scripted",
                  "--backends", "playwright", "--run-id", "r1", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    results = tmp_path / "runs" / "r1" / "web" / "results.jsonl"
    runs = read_runs(results)
    assert len(runs) == 2 and all(r.success for r in runs)
    records = read_records(tmp_path / "runs" / "r1" / "records.jsonl")
    assert [(r.lane, r.task_id, r.outcome) for r in records] == [
        ("web", "order_lookup", "succeeded"), ("web", "lazy_load", "succeeded")
    ]
    assert (tmp_path / "runs" / "r1" / "web" / "results.report.md").read_text().startswith("# Web backend")
    manifest = load(tmp_path / "runs" / "r1")
    (lane,) = manifest.lanes
    assert lane.lane == "web" and "web/results.jsonl" in lane.outputs
    assert manifest.status == "finished"
    report = farm("web", "report", str(results), "--json", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    numbers = json.loads(report.stdout)
    assert numbers["backends"]["playwright"]["successes"] == 2


def test_probe_playwright(tmp_path: Path) -> None:
    result = farm("web", "probe", "--backends", "playwright", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "OK" in result.stdout


def test_virtual_phone_pair_is_marked_simulated(tmp_path: Path) -> None:
    result = farm("web", "run", "--smoke", "--tasks", "inventory_filter", "--policy", "scripted", "--virtual-phone",
                  "--run-id", "vp", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    runs = {r.backend: r for r in read_runs(tmp_path / "runs" / "vp" / "web" / "results.jsonl")}
    assert set(runs) == {"playwright", "android-chrome"} and all(r.success for r in runs.values())
    assert runs["android-chrome"].simulated_device and not runs["playwright"].simulated_device
    records = {r.device: r for r in read_records(tmp_path / "runs" / "vp" / "records.jsonl")}
    assert records["android-chrome"].execution == "simulated"


def test_model_run_uses_the_chosen_model(tmp_path: Path) -> None:
    # The stand-in model only answers; the run fails validation, but the wiring is what is checked.
    with ModelStub(default=StubReply(text="I cannot tell.", usage=StubUsage(input=40, cached=8, output=3))) as stub:
        result = farm("web", "run", "--smoke", "--tasks", "order_lookup", "--backends", "playwright",
                      "--provider", "openai", "--model", "stub-model", "--run-id", "m1", cwd=tmp_path,
                      env={"FARM_LLM_BASE_URL": stub.base_url_openai, "OPENAI_API_KEY": "test-key"})
        sent = stub.requests[0].body
    assert result.returncode == 0, result.stderr
    (run,) = read_runs(tmp_path / "runs" / "m1" / "web" / "results.jsonl")
    assert (run.policy, run.provider, run.model, run.status, run.success) == (
        "model", "openai", "stub-model", "completed", False
    )
    assert (run.tokens.input_new, run.tokens.cache_read, run.tokens.output) == (40, 8, 3)
    assert sent["model"] == "stub-model"
    assert "browser_" in sent["messages"][0]["content"]
