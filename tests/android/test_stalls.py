"""A stalled link ends the try in seconds: a phone whose link stays up but carries nothing
(`FaultSpec.stall_after_bytes`: the virtual phone stops sending after that many bytes) costs a pull or a status stream
`stall_s`, not minutes, and the try is an infrastructure error (tried again); a run that is stopping gives up a silent
phone within STOP_GRACE_S. An app that is merely silent on a live link is left to its own watchdog (`idle_timeout_s`).

Every phone here is virtual, on the session's private adb server (tests/helpers/phones.py). Durations are asserted
loosely: before this, a stalled pull waited 60 s per attempt, five attempts, and a stalled stream until the watchdog.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from pathlib import Path
from typing import cast

import adbutils
import pytest
from pydantic import ValidationError

from farm.android.executor import ExecutorOutcome, PhoneJob, ResolvedTask, TestStatus
from farm.android.instrument_executor import InstrumentExecutor
from farm.android.options import AgentOptions, RunOptions
from farm.android.phone_records import phone_records
from farm.android.prepare import Prepared
from farm.android.pull import pull_tree_retrying
from farm.android.pull_run import pull_run
from farm.android.sync_stream import STOP_GRACE_S
from farm.config import FarmConfig, PullLimits
from farm.results.normalise import Context
from farm.results.store import read_records
from farm.sim.launcher import SimPhone
from farm.sim.profile import FaultSpec, default_profile
from tests.helpers.host import make_task
from tests.helpers.phones import FarmFactory
from tests.helpers.records import score_line, scores_text

REMOTE = "/sdcard/eval/r1"
STALLED = "link stalled: no answer from the phone for 2 s"


def _device(phone: SimPhone) -> adbutils.AdbDevice:
    return adbutils.AdbClient(port=phone.adb_port).device(phone.serial)


def _tree_past_the_stall(phone: SimPhone, files: int = 6, size: int = 20_000) -> Path:
    """`files` files of `size` random bytes under REMOTE: more than the 30 kB the phone sends before it stalls."""
    tree = phone.root / "sdcard" / "eval" / "r1"
    tree.mkdir(parents=True)
    for n in range(files):
        (tree / f"f{n}.bin").write_bytes(os.urandom(size))
    return tree


def _arrived_whole(tree: Path, dest: Path) -> int:
    """How many files arrived; each one that did is byte-exact, and no temp file is left."""
    got = [p for p in dest.rglob("*") if p.is_file()]
    assert not [p for p in got if p.name.startswith(".pull.")]
    for path in got:
        assert path.read_bytes() == (tree / path.name).read_bytes()
    return len(got)


# -- settings ----------------------------------------------------------------------------------------------------


def test_stall_s_is_a_farm_yaml_key_carried_in_the_run_options() -> None:
    assert FarmConfig().stall_s == 20 and RunOptions.resolve(AgentOptions(), FarmConfig()).stall_s == 20
    assert RunOptions.resolve(AgentOptions(), FarmConfig.model_validate({"stall_s": 2.5})).stall_s == 2.5
    for bad in (0, -1, 601, float("inf"), float("nan"), "soon"):
        with pytest.raises(ValidationError, match="stall_s"):
            FarmConfig.model_validate({"stall_s": bad})


# -- pull --------------------------------------------------------------------------------------------------------


def test_a_pull_over_a_stalled_link_ends_after_the_window_and_is_not_pulled_again(
    virtual_farm: FarmFactory, tmp_path: Path
) -> None:
    phone = virtual_farm(1, faults=FaultSpec(stall_after_bytes=30_000))[0]
    tree = _tree_past_the_stall(phone)
    dest = tmp_path / "raw"
    started = time.monotonic()
    result = pull_tree_retrying(_device(phone), REMOTE, dest, PullLimits(), stall_s=2)
    took = time.monotonic() - started
    # One window (2 s), no retries: each would wait the window again (before: 60 s a read, five pulls, ~320 s).
    assert took < 10, took
    assert result.refused == [f"{REMOTE}: link stalled (no answer from the phone for 2 s)"]
    assert result.stalled == "no answer from the phone for 2 s"
    assert result.files == _arrived_whole(tree, dest) < 6


def test_a_stop_gives_up_a_stalled_pull_within_the_grace(virtual_farm: FarmFactory, tmp_path: Path) -> None:
    phone = virtual_farm(1, faults=FaultSpec(stall_after_bytes=30_000))[0]
    tree = _tree_past_the_stall(phone)
    stop = threading.Event()
    threading.Timer(1.0, stop.set).start()
    started = time.monotonic()
    result = pull_tree_retrying(_device(phone), REMOTE, tmp_path / "raw", PullLimits(), stall_s=60, stop=stop)
    took = time.monotonic() - started
    assert took < 1.0 + STOP_GRACE_S + 3, took  # not the 60 s window: the stop shortened it
    assert result.refused == [f"{REMOTE}: link stalled (no answer from the phone for {STOP_GRACE_S:g} s)"]
    assert result.files == _arrived_whole(tree, tmp_path / "raw")


def test_farm_pull_over_a_stalled_link_ends_with_the_stall_listed(virtual_farm: FarmFactory, tmp_path: Path) -> None:
    phone = virtual_farm(1, faults=FaultSpec(stall_after_bytes=30_000))[0]
    cfg = FarmConfig(stall_s=2, tasks_dir=str(tmp_path / "no-tasks"))
    tree = phone.state.host_path(cfg.profile(None)[1].eval_dir("r1"))
    tree.mkdir(parents=True)
    (tree / "scores.jsonl").write_text(scores_text(score_line("t1")))
    for n in range(6):
        (tree / f"shot{n}.png").write_bytes(os.urandom(20_000))
    started = time.monotonic()
    summary = pull_run(cfg, serial=phone.serial, run="r1", split="all", runs_dir=tmp_path / "runs", profile=None)
    assert time.monotonic() - started < 15
    remote = cfg.profile(None)[1].eval_dir("r1")
    assert f"{remote}: link stalled (no answer from the phone for 2 s)" in summary.refused
    # Nothing more is asked of a phone that stopped answering (the bundle, the local task set's probes).
    assert summary.tasks_from == "no task definitions (the link stalled: no answer from the phone for 2 s)"


# -- the status stream ---------------------------------------------------------------------------------------------


class _Progress:
    def __init__(self) -> None:
        self.finished: list[tuple[str, TestStatus]] = []
        self.notes: list[str] = []

    def task_started(self, task_id: str) -> None:
        pass

    def task_finished(self, task_id: str, status: TestStatus) -> None:
        self.finished.append((task_id, status))

    def note(self, text: str) -> None:
        self.notes.append(text)


def _slow_phone(virtual_farm: FarmFactory, faults: FaultSpec) -> SimPhone:
    """A phone whose simulated tasks take about a second each, so a fault lands mid-run."""
    profile = default_profile()
    profile.agent.task_seconds = 1000.0  # at the default time_scale of 1000: one real second
    return virtual_farm(1, profile=profile, faults=faults)[0]


def _job(phone: SimPhone, tmp_path: Path, *, stall_s: float, idle_s: float = 60,
         stop: threading.Event | None = None) -> PhoneJob:
    opts = RunOptions.resolve(AgentOptions(split="all"), FarmConfig(stall_s=stall_s), "sim", idle_timeout_s=idle_s)
    tasks = [ResolvedTask(task=make_task(id=f"t{i}"), directory="read/system", sha256="0" * 64) for i in range(4)]
    return PhoneJob(device=_device(phone), serial=phone.serial, label="phone", run_id="r1", tasks=tasks,
                    options=opts, raw_dir=tmp_path / "raw", device_eval_dir=opts.profile.eval_dir("r1"),
                    device_bundle_path=f"{opts.profile.resolved_files_dir()}/eval-tasks/r1.json", stop=stop)


def _infra_records(job: PhoneJob, outcome: ExecutorOutcome, tmp_path: Path) -> dict[str, str]:
    """Task id → why, for the records the try leaves as errors (the sweep's `infra`: tried again)."""
    ctx = Context(run="r1", device=job.serial, split="all", executor="instrument", execution="simulated")
    records, _problems = phone_records(ctx, Prepared(tasks=job.tasks), outcome, job.raw_dir, "simulated", tmp_path)
    return {r.task_id: r.reasons[0] for r in records if r.outcome == "error"}


def test_a_status_stream_whose_link_stalls_ends_the_try_as_an_infrastructure_error(
    virtual_farm: FarmFactory, tmp_path: Path
) -> None:
    # About 1 kB in: the first task has ended, the second is running (the whole run sends ~2.4 kB).
    phone = _slow_phone(virtual_farm, FaultSpec(stall_after_bytes=1000))
    job = _job(phone, tmp_path, stall_s=2)
    progress = _Progress()
    started = time.monotonic()
    outcome = InstrumentExecutor(PullLimits()).run(job, progress)
    took = time.monotonic() - started
    # ~1 s of tasks, the 2 s window, and a 2 s pull that finds the link still stalled; before: the 60 s watchdog.
    assert took < 15, took
    assert outcome.infrastructure_error == STALLED
    assert progress.notes[0] == STALLED
    assert outcome.finished == ["t0"] and outcome.unfinished == ["t1", "t2", "t3"]
    assert not outcome.pulled and outcome.pull_refused == [
        f"{job.device_eval_dir}: link stalled (no answer from the phone for 2 s)"]
    infra = _infra_records(job, outcome, tmp_path)
    assert infra["t1"] == f"unfinished: {STALLED}"
    assert infra["t0"].endswith(f"no scores.jsonl line was pulled; pull failed ({STALLED})")


def test_a_silent_app_on_a_live_link_is_left_to_its_watchdog(virtual_farm: FarmFactory, tmp_path: Path) -> None:
    # The app says nothing after its first task (a long model call, say); the phone answers every liveness check.
    phone = _slow_phone(virtual_farm, FaultSpec(instrument_stop_after_tasks=1))
    job = _job(phone, tmp_path, stall_s=1, idle_s=5)
    started = time.monotonic()
    outcome = InstrumentExecutor(PullLimits()).run(job, _Progress())
    took = time.monotonic() - started
    assert outcome.infrastructure_error == "no output for 5 s (watchdog)"
    assert took > 5  # the 1 s stall window never ended it
    assert outcome.finished == ["t0"] and outcome.pulled


def test_a_stop_ends_a_try_on_a_stalled_link_within_seconds(virtual_farm: FarmFactory, tmp_path: Path) -> None:
    phone = _slow_phone(virtual_farm, FaultSpec(stall_after_bytes=1000))
    stop = threading.Event()
    job = _job(phone, tmp_path, stall_s=60, stop=stop)  # a window far longer than the test
    threading.Timer(3.0, stop.set).start()  # the link stalled at ~1 s; SIGTERM comes at 3 s
    started = time.monotonic()
    outcome = InstrumentExecutor(PullLimits()).run(job, _Progress())
    took = time.monotonic() - started
    # The stream notices within a poll; the force-stop and the pull each wait at most STOP_GRACE_S.
    assert took < 3.0 + 2 * STOP_GRACE_S + 3, took
    assert outcome.infrastructure_error == "stopped by the user"
    assert outcome.pull_refused == [
        f"{job.device_eval_dir}: link stalled (no answer from the phone for {STOP_GRACE_S:g} s)"]
    assert "t1" in outcome.unfinished


# -- the sweep: the try is an infrastructure error, tried again elsewhere -----------------------------------------


def test_a_unit_whose_pull_stalls_is_an_infrastructure_error_and_tried_again(
    virtual_farm: FarmFactory, tmp_path: Path
) -> None:
    from farm.android.devices import local_port
    from farm.sim.launcher import SimFarm
    from farm.sweep.sweep import sweep
    from tests.helpers.sweep import extra_adb_server, scripted_tasks, sweep_request

    steady = virtual_farm(1)[0]
    with extra_adb_server() as port:
        # On a second farm host. The health gate and preparation take a few kB; the first try's tree (~90 kB) stalls
        # mid-pull at 30 kB, as the phone did. Its later tries stall at the bundle push.
        other = SimFarm(port)
        try:
            stalling = other.add(1, faults=FaultSpec(stall_after_bytes=30_000))[0]
            config = tmp_path / "farm.yaml"
            config.write_text(f"stall_s: 2\nadb_servers:\n  - {{host: 127.0.0.1, port: {local_port()}}}\n"
                              f"  - {{host: 127.0.0.1, port: {port}}}\n", encoding="utf-8")
            tasks = scripted_tasks(tmp_path / "tasks")
            started = time.monotonic()
            result = sweep(sweep_request(tmp_path, tasks, executor="instrument", host=None, spread="shard",
                                         run_id="s1", idle_timeout_s=60, config=config,
                                         agent=AgentOptions(split="all", allow_irreversible=True)))
            took = time.monotonic() - started
        finally:
            other.stop()
    records = [r for r in read_records(result.run_dir / "records.jsonl") if r.outcome != "skipped"]
    assert Counter(str(r.extra["unit"]) for r in records) == Counter({str(r.extra["unit"]): 1 for r in records})
    tries = [t for r in records for t in cast(list[dict[str, str]], r.extra.get("tries", []))]
    stalled = [t for t in tries if "link stalled" in t["reason"]]
    # Each try on the stalling phone ended in seconds as an infrastructure error, and its unit was queued again.
    if not stalled:
        # The stall came after the try's scores were pulled (the order of a tree's files is the phone's): the unit
        # keeps its result and the stalled rest of the tree is listed as refused.
        assert any("link stalled (no answer from the phone for 2 s)" in n for n in result.notes), result.notes
    else:
        assert all(t["kind"] == "infra" for t in stalled), tries
        assert [r for r in records if r.attempt > 1]
    # A unit is left unfinished only when its tries ran out on the stalling phone (the other's worker had ended).
    for rec in (r for r in records if r.outcome == "error"):
        assert "link stalled" in rec.reasons[0], rec.reasons
    assert result.counts["done"] >= len(records) - 1
    assert {r.device for r in records} <= {steady.serial, stalling.serial}
    # Before, the first stalled try alone held the phone ~320 s.
    assert took < 60, took
