"""Re-scoring a phone's attempt: the phone never supplies the harness's looks; the harness's own look file does."""

import json
from pathlib import Path

from farm.results.device_line import DeviceScore
from farm.results.normalise import Context, score_to_record
from farm.results.record import Record
from farm.scoring.evidence import FreshLook
from farm.scoring.rescore import APP_LOOK_FILE, NO_LOOK, PULLED_NO_LOOK, host_rescore, rescore_records
from farm.scoring.transcript import HARNESS_LOOK_FILE, HarnessLook, load_evidence, read_phone_evidence
from tests.helpers.host import make_task
from tests.helpers.records import score_line

_CTX = Context(run="r", device="S1", executor="instrument")
MARKER = "AF-r-n1"
# Resolved for run `r`, as the lane hands tasks to scoring.
_WRITE = make_task(id="notes-new", category="write", marker="AF-{run}-n1",
                   checks=[{"type": "screen_has", "marker": True, "packageName": "dev.agentfarm.notes"}]
                   ).model_copy(update={"marker": MARKER})
_PROBE = make_task(id="notes-new", category="write", marker="AF-{run}-n1",
                   checks=[{"type": "probe_has", "probe": "storage_root", "marker": True}]
                   ).model_copy(update={"marker": MARKER})
_LIE = {"freshLooks": [{"package": "dev.agentfarm.notes", "text": f'[1] TextView "{MARKER}"'}],
        "probesAfter": {"storage_root": MARKER}, "appChoices": {"dev.agentfarm.notes": "dev.agentfarm.notes"},
        "judgeVerdicts": [{"mode": "evidence", "passed": True}], "probes": {"x": "y"}}


def _record() -> Record:
    line = score_line("notes-new", category="write", checks=[], answer="done")
    return score_to_record(DeviceScore.model_validate(line), _CTX, "scores.jsonl:1")


def _run(tmp_path: Path, **evidence: object) -> Path:
    run_dir = tmp_path / "notes-new" / "run"
    run_dir.mkdir(parents=True)
    ev = {"end": "answer", "answer": "done", "packagesUsed": ["dev.agentfarm.notes"], **evidence}
    (run_dir / "final.json").write_text(json.dumps({"outcome": "succeeded", "passed": True, "evidence": ev}),
                                        encoding="utf-8")
    return run_dir


def _look(run_dir: Path, **fields: object) -> None:
    look = HarnessLook.model_validate({"at": "2026-12-01T03:00:00Z", **fields})
    (run_dir / HARNESS_LOOK_FILE).write_text(look.model_dump_json(by_alias=True), encoding="utf-8")


def _seen(text: str) -> list[FreshLook]:
    return [FreshLook(package="dev.agentfarm.notes", text=f'[1] TextView "{text}"')]


def test_the_phones_own_looks_are_dropped_and_named(tmp_path: Path) -> None:
    phone = read_phone_evidence(_run(tmp_path, **_LIE))
    ev = phone.evidence
    assert (ev.fresh_looks, ev.probes_after, ev.app_choices, ev.judge_verdicts, ev.probes) == ([], {}, {}, [], {})
    assert phone.ignored == ("freshLooks", "probes", "probesAfter", "appChoices", "judgeVerdicts")
    assert phone.note() is not None and phone.note().startswith("the app wrote freshLooks, probes, probesAfter")
    # An empty list claims nothing; the snake_case spelling is caught too.
    assert read_phone_evidence(_run(tmp_path / "b", freshLooks=[], probes_after={"a": "b"})).ignored == (
        "probesAfter",)


def test_a_pulled_run_fails_screen_has_saying_the_harness_did_not_look(tmp_path: Path) -> None:
    out = host_rescore(_record(), _WRITE, _run(tmp_path, **_LIE), look="pulled")
    assert (out.outcome, out.passed, out.failure_kind) == ("failed", False, "agent")
    assert [(c.type, c.passed, c.detail) for c in out.checks] == [("screen_has", False, PULLED_NO_LOOK)]
    assert "the run was pulled" in PULLED_NO_LOOK and "did not look after the attempt" in PULLED_NO_LOOK
    assert out.device_verdict is not None and out.device_verdict.passed
    # The note comes last: the first reason stays the failure's own.
    assert out.reasons[-1].startswith("the app wrote freshLooks") and "ignored" in out.reasons[-1]
    assert not out.reasons[0].startswith("the app wrote")


def test_a_pulled_run_fails_probe_has_the_same_way(tmp_path: Path) -> None:
    _run(tmp_path, **_LIE)
    (out,) = rescore_records([_record()], {"notes-new": _PROBE}, tmp_path, looked=None)
    assert [(c.type, c.passed, c.detail) for c in out.checks] == [("probe_has", False, PULLED_NO_LOOK)]


def test_the_harness_look_decides_not_the_apps(tmp_path: Path) -> None:
    run_dir = _run(tmp_path, **_LIE)
    _look(run_dir, looks=_seen("购物清单"))
    (out,) = rescore_records([_record()], {"notes-new": _WRITE}, tmp_path, looked=["notes-new"])
    assert (out.outcome, out.passed) == ("failed", False)
    assert out.checks[0].detail.startswith(f"'{MARKER}' not shown by dev.agentfarm.notes")


def test_an_app_writing_no_looks_is_scored_from_the_harness_look(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    _look(run_dir, looks=_seen(MARKER), probesAfter={"storage_root": f"Alarms {MARKER}"})
    both = _WRITE.model_copy(update={"checks": _WRITE.checks + _PROBE.checks})
    out = host_rescore(_record(), both, run_dir, look="harness")
    assert (out.outcome, out.passed, out.reasons) == ("succeeded", True, [])
    assert load_evidence(run_dir).fresh_looks == []  # without the look, the transcript alone has none


def test_an_app_written_look_file_that_farm_replaced_is_named(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    _look(run_dir, looks=_seen(MARKER), appFileReplaced=True)
    out = host_rescore(_record(), _WRITE, run_dir, look="harness")
    assert out.passed and out.reasons == [APP_LOOK_FILE]


def test_no_look_from_farms_own_run_is_an_infrastructure_error(tmp_path: Path) -> None:
    run_dir = _run(tmp_path, **_LIE)
    _look(run_dir, looks=_seen(MARKER))  # not the executor's: it did not say it looked after this task
    (out,) = rescore_records([_record()], {"notes-new": _WRITE}, tmp_path, looked=[])
    assert (out.outcome, out.passed, out.failure_kind) == ("error", False, "infrastructure")
    assert out.reasons[0] == NO_LOOK


def test_a_look_the_harness_could_not_take_is_an_infrastructure_error(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    _look(run_dir, error="uiautomator2: connect failed")
    out = host_rescore(_record(), _WRITE, run_dir, look="harness")
    assert (out.outcome, out.failure_kind) == ("error", "infrastructure")
    assert out.reasons == ["phone (the harness's look after the run): uiautomator2: connect failed"]
    (tmp_path / "notes-new" / "run" / HARNESS_LOOK_FILE).write_text("{}", encoding="utf-8")
    out = host_rescore(_record(), _WRITE, run_dir, look="harness")
    assert out.outcome == "error" and "look after the attempt is unreadable" in out.reasons[0]


def test_a_task_without_look_checks_needs_no_look(tmp_path: Path) -> None:
    task = make_task(id="notes-new", checks=[{"type": "answer_contains", "text": "done"}])
    out = host_rescore(_record(), task, _run(tmp_path, probesAfter={"storage_root": "x"}), look="none")
    assert out.passed and out.reasons == [
        "the app wrote probesAfter in final.json; ignored — only the harness looks, probes and judges"]


def test_packages_used_default_to_the_screens_the_transcript_read(tmp_path: Path) -> None:
    run_dir = _run(tmp_path, packagesUsed=[],
                   screenReads=[{"step": 1, "text": "a", "package": "com.x"}, {"step": 2, "text": "b",
                                                                                 "package": "dev.agentfarm.notes"}])
    assert read_phone_evidence(run_dir).evidence.packages_used == ["com.x", "dev.agentfarm.notes"]
