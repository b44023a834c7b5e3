"""`farm pull` of a run started elsewhere, from two phones into one run."""

from __future__ import annotations

import json
from pathlib import Path

from farm.android.collect import pull_run
from farm.config import FarmConfig
from farm.report.build import build_reports
from tests.helpers.records import score_line, scores_text

EVAL = "/sdcard/Android/data/dev.agentfarm.simagent/files/eval"


def test_two_phones_pulled_into_one_run_are_both_in_the_manifest_and_report(virtual_farm, tmp_path: Path) -> None:
    phones = virtual_farm(2)
    for n, phone in enumerate(phones):
        tree = phone.state.host_path(f"{EVAL}/nightly")
        (tree / "t1" / "run").mkdir(parents=True)
        (tree / "scores.jsonl").write_text(scores_text(score_line("t1", passed=n == 0, outcome="succeeded")))
        (tree / "t1" / "run" / "final.json").write_text('{"answer": "x"}')
    for phone in phones:
        summary = pull_run(
            FarmConfig(), serial=phone.serial, run="nightly", split="tune", runs_dir=tmp_path, profile=None
        )
        assert summary.records == 1 and not summary.refused
        assert (summary.raw / "t1" / "run" / "final.json").is_file()
    manifest = json.loads((tmp_path / "nightly" / "manifest.json").read_text())
    assert sorted(p["serial"] for p in manifest["phones"]) == sorted(p.serial for p in phones)
    assert {p["agent_version"] for p in manifest["phones"]} == {"0.9.0"}
    md = build_reports([tmp_path / "nightly"])[0].read_text(encoding="utf-8")
    assert "| Pixel 7 #1 | 1 |" in md and "| Pixel 7 #2 | 1 |" in md
    assert "| all | 2 | 1 | 0 | 50.0% |" in md
