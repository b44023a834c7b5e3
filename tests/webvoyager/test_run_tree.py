"""The WebVoyager run tree: paths, manifest, preflight log, recovery file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from farm.errors import FarmError
from tests.helpers.webvoyager import make_agent_result, make_call, make_manifest, make_task, make_tasks, make_verdict
from web_bench.webvoyager.run_tree import (
    Recovery,
    RecoveryEntry,
    RunTree,
    WvManifest,
    append_preflight,
    create_manifest,
    load_recovery,
    note_agent_result,
    note_verdict,
    read_manifest,
    resume_mismatch,
    save_recovery,
    write_manifest,
)

IDS = ["Allrecipes--0", "Apple--0", "Amazon--0"]


def test_attempt_one_is_the_task_directory_and_later_attempts_are_numbered(tmp_path: Path) -> None:
    tree = RunTree(tmp_path)
    assert tree.attempt_dir("Apple--3", 1) == tmp_path / "Apple--3"
    assert tree.attempt_dir("Apple--3", 2) == tmp_path / "Apple--3" / "attempts" / "2"


def test_attempt_zero_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FarmError, match="attempt 0"):
        RunTree(tmp_path).attempt_dir("Apple--3", 0)


@pytest.mark.parametrize("bad", ["../x", "a/b", "a\\b", "..", "x..y", "a\0b", "", "results.ndjson",
                                 "result-revisions", "result-revisions.old-1", ".hidden"])
def test_unsafe_task_ids_are_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(FarmError, match="task id"):
        RunTree(tmp_path).task_dir(bad)


def test_attempts_on_disk_lists_the_numbered_directories(tmp_path: Path) -> None:
    tree = RunTree(tmp_path)
    (tmp_path / "Apple--3" / "attempts" / "3").mkdir(parents=True)
    (tmp_path / "Apple--3" / "attempts" / "junk").mkdir()
    assert tree.attempts_on_disk("Apple--3") == [1, 3]
    assert tree.attempts_on_disk("Apple--4") == []


def test_manifest_round_trips(tmp_path: Path) -> None:
    tree = RunTree(tmp_path)
    manifest = make_manifest(make_tasks(IDS))
    write_manifest(tree, manifest, create=True)
    assert read_manifest(tree) == manifest


def test_first_manifest_write_refuses_an_existing_one(tmp_path: Path) -> None:
    tree = RunTree(tmp_path)
    write_manifest(tree, make_manifest(make_tasks(IDS)), create=True)
    before = tree.manifest.read_bytes()
    with pytest.raises(FarmError, match="already exists"):
        write_manifest(tree, make_manifest(make_tasks(IDS[:1])), create=True)
    assert tree.manifest.read_bytes() == before


def test_manifest_with_an_unknown_judge_mode_names_the_field(tmp_path: Path) -> None:
    tree = RunTree(tmp_path)
    data = json.loads(make_manifest(make_tasks(IDS)).model_dump_json())
    data["judge_mode"] = "vibes"
    tree.manifest.write_text(json.dumps(data))
    with pytest.raises(FarmError, match="manifest.json: invalid manifest \\(judge_mode"):
        read_manifest(tree)


def test_create_manifest_refuses_an_existing_one(tmp_path: Path) -> None:
    tree = RunTree(tmp_path)
    create_manifest(tree, make_manifest(make_tasks(IDS)))
    with pytest.raises(FarmError, match="already exists"):
        create_manifest(tree, make_manifest(make_tasks(IDS)))


def test_manifest_command_line_has_its_credentials_removed() -> None:
    manifest = make_manifest(make_tasks(IDS), command=["farm", "webvoyager", "run", "--api-key", "sk-secret-123"])
    assert "sk-secret-123" not in manifest.model_dump_json()
    assert manifest.command[:4] == ["farm", "webvoyager", "run", "--api-key"]


def test_manifest_with_a_duplicate_id_is_refused() -> None:
    with pytest.raises(ValueError, match="repeats"):
        make_manifest(make_tasks(["Apple--0", "Apple--0"]))


def test_manifest_with_an_unsafe_id_is_refused() -> None:
    task = make_task("Apple--0").model_copy(update={"task_id": "../Apple"})
    with pytest.raises(ValueError, match="cannot name a task directory"):
        make_manifest([task])


def test_protected_ids_outside_the_selection_are_refused() -> None:
    with pytest.raises(ValueError, match="protected"):
        make_manifest(make_tasks(IDS), protected_task_ids=["Apple--9"])


def test_missing_manifest_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(FarmError, match="manifest.json: no WebVoyager manifest"):
        read_manifest(RunTree(tmp_path))


def test_identical_manifests_resume() -> None:
    tasks = make_tasks(IDS)
    assert resume_mismatch(make_manifest(tasks), make_manifest(tasks, run_id="other")) == []


def test_resume_mismatch_names_the_differing_fields() -> None:
    tasks = make_tasks(IDS)
    old = make_manifest(tasks)
    new = make_manifest(tasks[:2], params={"timeout_ms": 1000}, agent={"provider": "stub", "model": "other",
                                                                      "protocol": "openai-completions"})
    assert resume_mismatch(old, new) == ["task_ids", "task_sha256.Amazon--0", "set_sha256", "agent.model",
                                         "params.timeout_ms"]


def test_resume_mismatch_sees_code_pricing_and_judge_changes() -> None:
    tasks = make_tasks(IDS)
    old = make_manifest(tasks)
    new = make_manifest(tasks, judge_mode="evidence", judge_prompt_sha256="1" * 64, pricing={},
                        code={"git_commit": "1" * 40}, har_mode="replay")
    assert resume_mismatch(old, new) == ["judge_mode", "judge_prompt_sha256", "pricing.agent", "code.git_commit",
                                         "har_mode"]


def test_resume_mismatch_can_ignore_the_judge_fields() -> None:
    tasks = make_tasks(IDS)
    new = make_manifest(tasks, judge_mode="evidence")
    assert resume_mismatch(make_manifest(tasks), new, ignore=("judge_mode",)) == []


def test_preflight_calls_are_appended_one_per_line(tmp_path: Path) -> None:
    tree = RunTree(tmp_path)
    append_preflight(tree, make_call("preflight", step=None))
    append_preflight(tree, make_call("preflight", step=None, output=7))
    lines = tree.preflight.read_text().splitlines()
    assert [json.loads(line)["usage"]["output"] for line in lines] == [20, 7]


def test_preflight_append_after_a_torn_line_keeps_the_new_line_whole(tmp_path: Path) -> None:
    tree = RunTree(tmp_path)
    tree.preflight.write_text('{"role": "pre')
    append_preflight(tree, make_call("preflight", step=None))
    lines = tree.preflight.read_text().splitlines()
    assert lines[0] == '{"role": "pre'
    assert json.loads(lines[1])["role"] == "preflight"


def test_absent_recovery_is_empty(tmp_path: Path) -> None:
    assert load_recovery(RunTree(tmp_path)) == Recovery()


def test_recovery_round_trips_and_replaces_entries_per_task(tmp_path: Path) -> None:
    tree = RunTree(tmp_path)
    first = RecoveryEntry(task_id="Apple--0", attempt=1, reason="quota 2056", recorded_at="t1")
    again = RecoveryEntry(task_id="Apple--0", attempt=2, reason="quota again", recorded_at="t2")
    recovery = Recovery().with_entry("quota_retry", first).with_entry("quota_retry", again)
    save_recovery(tree, recovery)
    loaded = load_recovery(tree)
    assert loaded.reasons("quota_retry") == {"Apple--0": "quota again"}
    assert loaded.without("quota_retry", "Apple--0").quota_retry == []


def test_invalid_recovery_file_names_the_field(tmp_path: Path) -> None:
    tree = RunTree(tmp_path)
    tree.recovery.write_text('{"quota_retry": [{"task_id": "Apple--0"}]}')
    with pytest.raises(FarmError, match="recovery.json: invalid recovery file \\(quota_retry.0.attempt"):
        load_recovery(tree)


def test_manifest_rejects_unknown_fields(tmp_path: Path) -> None:
    data = json.loads(make_manifest(make_tasks(IDS)).model_dump_json())
    data["api_key"] = "x"
    with pytest.raises(ValueError, match="api_key"):
        WvManifest.model_validate(data)


def test_a_quota_stop_goes_to_quota_retry_and_a_later_normal_end_clears_it() -> None:
    recovery = Recovery()
    note_agent_result(recovery, make_agent_result("Apple--0", status="error", error_kind="quota"))
    assert [(e.task_id, e.attempt) for e in recovery.quota_retry] == [("Apple--0", 1)]
    note_agent_result(recovery, make_agent_result("Apple--0", attempt=2, status="completed"))
    assert recovery == Recovery()


def test_a_service_outage_or_interruption_goes_to_service_retry() -> None:
    recovery = Recovery()
    note_agent_result(recovery, make_agent_result("Apple--0", status="error", error_kind="service_unavailable"))
    note_agent_result(recovery, make_agent_result("Apple--1", status="error", error_kind="interrupted"))
    assert list(recovery.reasons("service_retry")) == ["Apple--0", "Apple--1"]
    assert recovery.quota_retry == []


def test_a_normal_failure_is_not_queued_again() -> None:
    recovery = Recovery()
    note_agent_result(recovery, make_agent_result("Apple--0", status="timeout"))
    note_agent_result(recovery, make_agent_result("Apple--1", status="error", error_kind="website_unavailable"))
    assert recovery == Recovery()


def test_a_judge_quota_goes_to_quota_rejudge_and_a_verdict_clears_it() -> None:
    recovery = Recovery()
    note_verdict(recovery, "Apple--0", make_verdict(passed=None, judge_error="quota 2056", error_kind="quota"))
    assert recovery.reasons("quota_rejudge") == {"Apple--0": "quota 2056"}
    note_verdict(recovery, "Apple--0", make_verdict(passed=False))
    assert recovery.quota_rejudge == []


def test_a_new_agent_attempt_clears_an_owed_rejudge() -> None:
    recovery = Recovery()
    note_verdict(recovery, "Apple--0", make_verdict(passed=None, judge_error="quota", error_kind="quota"))
    note_agent_result(recovery, make_agent_result("Apple--0", attempt=2))
    assert recovery.quota_rejudge == []
