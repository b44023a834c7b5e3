"""Resumes leave no litter: one row per unit and attempt for every reader, no "never ran" line written twice, every
option of the stopped sweep reused (tasks dir, config, selection), and a manifest status that agrees with the
journal (`finished` only when every unit is) and with the exit status.

Real adb servers on private loopback ports and virtual phones; the adb server that is lost is one of the test's own.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from farm import manifest as mf
from farm.errors import FarmError
from farm.exits import EXIT_HOST_LOST, EXIT_OK, EXIT_UNFINISHED
from farm.report.headline import latest_attempts, read_headline
from farm.results import duck
from farm.results.normalise import Context, error_record
from farm.results.record import Record
from farm.results.store import RunStore, current_records, read_records
from farm.sim.launcher import kill_adb_server, start_adb_server
from farm.sweep.journal import Journal, PlannedUnit, unit_id
from farm.sweep.resume_collect import reconcile
from farm.sweep.runner import Dispatcher
from farm.sweep.sweep import sweep
from tests.helpers.records import record, write_run
from tests.helpers.sweep import extra_adb_server, farm_yaml, phones_on, scripted_tasks, sweep_request

UNIT_COLUMNS = ", ".join(duck.UNIT)


@pytest.fixture(autouse=True)
def _one_code_version(monkeypatch: pytest.MonkeyPatch) -> None:
    """A sweep and its resumes see one code version, even in a checkout being edited meanwhile (the fingerprint
    hashes the uncommitted diff, and a resume refuses another code)."""
    fixed = mf.code_fingerprint()
    monkeypatch.setattr(mf, "code_fingerprint", lambda repo=None: fixed)


@contextmanager
def after_records(n: int, action: Callable[[Dispatcher], object], monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Call `action(dispatcher)` once, when the sweep has appended its `n`-th record (a fault at a known moment)."""
    orig = Dispatcher.__init__
    seen: list[Record] = []

    def patched(self: Dispatcher, *a: Any, **kw: Any) -> None:
        inner: Callable[[Record], None] = kw.get("on_record", lambda _r: None)

        def counted(rec: Record) -> None:
            inner(rec)
            seen.append(rec)
            if len(seen) == n:
                action(self)

        kw["on_record"] = counted
        orig(self, *a, **kw)

    with monkeypatch.context() as patch:
        patch.setattr(Dispatcher, "__init__", patched)
        yield


def _stop(dispatcher: Dispatcher) -> None:
    """What Ctrl-C does to a sweep: no new unit starts, the running ones finish."""
    dispatcher.stop.set()


def _query_rows_per_attempt(run_dir: Path) -> Counter[tuple[object, ...]]:
    """`farm query`'s `records` table: rows per unit and attempt."""
    con = duck.query_connection([run_dir])
    rows = con.execute(f"SELECT {UNIT_COLUMNS}, attempt, count(*) FROM records GROUP BY ALL").fetchall()
    return Counter({tuple(r[:-1]): int(r[-1]) for r in rows})


def _journal_units(run_dir: Path) -> dict[str, str]:
    journal = Journal.open(run_dir)
    try:
        return {u.unit_id: u.state for u in journal.units()}
    finally:
        journal.close()


def _farm(*args: str) -> int:
    """`farm args…` in this process (the code fingerprint stays pinned); its exit status (2 for a refusal)."""
    from farm.cli import command_tree

    try:
        code = command_tree().main(args=list(args), prog_name="farm", standalone_mode=False)
    except FarmError as exc:
        print(f"error: {exc.line()}")
        return exc.exit_code
    return code if isinstance(code, int) else 0


def test_a_lost_adb_server_then_a_resume_leaves_one_row_per_unit_and_attempt_for_every_reader(
    virtual_farm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from adbutils import AdbClient

    virtual_farm(1)
    tasks = scripted_tasks(tmp_path / "tasks")
    with extra_adb_server() as b, phones_on(b, 1) as (lost,):
        cfg = farm_yaml(tmp_path / "farm.yaml", b)
        req = sweep_request(tmp_path, tasks, config=cfg, run_id="lost", repeats=2, quarantine_after=1)
        with after_records(1, lambda _d: kill_adb_server(b), monkeypatch):
            first = sweep(req)
        # The lost phone's units are left unfinished, and its host was lost during the run: the sweep says so (the
        # most urgent status, 6), and its manifest leaves it interrupted.
        assert first.exit_code == EXIT_HOST_LOST and first.counts["unfinished"] > 0
        assert mf.load(first.run_dir).status == "interrupted"
        placeholders = [r for r in read_records(first.run_dir / "records.jsonl") if r.device == lost.serial
                        and r.outcome == "error"]
        assert placeholders and any(r.attempt == 1 for r in placeholders)
        # The server comes back with its phone; the resume runs what was left.
        start_adb_server(b)
        AdbClient(port=b).connect(lost.serial, timeout=20)
        again = sweep(sweep_request(tmp_path, tasks, config=cfg, run_id="lost", resume=True))
    assert again.exit_code == EXIT_OK, again.counts
    assert again.counts["unfinished"] == 0 and mf.load(again.run_dir).status == "finished"
    units = _journal_units(again.run_dir)
    assert set(units.values()) == {"done"}
    # A unit that never ran before the resume: its placeholder and its try share attempt 1, the try's line last.
    lines: dict[tuple[object, ...], list[Record]] = {}
    for rec in read_records(again.run_dir / "records.jsonl"):
        lines.setdefault(rec.attempt_key(), []).append(rec)
    superseded = {k: v for k, v in lines.items() if len(v) > 1}
    assert superseded and all(v[0].extra.get("placeholder") is True and v[-1].outcome != "error"
                              and len(v) == 2 for v in superseded.values())
    # `farm query`: one row per unit and attempt, the try's.
    per_attempt = _query_rows_per_attempt(again.run_dir)
    assert [k for k, n in per_attempt.items() if n > 1] == []
    con = duck.query_connection([again.run_dir])
    errors = con.execute(f"SELECT {UNIT_COLUMNS}, attempt FROM records WHERE outcome = 'error'").fetchall()
    assert not set(map(tuple, errors)) & set(superseded)
    # The Python readers: one record per attempt, one per unit, and that one the result (no error left).
    records = read_records(again.run_dir / "records.jsonl")
    assert len(current_records(records)) == len(per_attempt)
    latest = latest_attempts(records)
    assert len(latest) == len(units) and not [r for r in latest if r.outcome == "error"]
    # The report: every planned unit attempted once, none of them an error.
    head = read_headline(again.run_dir)
    assert head is not None
    assert (head.overall.planned, head.overall.attempted, head.overall.errors) == (len(units), len(units), 0)


def test_resumes_without_the_lost_phones_add_no_line_again_and_leave_the_run_interrupted(
    virtual_farm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    virtual_farm(1)
    tasks = scripted_tasks(tmp_path / "tasks")
    with extra_adb_server() as b, phones_on(b, 1):
        cfg = farm_yaml(tmp_path / "farm.yaml", b)
        req = sweep_request(tmp_path, tasks, config=cfg, run_id="gone", quarantine_after=1)
        with after_records(1, lambda _d: kill_adb_server(b), monkeypatch):
            first = sweep(req)
        assert first.exit_code == EXIT_HOST_LOST
        path = first.run_dir / "records.jsonl"
        written = path.read_bytes()
        for _ in range(2):
            again = sweep(sweep_request(tmp_path, tasks, config=cfg, run_id="gone", resume=True))
            # Nothing ran: nothing is written again, the run stays resumable and says why: its host is still lost.
            assert again.exit_code == EXIT_HOST_LOST, again.counts
            assert path.read_bytes() == written
            manifest = mf.load(again.run_dir)
            assert manifest.status == "interrupted" and manifest.finished_at is None
            assert again.counts["unfinished"] == first.counts["unfinished"]


def test_a_resume_without_paths_reuses_the_tasks_dir_and_config_of_the_stopped_sweep(
    virtual_farm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    virtual_farm(1)
    scripted_tasks(tmp_path / "tasks", ("read/system/calculator-multiply", "write/clock-alarm-7am",
                                        "read/system/settings-android-version"))
    # A config that is not the defaults: a resume reading another one is refused (config differ).
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "farm.yaml").write_text("idle_timeout_s: 300\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    start = ["sweep", "--run-id", "p1", "--executor", "host", "--policy", "scripted", "--repeats", "2",
             "--tasks-dir", "tasks", "--config", "conf/farm.yaml", "--runs-dir", "runs", "--quiet"]
    with after_records(1, _stop, monkeypatch):
        assert _farm(*start) == EXIT_UNFINISHED
    assert mf.load(tmp_path / "runs" / "p1").status == "interrupted"
    # Elsewhere, with neither ./tasks nor ./farm.yaml: only the run is named (and where runs are).
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    capsys.readouterr()
    code = _farm("sweep", "--resume", "p1", "--runs-dir", str(tmp_path / "runs"), "--quiet")
    assert code == EXIT_OK, capsys.readouterr()
    run_dir = tmp_path / "runs" / "p1"
    assert set(_journal_units(run_dir).values()) == {"done"} and len(_journal_units(run_dir)) == 6
    assert mf.load(run_dir).status == "finished"


def test_a_sweep_started_with_every_selection_option_resumes_with_them(
    virtual_farm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    virtual_farm(1)
    scripted_tasks(tmp_path / "tasks")
    runs = tmp_path / "runs"
    runs.mkdir()
    # The run whose failures --only-failed-from takes: every scripted task but the Android-version one failed.
    failed = ["calculator-multiply", "clock-alarm-7am", "shop-search-headphones", "settings-upgrade-android-99"]
    write_run(runs, "old", [record(t, run="old", passed=False) for t in failed]
              + [record("settings-android-version", run="old")])
    monkeypatch.chdir(tmp_path)
    start = ["sweep", "--run-id", "every", "--executor", "host", "--policy", "scripted", "--split", "all",
             "--set", "read", "--set", "write", "--set", "impossible", "-k", "not headphones",
             "--exclude", "*upgrade*", "--only-failed-from", "old", "--repeats", "2", "--spread", "shard",
             "--label", "nightly", "--max-tries", "2", "--quarantine-after", "2",
             "--tasks-dir", "tasks", "--runs-dir", "runs", "--quiet"]
    with after_records(1, _stop, monkeypatch):
        assert _farm(*start) == EXIT_UNFINISHED
    run_dir = runs / "every"
    chosen = {"calculator-multiply", "clock-alarm-7am"}
    assert {u.split("@")[0] for u in _journal_units(run_dir)} == chosen
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    capsys.readouterr()
    code = _farm("sweep", "--resume", "every", "--runs-dir", str(runs), "--quiet")
    assert code == EXIT_OK, capsys.readouterr()
    units = _journal_units(run_dir)
    assert set(units.values()) == {"done"}
    assert sorted(units) == sorted(unit_id(t, "", r) for t in chosen for r in (1, 2))
    finals = Counter(str(r.extra["unit"]) for r in read_records(run_dir / "records.jsonl"))
    assert finals == Counter(dict.fromkeys(units, 1))
    manifest = mf.load(run_dir)
    assert manifest.status == "finished" and manifest.label == "nightly"


def _placeholder(run: str, unit: str, task: str, attempt: int) -> Record:
    ctx = Context(run=run, device="SER1", split="all", executor="host", execution="simulated", attempt=attempt)
    return error_record(ctx, task, "never ran: phone quarantined", source="harness").model_copy(
        update={"extra": {"unit": unit, "placeholder": True}})


def test_reconcile_takes_only_a_record_of_the_try_in_flight_never_an_earlier_placeholder(tmp_path: Path) -> None:
    run_dir = tmp_path / "r"
    run_dir.mkdir()
    units = [PlannedUnit(unit_id(t, "SER1", 1), t, "SER1", 1, 0.0) for t in ("a", "b", "c")]
    journal = Journal.create(run_dir, {}, units)
    store = RunStore(run_dir)
    journal.add_phone("SER1", "", None)
    a, b, c = (journal.lease("SER1", {"a", "b", "c"}, others_active=False) for _ in range(3))
    assert a is not None and b is not None and c is not None
    assert [(x.task_id, x.attempt) for x in (a, b, c)] == [("a", 1), ("b", 1), ("c", 1)]
    # `a`: a placeholder an earlier night wrote for the attempt now in flight (the try was cut short, left nothing).
    store.append([_placeholder("r", a.unit_id, "a", 1)])
    # `b`: its try's record was written just before the crash: that one is its end.
    store.append([record("b", run="r", device="SER1", attempt=1, extra={"unit": b.unit_id})])
    # `c`: its first try failed (its record an error of an earlier night); its second is in flight.
    journal.fail_try(c, "adb gone", max_tries=3, quarantine_after=9)
    store.append([record("c", run="r", device="SER1", outcome="error", passed=False, attempt=1,
                         extra={"unit": c.unit_id})])
    c2 = journal.lease("SER1", {"c"}, others_active=False)
    assert c2 is not None and c2.attempt == 2
    assert reconcile(journal, run_dir) == 1
    states = {u.task_id: u.state for u in journal.units()}
    assert states == {"a": "leased", "b": "done", "c": "leased"}
    journal.close()


def test_the_run_status_is_finished_only_when_every_unit_is(tmp_path: Path) -> None:
    from farm.sweep.journal import run_status

    run_dir = tmp_path / "s"
    run_dir.mkdir()
    journal = Journal.create(run_dir, {}, [PlannedUnit(unit_id("a", "", r), "a", "", r, 0.0) for r in (1, 2)])
    journal.add_phone("P", "", None)
    assert run_status(journal, max_tries=2) == ("interrupted", 2)
    first = journal.lease("P", {"a"})
    assert first is not None
    journal.finish(first, outcome="succeeded", passed=True)
    assert run_status(journal, max_tries=2) == ("interrupted", 1)
    second = journal.lease("P", {"a"})
    assert second is not None
    journal.fail_try(second, "adb gone", max_tries=1, quarantine_after=9)
    # Its only try used up by an infrastructure error: an error after every try (exit 5), not a unit left short.
    assert run_status(journal, max_tries=1) == ("finished", 0)
    # With a try left it is short: the run is not finished.
    assert run_status(journal, max_tries=2) == ("interrupted", 1)
    journal.close()


def test_farm_query_sees_one_row_per_attempt_the_later_line_of_an_attempt_written_twice(tmp_path: Path) -> None:
    unit = {"unit": "t1@SER1#1"}
    placeholder = record("t1", run="q", outcome="error", passed=False, extra={**unit, "placeholder": True})
    ran = record("t1", run="q", passed=True, extra=unit)
    again = record("t1", run="q", passed=False, attempt=2, extra=unit)
    other = record("t2", run="q", passed=True)
    run_dir = write_run(tmp_path, "q", [placeholder, other, ran, again])
    con = duck.query_connection([run_dir])
    rows = con.execute("SELECT task_id, attempt, outcome FROM records ORDER BY task_id, attempt").fetchall()
    assert rows == [("t1", 1, "succeeded"), ("t1", 2, "failed"), ("t2", 1, "succeeded")]
