"""The simulated agent's `am instrument -w -r` stream and the eval tree it writes."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import adbutils

from farm.sim.instrument import run_instrument
from farm.sim.launcher import SimPhone
from farm.sim.phone import PhoneState
from farm.sim.profile import default_profile
from tests.helpers.sim_apps import (
    AGENT_COMPONENT,
    EVAL_CLASS,
    eval_dir,
    instrument_argv,
    make_phone,
    nodes,
    parse_status,
    push_bundle,
    run_to_text,
    scores,
    task,
)

SCORE_KEYS = {
    "id", "category", "partition", "expect", "outcome", "passed", "checks", "answer", "reason", "failureCategory",
    "takeoverKind", "endReason", "steps", "tokens", "costUsd", "metrics", "markers", "execution", "startedAt",
    "endedAt", "appPackage",
}


def fast_phone(tmp_path: Path, pass_rate: float = 0.5, **faults: object) -> PhoneState:
    profile = default_profile()
    profile.agent.time_scale = 1_000_000
    profile.agent.pass_rate = pass_rate
    for key, value in faults.items():
        setattr(profile.faults, key, value)
    return make_phone(tmp_path, profile)


def five_tasks() -> list[dict[str, object]]:
    return [task("sys-a"), task("sys-b", partition="holdout"), task("w-note", "write", marker="note-{run}"),
            task("irr-send", "irreversible"), task("skill-x", "skills/pair")]


def test_stream_pairs_every_start_with_an_end(tmp_path: Path) -> None:
    phone = fast_phone(tmp_path)
    out = run_to_text(phone, instrument_argv("R1", push_bundle(phone, "R1", five_tasks())))
    bundles = parse_status(out)
    statuses = [b for b in bundles if b.kind == "status"]
    assert [b.code for b in statuses[::2]] == [1, 1, 1, 1]
    assert all(b.values["numtests"] == "4" and b.values["class"] == EVAL_CLASS for b in statuses)
    assert [b.values["test"] for b in statuses[::2]] == ["sys-a", "sys-b", "w-note", "irr-send"]
    assert [s.values["test"] for s in statuses[1::2]] == ["sys-a", "sys-b", "w-note", "irr-send"]
    assert bundles[-1].kind == "result" and bundles[-1].code == -1
    assert out.endswith("\n\nINSTRUMENTATION_CODE: -1\n")


def test_status_keys_are_sorted_like_instrument_java(tmp_path: Path) -> None:
    phone = fast_phone(tmp_path, pass_rate=0.0)
    out = run_to_text(phone, instrument_argv("R1", push_bundle(phone, "R1", [task("a")])))
    keys = [line.split(": ", 1)[1].split("=", 1)[0] for line in out.splitlines()
            if line.startswith("INSTRUMENTATION_STATUS: ")]
    assert keys[:6] == ["class", "current", "id", "numtests", "stream", "test"]
    assert keys[6:] == ["class", "current", "id", "numtests", "stack", "stream", "test"]


def test_scores_have_contract_fields_and_say_simulated(tmp_path: Path) -> None:
    phone = fast_phone(tmp_path)
    run_to_text(phone, instrument_argv("R1", push_bundle(phone, "R1", five_tasks())))
    rows = scores(phone, "R1")
    assert [r["id"] for r in rows] == ["sys-a", "sys-b", "w-note", "irr-send"]
    assert all(set(r) == SCORE_KEYS and r["execution"] == "simulated" for r in rows)
    assert set(rows[0]["tokens"]) == {"input", "cacheRead", "cacheWrite", "output"}
    assert set(rows[0]["metrics"]) == {"firstFeedbackMs", "roundTrips", "modelMs", "screenReadMs", "actionMs",
                                       "otherMs", "totalMs"}
    assert rows[2]["markers"] == ["note-R1"]


def test_irreversible_skipped_without_permission(tmp_path: Path) -> None:
    phone = fast_phone(tmp_path)
    out = run_to_text(phone, instrument_argv("R1", push_bundle(phone, "R1", [task("irr", "irreversible")])))
    assert [b.code for b in parse_status(out) if b.kind == "status"] == [1, -3]
    row = scores(phone, "R1")[0]
    assert row["outcome"] == "skipped" and "evalAllowIrreversible" in row["reason"]


def test_irreversible_runs_when_allowed(tmp_path: Path) -> None:
    phone = fast_phone(tmp_path, pass_rate=1.0)
    bundle = push_bundle(phone, "R1", [task("irr", "irreversible")])
    run_to_text(phone, instrument_argv("R1", bundle, "-e", "evalAllowIrreversible", "true"))
    assert scores(phone, "R1")[0]["outcome"] == "confirmation"


def test_unmet_sign_in_is_an_assumption_failure(tmp_path: Path) -> None:
    phone = fast_phone(tmp_path)
    bundle = push_bundle(phone, "R1", [task("orders", requires=["signedIn:dev.agentfarm.shop"])])
    out = run_to_text(phone, instrument_argv("R1", bundle))
    assert [b.code for b in parse_status(out) if b.kind == "status"] == [1, -4]
    assert scores(phone, "R1")[0]["reason"] == "未登录"


def test_split_and_set_filters(tmp_path: Path) -> None:
    phone = fast_phone(tmp_path)
    bundle = push_bundle(phone, "R1", five_tasks())
    run_to_text(phone, instrument_argv("R1", bundle, "-e", "evalSplit", "holdout"))
    assert [r["id"] for r in scores(phone, "R1")] == ["sys-b"]
    run_to_text(phone, instrument_argv("R2", bundle, "-e", "evalSet", "skills"))
    assert [r["id"] for r in scores(phone, "R2")] == ["skill-x"]
    run_to_text(phone, instrument_argv("R3", bundle, "-e", "evalSet", "sys-"))
    assert [r["id"] for r in scores(phone, "R3")] == ["sys-a", "sys-b"]


def test_outcomes_are_deterministic_and_follow_pass_rate(tmp_path: Path) -> None:
    tasks = [task(f"t{i}") for i in range(20)]

    def outcomes(path: Path, rate: float) -> list[tuple[str, bool, int]]:
        phone = fast_phone(path, pass_rate=rate)
        run_to_text(phone, instrument_argv("R1", push_bundle(phone, "R1", tasks)))
        return [(r["outcome"], r["passed"], r["tokens"]["output"]) for r in scores(phone, "R1")]

    first, again = outcomes(tmp_path / "a", 0.5), outcomes(tmp_path / "b", 0.5)
    assert first == again
    assert 0 < sum(p for _, p, _ in first) < 20
    assert all(p for _, p, _ in outcomes(tmp_path / "c", 1.0))
    assert not any(p for _, p, _ in outcomes(tmp_path / "d", 0.0))


def test_cost_only_with_prices(tmp_path: Path) -> None:
    phone = fast_phone(tmp_path)
    bundle = push_bundle(phone, "R1", [task("a")])
    run_to_text(phone, instrument_argv("R1", bundle))
    assert scores(phone, "R1")[0]["costUsd"] is None
    run_to_text(phone, instrument_argv("R2", bundle, "-e", "evalPriceIn", "3", "-e", "evalPriceOut", "15",
                                       "-e", "evalPriceCached", "0.3"))
    row = scores(phone, "R2")[0]
    t = row["tokens"]
    expected = (t["input"] * 3 + t["cacheWrite"] * 3 + t["cacheRead"] * 0.3 + t["output"] * 15) / 1e6
    assert abs(row["costUsd"] - expected) < 1e-5


def test_eval_tree_files(tmp_path: Path) -> None:
    phone = fast_phone(tmp_path)
    run_to_text(phone, instrument_argv("R1", push_bundle(phone, "R1", five_tasks()[:3])))
    d = eval_dir(phone, "R1")
    summary = (d / "summary.md").read_text(encoding="utf-8")
    assert "## 运行小结" in summary and summary.rstrip().endswith("## 人工改判")
    assert set(json.loads((d / "metrics.json").read_text())) == {"sys-a", "sys-b", "w-note"}
    row = scores(phone, "R1")[0]
    steps = (d / "sys-a" / "run" / "steps.jsonl").read_text().splitlines()
    assert len(steps) == row["steps"] and json.loads(steps[0])["execution"] == "simulated"
    final = json.loads((d / "sys-a" / "run" / "final.json").read_text())
    assert final["execution"] == "simulated" and final["outcome"] == row["outcome"]


def test_crash_fault_ends_with_process_crashed(tmp_path: Path) -> None:
    phone = fast_phone(tmp_path, instrument_crash_after_tasks=2)
    out = run_to_text(phone, instrument_argv("R1", push_bundle(phone, "R1", [task(f"t{i}") for i in range(5)])))
    assert out.endswith("INSTRUMENTATION_RESULT: shortMsg=Process crashed.\nINSTRUMENTATION_CODE: 0\n")
    last_status = [b for b in parse_status(out) if b.kind == "status"][-1]
    assert last_status.code == -2 and "Process crashed while executing t2" in last_status.values["stream"]
    assert len(scores(phone, "R1")) == 2


def test_stop_fault_stalls_without_a_result(tmp_path: Path) -> None:
    phone = fast_phone(tmp_path, instrument_stop_after_tasks=1)
    argv = instrument_argv("R1", push_bundle(phone, "R1", [task(f"t{i}") for i in range(3)]))

    async def read_until_stall() -> tuple[str, bool]:
        out = bytearray()
        gen = run_instrument(phone, argv)
        try:
            while True:
                out += await asyncio.wait_for(gen.__anext__(), 2.0)
        except TimeoutError:
            return out.decode(), True
        except StopAsyncIteration:
            return out.decode(), False
        finally:
            await gen.aclose()

    out, stalled = asyncio.run(read_until_stall())
    assert stalled and "INSTRUMENTATION_CODE" not in out
    assert out.rstrip().endswith("INSTRUMENTATION_STATUS_CODE: 1")
    assert "test=t1" in out.splitlines()[-2]


def test_hostile_eval_tree(tmp_path: Path) -> None:
    phone = fast_phone(tmp_path, hostile_eval_tree=True)
    run_to_text(phone, instrument_argv("R1", push_bundle(phone, "R1", [task("a")])))
    d = eval_dir(phone, "R1")
    assert os.readlink(d / "etc-link") == "/etc"
    assert (d / "up-link").is_symlink() and (d / "dotdot-dir").is_symlink()
    assert (d / "..\\..\\outside.txt").is_file()
    huge = d / "huge.bin"
    assert huge.stat().st_size == 5 * 1024**3 and huge.stat().st_blocks * 512 < 1024**2


def test_unknown_instrumentation_fails_like_am(tmp_path: Path) -> None:
    phone = fast_phone(tmp_path)
    out = run_to_text(phone, instrument_argv("R1", None, component="com.example.test/androidx.test.runner.X"))
    assert "INSTRUMENTATION_STATUS: Error=Unable to find instrumentation info for: " in out
    assert "INSTRUMENTATION_FAILED: com.example.test/androidx.test.runner.X" in out


def test_unreadable_bundle_is_an_initialization_error(tmp_path: Path) -> None:
    phone = fast_phone(tmp_path)
    out = run_to_text(phone, instrument_argv("R1", "/data/local/tmp/missing.json"))
    statuses = [b for b in parse_status(out) if b.kind == "status"]
    assert statuses[-1].values["test"] == "initializationError" and statuses[-1].code == -2
    assert parse_status(out)[-1].code == -1


def test_am_instrument_through_adb_shell_and_pull(virtual_phone: SimPhone, tmp_path: Path) -> None:
    dev = adbutils.AdbClient(port=virtual_phone.adb_port).device(virtual_phone.serial)
    bundle = tmp_path / "bundle.json"
    bundle.write_text(json.dumps({"bundleVersion": 1, "run": "E2E", "tasks": [task("a"), task("b")]}))
    dev.sync.push(str(bundle), "/data/local/tmp/eval-tasks.json")
    argv = ["am", "instrument", *instrument_argv("E2E", "/data/local/tmp/eval-tasks.json")]
    conn = dev.shell(" ".join(argv), stream=True)
    with conn:
        conn.conn.settimeout(60)
        text = conn.read_until_close()
    bundles = parse_status(text)
    assert bundles[-1].code == -1 and [b.values["test"] for b in bundles if b.code == 1] == ["a", "b"]
    files = f"/sdcard/Android/data/{virtual_phone.profile.agent.package}/files/eval/E2E"
    local = tmp_path / "scores.jsonl"
    dev.sync.pull(f"{files}/scores.jsonl", str(local))
    rows = [json.loads(line) for line in local.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == ["a", "b"] and all(r["execution"] == "simulated" for r in rows)
    assert AGENT_COMPONENT.split("/")[0] == virtual_phone.profile.agent.test_package


def test_passed_write_task_leaves_marker_in_target_app(tmp_path: Path) -> None:
    phone = fast_phone(tmp_path, pass_rate=1.0)
    write = task("alarm-w", "write", marker="晨跑-{run}", apps=["com.android.deskclock"],
                 checks=[{"type": "screen_has", "marker": True, "packageName": "com.android.deskclock"}])
    run_to_text(phone, instrument_argv("R9", push_bundle(phone, "R9", [write])))
    phone.ui.launch("com.android.deskclock")
    assert "晨跑-R9" in [n.text for n in nodes(phone.ui)]
    assert scores(phone, "R9")[0]["appPackage"] == "com.android.deskclock"


def test_result_tail_matches_junit_text_format(tmp_path: Path) -> None:
    phone = fast_phone(tmp_path, pass_rate=1.0)
    out = run_to_text(phone, instrument_argv("R1", push_bundle(phone, "R1", [task("a"), task("i", "irreversible")])))
    tail = out[out.index("INSTRUMENTATION_RESULT: stream=\n\nTime: "):]
    assert tail.endswith("\n\nOK (1 test)\n\n\nINSTRUMENTATION_CODE: -1\n")


def test_without_raw_flag_only_streams_are_printed(tmp_path: Path) -> None:
    phone = fast_phone(tmp_path, pass_rate=1.0)
    argv = [a for a in instrument_argv("R1", push_bundle(phone, "R1", [task("a"), task("b")])) if a != "-r"]
    out = run_to_text(phone, argv)
    assert "INSTRUMENTATION_STATUS" not in out and "INSTRUMENTATION_CODE" not in out
    assert out.startswith(f"\n{EVAL_CLASS}:..") and out.endswith("OK (2 tests)\n\n\n")


def test_class_with_method_runs_one_task(tmp_path: Path) -> None:
    phone = fast_phone(tmp_path)
    argv = instrument_argv("R1", push_bundle(phone, "R1", [task("a"), task("b"), task("c")]))
    argv[argv.index(EVAL_CLASS)] = f"{EVAL_CLASS}#b"
    run_to_text(phone, argv)
    assert [r["id"] for r in scores(phone, "R1")] == ["b"]


def test_the_runner_logs_each_test_as_androidx_does(tmp_path: Path) -> None:
    phone = fast_phone(tmp_path, pass_rate=0.0)
    out = run_to_text(phone, instrument_argv("R9", push_bundle(phone, "R9", [task("sys-a"), task("sys-b")])))
    failed = [b.values["test"] for b in parse_status(out) if b.kind == "status" and b.code == -2]
    assert failed  # nothing passes at pass rate 0
    entries, _ = phone.logs.read(["main"])
    runner = [(e.priority, e.message) for e in entries if e.tag == "TestRunner"]
    expected = [(4, "run started: 2 tests")]
    for test in ("sys-a", "sys-b"):
        expected.append((4, f"started: {test}({EVAL_CLASS})"))
        if test in failed:
            expected.append((6, f"failed: {test}({EVAL_CLASS})"))
        expected.append((4, f"finished: {test}({EVAL_CLASS})"))
    expected.append((4, f"run finished: 2 tests, {len(failed)} failed, 0 ignored"))
    assert runner == expected
