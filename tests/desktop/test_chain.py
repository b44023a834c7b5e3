"""The version chain: intact chains verify; an edited, missing or rewritten version is detected."""

from __future__ import annotations

import json
from pathlib import Path

from farm.desktop.batch import record_result
from tests.helpers.desktop import farm, planned_batch, write_result


def _chain(tmp_path: Path) -> list[Path]:
    """batch-000 (plan) → 001 → 002 → 003, recorded through the library."""
    directory, b0 = planned_batch(tmp_path)
    paths = [b0]
    for i, (slot, status) in enumerate(
        [("calculator-add/1", "success"), ("textedit-type/1", "failed"), ("browser-form/2", "blocked")], start=1
    ):
        result = write_result(directory / f"result-{i}.json", status, duration_ms=1000 * i)
        out = directory / f"batch-{i:03d}.json"
        record_result(paths[-1], slot, result, out)
        paths.append(out)
    return paths


def test_verify_accepts_an_intact_chain(tmp_path: Path) -> None:
    paths = _chain(tmp_path)
    outcome = farm("desktop", "verify", paths[-1])
    assert outcome.code == 0, outcome.stderr
    assert "chain ok: 4 version(s)" in outcome.stdout
    assert outcome.stdout.index("(plan)") < outcome.stdout.index("browser-form/2")


def test_verify_detects_an_edited_middle_file(tmp_path: Path) -> None:
    paths = _chain(tmp_path)
    data = json.loads(paths[2].read_text(encoding="utf-8"))
    data["slots"][0]["result"]["humanInterventions"] = 0
    data["slots"][0]["result"]["actions"] = 3  # a plausible, still valid edit
    paths[2].write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    outcome = farm("desktop", "verify", paths[-1])
    assert outcome.code == 2
    assert f"{paths[2]}: content changed after {paths[3]} was made from it" in outcome.stderr


def test_verify_detects_a_whitespace_only_edit(tmp_path: Path) -> None:
    paths = _chain(tmp_path)
    paths[1].write_text(paths[1].read_text(encoding="utf-8") + "\n", encoding="utf-8")
    outcome = farm("desktop", "verify", paths[-1])
    assert outcome.code == 2 and "content changed" in outcome.stderr


def test_verify_detects_a_missing_middle_file(tmp_path: Path) -> None:
    paths = _chain(tmp_path)
    paths[1].unlink()
    outcome = farm("desktop", "verify", paths[-1])
    assert outcome.code == 2 and "is missing" in outcome.stderr


def test_verify_detects_an_edited_earlier_slot_in_the_latest_file(tmp_path: Path) -> None:
    paths = _chain(tmp_path)
    data = json.loads(paths[-1].read_text(encoding="utf-8"))
    failed = next(s for s in data["slots"] if s["id"] == "textedit-type/1")
    failed["status"] = failed["result"]["status"] = "success"
    failed["result"]["verification"] = "looked fine"
    paths[-1].write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    outcome = farm("desktop", "verify", paths[-1])
    assert outcome.code == 2
    assert "slot textedit-type/1 differs from" in outcome.stderr


def test_verify_detects_a_changed_config(tmp_path: Path) -> None:
    paths = _chain(tmp_path)
    data = json.loads(paths[-1].read_text(encoding="utf-8"))
    data["config"]["execution"] = "controlled"
    paths[-1].write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    outcome = farm("desktop", "verify", paths[-1])
    assert outcome.code == 2 and "config or suite differs" in outcome.stderr


def test_report_marks_a_broken_chain(tmp_path: Path) -> None:
    paths = _chain(tmp_path)
    paths[1].write_text(paths[1].read_text(encoding="utf-8") + " ", encoding="utf-8")
    outcome = farm("desktop", "report", paths[-1], "--json")
    assert outcome.code == 0
    chain = json.loads(outcome.stdout)["chain"]
    assert chain["verified"] is False and "content changed" in chain["problem"]
