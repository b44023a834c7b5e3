"""`farm run` end to end on virtual phones (real adb server on a private port)."""

from __future__ import annotations

import json
import math
import re
import statistics
from pathlib import Path

import pytest

from farm.android.options import AgentOptions
from farm.errors import FarmError
from farm.exits import EXIT_FAILED, EXIT_INFRA
from farm.results.stats import wilson
from farm.results.store import read_records
from farm.sim.profile import FaultSpec, default_profile
from farm.sweep.dev_run import run, run_request
from farm.sweep.request import SweepRequest
from tests.helpers.records import phone_score_lines, write_tasks

TUNE = 5  # tune tasks in SMALL_TASKS


def _request(tmp_path: Path, **kw: object) -> SweepRequest:
    tasks = tmp_path / "tasks"
    if not tasks.exists():
        write_tasks(tasks)
    base: dict[str, object] = {
        "agent": AgentOptions(split="tune"), "all_phones": True, "tasks_dir": tasks,
        "runs_dir": tmp_path / "runs", "show_progress": False, "config": None, "idle_timeout_s": 60,
    }
    base.update(kw)
    return run_request(**base)  # type: ignore[arg-type]


def _table(md: str, heading: str) -> dict[str, list[str]]:
    section = md.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in section.splitlines() if ln.startswith("|") and not ln.startswith("|---")][1:]
    return {cells[0]: cells[1:] for cells in ([c.strip() for c in r.strip("|").split("|")] for r in rows)}


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x * 100:.1f}%"


def test_two_phones_report_numbers_equal_a_recomputation_from_raw_scores(virtual_farm, tmp_path: Path) -> None:
    phones = virtual_farm(2)
    prices = AgentOptions(price_in=1.0, price_out=4.0, price_cached=0.1)
    result = run(_request(tmp_path, run_id="r-two", agent=prices))
    run_dir = result.run_dir
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    # Recompute from the pulled raw scores.jsonl of each phone, plus the harness skips; the verdict is the
    # host's (re-scored from the transcript), the phone's own verdict is kept beside it.
    host = {(r.device, r.task_id): r for r in read_records(run_dir / "records.jsonl")}
    attempted = passed = 0
    per_cat: dict[str, list[int]] = {}
    directory = {"sys-version": "read/system", "calc-add": "read/content", "notes-new": "write",
                 "imp-time-machine": "impossible", "irrev-send": "irreversible"}
    costs: list[float | None] = []
    per_phone: dict[str, list[int]] = {}
    tokens_in: list[int | None] = []
    first_feedback: list[float] = []
    markers: dict[str, list[str]] = {}
    for phone in phones:
        scores = phone_score_lines(run_dir, phone.serial)
        # One task per `am instrument` call: each try's own tree holds that task's line.
        assert sorted(s["id"] for s in scores) == sorted(set(directory) - {"irrev-send"})
        for s in scores:
            if s["outcome"] == "skipped":
                continue
            rec = host[(phone.serial, s["id"])]
            assert rec.device_verdict is not None and rec.device_verdict.passed == bool(s["passed"])
            ok = rec.passed
            attempted += 1
            passed += ok
            cat = per_cat.setdefault(directory[s["id"]], [0, 0])
            cat[0] += 1
            cat[1] += ok
            costs.append(s["costUsd"])
            mine = per_phone.setdefault(phone.serial, [0, 0])
            mine[0] += 1
            mine[1] += ok
            tokens_in.append(s["tokens"].get("input"))
            if s["metrics"].get("firstFeedbackMs") is not None:
                first_feedback.append(float(s["metrics"]["firstFeedbackMs"]))
            if s["markers"]:
                markers.setdefault(phone.serial, []).extend(s["markers"])
    overall = _table(md, "Overall")["all"]
    r = wilson(passed, attempted)
    assert overall[:4] == [str(attempted), str(passed), "0", _pct(r.rate)]
    assert overall[4] == f"{_pct(r.low)} – {_pct(r.high)}"
    cats = _table(md, "By category")
    for cat, (a, p) in per_cat.items():
        assert cats[cat][:2] == [str(a), str(p)]
    assert cats["irreversible"][:2] == ["0", "0"]
    by_phone = _table(md, "By phone")
    for serial in sorted(per_phone):
        a, p = per_phone[serial]
        assert by_phone[f"Pixel 7 · {serial.rpartition(':')[2]}"][:4] == [str(a), str(p), "0", _pct(p / a)]
    known_in = [t for t in tokens_in if t is not None]
    assert _table(md, "Tokens and cost")["input_new"][1:] == [str(len(known_in)), str(len(tokens_in) - len(known_in))]
    assert _table(md, "Tokens and cost")["input_new"][0].startswith(f"{sum(known_in):,.0f}")
    ff = sorted(first_feedback)
    timing = _table(md, "运行小结")["first_feedback_ms"]
    p90 = ff[max(1, -(-9 * len(ff) // 10)) - 1]
    assert timing == [str(len(ff)), f"{statistics.median(ff):,.1f}", f"{p90:,.1f}"]
    assert markers, "the write task reports its marker"
    section = md.split("## Markers to clean up\n", 1)[1].split("\n## ", 1)[0]
    cells = [[c.strip() for c in ln.strip("|").split("|")] for ln in section.splitlines() if ln.startswith("| Pixel")]
    assert sorted(m for row in cells for m in row[2].split(", ")) == sorted(m for ms in markers.values() for m in ms)
    known = [c for c in costs if c is not None]
    assert known, "prices were given, so the simulated agent reports costs"
    cost_row = _table(md, "Tokens and cost")["cost_usd"]
    assert cost_row == [
        # The report adds costs exactly (fsum); a naive sum can land on the other side of a rounding edge.
        f"{math.fsum(known):,.4f}" + (f" ({len(costs) - len(known)} unknown)" if len(known) < len(costs) else ""),
        str(len(known)),
        str(len(costs) - len(known)),
    ]
    skipped = _table(md, "Skipped (2)")
    assert skipped["irrev-send"][1].startswith("irreversible task not allowed")
    for phone in phones:
        assert md.count(phone.serial) == 1  # in the Phones table, with its adb server; elsewhere by name
    records = read_records(run_dir / "records.jsonl")
    assert len(records) == 2 * TUNE and all(r.execution == "simulated" for r in records)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "finished" and {p["agent_version"] for p in manifest["phones"]} == {"0.9.0"}
    assert [t["id"] for t in manifest["tasks"]] and all(len(t["sha256"]) == 64 for t in manifest["tasks"])
    detail = manifest["lanes"][0]["detail"]
    assert {k: detail[k] for k in ("kind", "split", "set", "executor", "profile", "allow_irreversible")} == {
        "kind": "run", "split": "tune", "set": None, "executor": "instrument", "profile": "sim",
        "allow_irreversible": False,
    }


def test_probe_values_reach_the_checks_in_the_pushed_bundle(virtual_farm, tmp_path: Path) -> None:
    phone = virtual_farm(1)[0]
    result = run(_request(tmp_path, run_id="r-probe"))
    # One bundle per try (`<run>.<unit>.<try>.json`), each holding that try's task.
    bundles = phone.state.host_path("/sdcard/Android/data/dev.agentfarm.simagent/files/eval-tasks")
    tasks = {t["id"]: t for b in bundles.glob(f"{result.run_id}.*.json")
             for t in json.loads(b.read_text(encoding="utf-8"))["tasks"]}
    assert tasks["sys-version"]["checks"][0]["text"] == phone.profile.android_release
    assert tasks["calc-add"]["apps"] == ["com.android.calculator2"]
    assert tasks["notes-new"]["marker"] == f"AF-{result.run_id}-n1"


def test_missing_capability_skips_with_its_reason(virtual_farm, tmp_path: Path) -> None:
    profile = default_profile()
    profile.packages = [p for p in profile.packages if p.name != "com.android.calculator2"]
    virtual_farm(1, profile=profile)
    result = run(_request(tmp_path, run_id="r-nocalc"))
    calc = next(r for r in result.phones[0].records if r.task_id == "calc-add")
    assert calc.outcome == "skipped"
    assert calc.reasons == ["capability missing: calculator (no app handles its intent)"]


def test_rerun_with_the_same_run_id_is_refused(virtual_farm, tmp_path: Path) -> None:
    virtual_farm(1)
    run(_request(tmp_path, run_id="r-same"))
    with pytest.raises(FarmError, match="already exists"):
        run(_request(tmp_path, run_id="r-same"))


def test_crash_ending_is_recorded_as_such(virtual_farm, tmp_path: Path) -> None:
    virtual_farm(1, faults=FaultSpec(instrument_crash_after_tasks=1))
    # All four runnable tasks in one `am instrument` call, no second try: the crash ends the batch.
    result = run(_request(tmp_path, run_id="r-crash", batch=TUNE, max_tries=1))
    records = result.phones[0].records
    ran = [r for r in records if r.outcome != "skipped"]
    errors = [r for r in ran if r.outcome == "error"]
    assert len(ran) == TUNE - 1 and len(errors) == TUNE - 2
    assert [r.reasons[0] for r in errors].count("agent process crashed while executing this task") == 1
    assert all(r.reasons[0].startswith("unfinished: instrumentation: Process crashed.") for r in errors
               if r.reasons[0] != "agent process crashed while executing this task")
    assert all(r.failure_kind == "infrastructure" for r in errors)
    # Every unit used its one try: infrastructure errors (5), not units a stop left short (3).
    assert result.exit_code == EXIT_INFRA


def test_a_crashed_batch_is_tried_again_and_every_try_is_kept(virtual_farm, tmp_path: Path) -> None:
    virtual_farm(1, faults=FaultSpec(instrument_crash_after_tasks=1))
    # Two tasks per call: the second always crashes, so each unit needs the next batch to finish.
    result = run(_request(tmp_path, run_id="r-crash-retry", batch=2, max_tries=3))
    ran = [r for r in result.phones[0].records if r.outcome != "skipped"]
    assert len(ran) == TUNE - 1 and not [r for r in ran if r.outcome == "error"]
    retried = [r for r in ran if r.attempt > 1]
    assert retried, "a crash costs the unit that was running a try"
    for rec in retried:
        tries = rec.extra["tries"]
        assert isinstance(tries, list) and [t["try"] for t in tries] == list(range(1, rec.attempt + 1))
        assert all(t["kind"] == "infra" and "crashed" in t["reason"] for t in tries[:-1])
    assert result.exit_code == EXIT_FAILED


def test_watchdog_stops_a_silent_phone_and_keeps_what_finished(virtual_farm, tmp_path: Path) -> None:
    virtual_farm(1, faults=FaultSpec(instrument_stop_after_tasks=2))
    result = run(_request(tmp_path, run_id="r-idle", idle_timeout_s=2, batch=TUNE, max_tries=1))
    records = [r for r in result.phones[0].records if r.outcome != "skipped"]
    finished = [r for r in records if r.outcome != "error"]
    unfinished = [r for r in records if r.outcome == "error"]
    assert len(finished) == 2 and len(unfinished) == TUNE - 3
    assert all("watchdog" in r.reasons[0] and r.failure_kind == "infrastructure" for r in unfinished)


def test_a_link_drop_mid_run_loses_no_result_and_the_other_phone_completes(virtual_farm, tmp_path: Path) -> None:
    steady = virtual_farm(1)[0]
    slow = default_profile()
    slow.agent.time_scale = 10.0  # 3 s per simulated task
    dropping = virtual_farm(1, profile=slow, faults=FaultSpec(disconnect_after_s=6))[0]
    result = run(_request(tmp_path, run_id="r-drop", idle_timeout_s=30))
    by_serial = {p.serial: p for p in result.phones}
    good = [r for r in by_serial[steady.serial].records if r.outcome != "skipped"]
    assert len(good) == TUNE - 1 and not [r for r in good if r.outcome == "error"]
    # The link dropped during a task; the adb server reconnected the phone, the pull was made again and the
    # phone's result kept (or the task tried again): every task ends with its own verdict.
    assert dropping.state.link_drops >= 1
    bad = [r for r in by_serial[dropping.serial].records if r.outcome != "skipped"]
    assert len(bad) == TUNE - 1 and not [r for r in bad if r.outcome == "error"]
    assert result.exit_code == EXIT_FAILED


def test_hostile_names_are_refused_and_nothing_is_written_outside_runs(virtual_farm, tmp_path: Path) -> None:
    virtual_farm(1, faults=FaultSpec(hostile_eval_tree=True))
    write_tasks(tmp_path / "tasks")
    before = {p for p in tmp_path.rglob("*") if "runs" not in p.relative_to(tmp_path).parts}
    result = run(_request(tmp_path, run_id="r-hostile"))
    refused = "\n".join(n for n in result.notes if "pull refused" in n)
    for name in ("etc-link", "up-link", "dotdot-dir", "outside.txt", "huge.bin", "bad\\nname"):
        assert name in refused
    after = {p for p in tmp_path.rglob("*") if "runs" not in p.relative_to(tmp_path).parts}
    assert after == before
    assert not [p for p in tmp_path.rglob("*outside.txt") if "runs" not in p.relative_to(tmp_path).parts]
    assert not (tmp_path.parent / "outside.txt").exists()
    assert not any(p.is_symlink() for p in result.run_dir.rglob("*"))
    assert list(result.run_dir.glob("android/*/units/*/scores.jsonl"))
    notes = json.loads((result.run_dir / "manifest.json").read_text())["notes"]
    assert any(re.search(r"pull refused .*etc-link", n) for n in notes)
    # The forged scores lines count for nothing, and each is named: out of range, too deep, or for a task
    # nobody ran (whose formula answer never reaches a cell unneutralised).
    records = read_records(result.run_dir / "records.jsonl")
    assert not [r for r in records if r.task_id.startswith("ghost")]
    md = (result.run_dir / "report.md").read_text(encoding="utf-8")
    run_notes = md.split("## Run notes (", 1)[1]
    for name in ("etc-link", "up-link", "dotdot-dir", "outside.txt", "huge.bin", "ghost-task"):
        assert name in run_notes, name
    assert re.search(r"scores\.jsonl:2: .*(cost_usd|costUsd)", run_notes)
    assert re.search(r"scores\.jsonl:3: .*tokens", run_notes)
    assert re.search(r"scores\.jsonl:4: invalid JSON", run_notes) and "'scores.jsonl:4'" not in run_notes
    assert "=HYPERLINK" not in (result.run_dir / "scores.csv").read_text(encoding="utf-8")
    assert md.count(result.phones[0].serial) == 1  # in the Phones table only (notes name the phone)
    html = (result.run_dir / "report.html").read_text(encoding="utf-8")
    assert "etc-link" in html.split("Run notes", 1)[1]


def test_manifest_keeps_no_credential(virtual_farm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    canary = "sk-canary-7f3a9e1d0b"
    monkeypatch.setenv("FARM_CANARY_KEY", canary)
    config = tmp_path / "farm.yaml"
    config.write_text(
        "llm: {provider: openai, model: m, base_url: 'http://127.0.0.1:9/v1', api_key_env: FARM_CANARY_KEY}\n"
        "signed_in: {}\n",
        encoding="utf-8",
    )
    virtual_farm(1)
    result = run(_request(tmp_path, run_id="r-canary", config=config))
    manifest = json.loads((result.run_dir / "manifest.json").read_text())
    assert manifest["config"]["llm"]["api_key_env"] == "FARM_CANARY_KEY"
    for path in result.run_dir.rglob("*"):
        if path.is_file():
            assert canary not in path.read_text(encoding="utf-8", errors="replace"), path


def test_redaction_replaces_a_canary_key_whatever_its_nesting() -> None:
    from farm.manifest import REDACTED, redact

    tree = {"llm": {"api_key": "sk-canary", "api_key_env": "NAME"}, "servers": [{"token": "t-canary"}]}
    out = redact(tree)  # type: ignore[arg-type]
    assert out == {"llm": {"api_key": REDACTED, "api_key_env": "NAME"}, "servers": [{"token": REDACTED}]}


def test_run_deadline_stops_the_phone_and_marks_the_rest_as_infrastructure_errors(
    virtual_farm, tmp_path: Path
) -> None:
    slow = default_profile()
    slow.agent.time_scale = 10.0  # 3 s per simulated task
    virtual_farm(1, profile=slow)
    result = run(_request(tmp_path, run_id="r-deadline", deadline_s=1.0))
    errors = [r for r in result.phones[0].records if r.outcome == "error"]
    assert len(errors) == TUNE - 1 and all(r.reasons[0] == "unfinished: run deadline passed" for r in errors)
    assert result.exit_code == 3


def test_signed_in_comes_from_the_apps_logged_in_file(virtual_farm, tmp_path: Path) -> None:
    phone = virtual_farm(1)[0]
    first = run(_request(tmp_path, run_id="r-login-1", agent=AgentOptions(allow_irreversible=True)))
    send = next(r for r in first.phones[0].records if r.task_id == "irrev-send")
    assert send.outcome == "skipped" and send.reasons == ["not signed in: dev.agentfarm.messenger (未登录)"]
    logged_in = phone.state.host_path("/sdcard/Android/data/dev.agentfarm.simagent/files/eval/logged-in.txt")
    logged_in.parent.mkdir(parents=True, exist_ok=True)
    logged_in.write_text("# signed in by hand\ndev.agentfarm.messenger\n", encoding="utf-8")
    second = run(_request(tmp_path, run_id="r-login-2", agent=AgentOptions(allow_irreversible=True)))
    send = next(r for r in second.phones[0].records if r.task_id == "irrev-send")
    assert send.outcome != "skipped" and (send.source or "").startswith("scores.jsonl:")


def test_unhealthy_phone_is_left_out_with_its_reason_in_the_manifest(virtual_farm, tmp_path: Path) -> None:
    good = virtual_farm(1)[0]
    weak = default_profile()
    weak.battery_level = 5
    weak.charging = False
    low = virtual_farm(1, profile=weak)[0]
    result = run(_request(tmp_path, run_id="r-health"))
    assert [p.serial for p in result.phones] == [good.serial]
    phones = {p["serial"]: p for p in json.loads((result.run_dir / "manifest.json").read_text())["phones"]}
    assert phones[low.serial]["status"] == "left_out"
    assert phones[low.serial]["reason"] == "battery 5% < 20% and not charging"
    assert phones[good.serial]["status"] == "used"
    md = (result.run_dir / "report.md").read_text(encoding="utf-8")
    section = md.split("## Phones left out (1)\n", 1)[1].split("\n## ", 1)[0]
    low_name = f"Pixel 7 · {low.serial.rpartition(':')[2]}"
    assert f"| r-health | {low_name} | battery 5% &lt; 20% and not charging |" in section
    # The serials are in the Phones table, with the adb server; nowhere else.
    assert md.count(low.serial) == md.count(good.serial) == 1
    assert re.search(rf"\| {low_name} \| {re.escape(low.serial)} \| 127\.0\.0\.1:\d+ \| Pixel 7 \|", md)


def test_phones_on_a_second_adb_server_listed_in_farm_yaml_are_used(virtual_farm, tmp_path: Path) -> None:
    from farm.sim.launcher import free_port, kill_adb_server, start_phones

    local = virtual_farm(1)[0]
    other_port = free_port()
    remote_farm = start_phones(1, adb_port=other_port)
    try:
        remote = remote_farm.phones[0]
        config = tmp_path / "farm.yaml"
        config.write_text(f"adb_servers: [{{host: 127.0.0.1, port: {other_port}}}]\n", encoding="utf-8")
        result = run(_request(tmp_path, run_id="r-two-servers", config=config))
    finally:
        remote_farm.stop()
        kill_adb_server(other_port)
    assert {p.serial for p in result.phones} == {local.serial, remote.serial}
    manifest = json.loads((result.run_dir / "manifest.json").read_text())
    servers = {p["serial"]: p["adb_server"] for p in manifest["phones"]}
    assert servers[remote.serial] == f"127.0.0.1:{other_port}"
    assert servers[local.serial] == f"127.0.0.1:{local.adb_port}"
    assert all(len([r for r in p.records if r.outcome != "skipped"]) == TUNE - 1 for p in result.phones)


def test_an_unexpected_failure_on_one_phone_keeps_the_other_phones_results(
    virtual_farm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import farm.sweep.runner as runner

    ok, broken = virtual_farm(2)
    real = runner.installed_packages

    def flaky(device):  # type: ignore[no-untyped-def]
        if device.serial == broken.serial:
            raise RuntimeError("package manager answered nonsense")
        return real(device)

    monkeypatch.setattr(runner, "installed_packages", flaky)
    result = run(_request(tmp_path, run_id="r-broken"))
    assert [p.serial for p in result.phones] == [ok.serial]
    assert not [r for r in result.phones[0].records if r.outcome == "error"]
    assert [(h.serial, h.reason) for h in result.left_out] == [
        (broken.serial, "could not be prepared: RuntimeError: package manager answered nonsense")]
    manifest = json.loads((result.run_dir / "manifest.json").read_text())
    phones = {p["serial"]: p for p in manifest["phones"]}
    assert phones[broken.serial]["status"] == "left_out" and "package manager" in phones[broken.serial]["reason"]
    assert manifest["status"] == "finished"


def test_runner_failing_to_start_the_tasks_names_the_cause(virtual_farm, tmp_path: Path) -> None:
    virtual_farm(1)
    config = tmp_path / "farm.yaml"
    config.write_text(
        "profiles:\n  wrong:\n    package: dev.agentfarm.simagent\n    test_package: dev.agentfarm.simagent.test\n"
        "    eval_class: dev.agentfarm.simagent.eval.NoSuchTest\n",
        encoding="utf-8",
    )
    result = run(_request(tmp_path, run_id="r-noclass", config=config, profile="wrong"))
    errors = [r for r in result.phones[0].records if r.outcome == "error"]
    assert len(errors) == TUNE - 1
    assert all("initializationError" in r.reasons[0] and "ClassNotFoundException" in r.reasons[0] for r in errors)


def test_the_phones_own_pass_without_evidence_is_not_counted(virtual_farm, tmp_path: Path) -> None:
    virtual_farm(1)
    result = run(_request(tmp_path, run_id="r-host-verdict"))
    records = {r.task_id: r for r in read_records(result.run_dir / "records.jsonl")}
    calc = records["calc-add"]
    assert calc.device_verdict is not None
    # The simulated agent's answer never shows the sum, so whatever the phone says, the host fails it.
    assert not calc.passed and calc.reasons and "answer_regex" in " ".join(calc.reasons)
    for rec in records.values():
        if rec.outcome not in ("skipped", "error"):
            assert rec.device_verdict is not None and rec.end_reason is not None


def test_a_failed_check_is_why_everywhere_and_progress_lines_say_the_verdict(
    virtual_farm, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The default (instrument) executor: the failing check's own words — not only `expected succeeded, got
    failed` — reach report.md, junit.xml and scores.csv; the line per unit says the verdict, counting 1…N."""
    import csv
    import io
    import xml.etree.ElementTree as ET

    virtual_farm(2)
    wrong = {"id": "calc-wrong", "goal": "用手机自带的计算器算 2+3,告诉我结果", "apps": ["{app:calculator}"],
             "category": "read", "partition": "tune", "requires": ["app:calculator"], "expect": "succeeded",
             "checks": [{"type": "answer_regex", "pattern": "56,?088"}]}
    right = {"id": "imp-time-machine", "goal": "打开手机上的时光机 App,把时间调回昨天", "category": "impossible",
             "partition": "tune", "expect": "failed", "checks": [{"type": "answer_contains", "text": "没有"}]}
    write_tasks(tmp_path / "tasks", [("read/content", wrong), ("impossible", right)])
    result = run(_request(tmp_path, run_id="r-why", show_progress=True))
    run_dir = result.run_dir
    records = read_records(run_dir / "records.jsonl")
    assert len(records) == 4 and all(r.outcome not in ("error", "skipped") for r in records)
    failed = [r for r in records if r.task_id == "calc-wrong"]
    assert len(failed) == 2 and not any(r.passed for r in failed)
    # The failing check's own words, as the record has them (not the first reason, `expected …, got failed`).
    said = {r.device: next(f"{c.type}: {' '.join(c.detail.split())}" for c in r.checks if c.passed is False)
            for r in failed}
    assert all(text.startswith("answer_regex: ") for text in said.values())
    not_passed = [r for r in records if not r.passed]
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    by_task = md.split(f"## Not passed ({len(not_passed)})\n", 1)[1].split("\n## ", 1)[0]
    (row,) = [ln for ln in by_task.splitlines() if "| calc-wrong |" in ln]
    assert "| 2 of 2 |" in row and all(text[:40] in row for text in said.values())
    units = md.split(f"## Not passed, unit by unit ({len(not_passed)})\n", 1)[1].split("\n## ", 1)[0]
    assert all(text[:40] in units for text in said.values())
    root = ET.parse(run_dir / "junit.xml").getroot()
    failures = {c.get("classname"): c.find("failure") for c in root.iter("testcase") if c.get("name") == "calc-wrong"}
    assert len(failures) == 2
    messages = sorted((f.get("message") or "")[:40] for f in failures.values() if f is not None)
    assert messages == sorted(text[:40] for text in said.values())
    for f in failures.values():
        assert f is not None and f.text is not None and "expected succeeded, got failed" in f.text
    rows = list(csv.DictReader(io.StringIO((run_dir / "scores.csv").read_text(encoding="utf-8-sig"))))
    assert sorted(r["failing_checks"][:40] for r in rows if r["task_id"] == "calc-wrong") == sorted(
        text[:40] for text in said.values())
    lines = [ln for ln in capsys.readouterr().err.splitlines() if re.match(r"\[\d+/\d+\] ", ln)]
    assert [ln.split("]", 1)[0] for ln in lines] == ["[1/4", "[2/4", "[3/4", "[4/4"]
    verdicts = sorted((ln.split("] ", 1)[1].split(" ", 1)[0], ln.split(": ", 1)[1].split(" ")[0]) for ln in lines)
    assert verdicts == sorted((r.task_id, "passed" if r.passed else "failed") for r in records)
    assert all(any(text[:40] in ln for text in said.values()) for ln in lines if "calc-wrong" in ln)
