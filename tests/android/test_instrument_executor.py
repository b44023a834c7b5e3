"""The instrument executor against a scripted `am instrument` stream (no phone): one-line errors, counted ends."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import farm.android.instrument_executor as ie
from farm.android.executor import PhoneJob, ResolvedTask, TestStatus
from farm.android.options import AgentOptions, RunOptions
from farm.android.pull import PullResult
from farm.config import FarmConfig, PullLimits
from tests.helpers.host import make_task

CLS = "dev.agentfarm.simagent.eval.EvalRunTest"


def _status(test: str, code: int, numtests: int = 2, current: int = 1) -> str:
    keys = {"class": CLS, "current": str(current), "id": "AndroidJUnitRunner", "numtests": str(numtests),
            "stream": "", "test": test}
    return "".join(f"INSTRUMENTATION_STATUS: {k}={v}\n" for k, v in keys.items()) + \
        f"INSTRUMENTATION_STATUS_CODE: {code}\n"


class _Socket:
    """The stream's socket: hands out the scripted output in small pieces, then EOF."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def settimeout(self, _seconds: float) -> None:
        pass

    def recv(self, size: int) -> bytes:
        piece, self.data = self.data[:min(size, 97)], self.data[min(size, 97):]
        return piece


@dataclass
class _Stream:
    conn: _Socket

    def close(self) -> None:
        pass


@dataclass
class _Sync:
    pushed: list[str] = field(default_factory=list)

    def push(self, _data: bytes, path: str) -> None:
        self.pushed.append(path)


class _Device:
    """Just enough of an adbutils device: `mkdir`, the bundle push, and the instrumentation's output stream."""

    def __init__(self, output: str) -> None:
        self.output = output.encode("utf-8")
        self.sync = _Sync()

    def shell(self, cmd: str, stream: bool = False, timeout: float | None = None) -> Any:  # noqa: ANN401
        if stream:
            return _Stream(_Socket(self.output))
        return ""


class _Progress:
    def __init__(self) -> None:
        self.started: list[str] = []
        self.finished: list[tuple[str, TestStatus]] = []
        self.notes: list[str] = []

    def task_started(self, task_id: str) -> None:
        self.started.append(task_id)

    def task_finished(self, task_id: str, status: TestStatus) -> None:
        self.finished.append((task_id, status))

    def note(self, text: str) -> None:
        self.notes.append(text)


def _job(tmp_path: Path, output: str, ids: list[str]) -> PhoneJob:
    tasks = [ResolvedTask(task=make_task(id=i), directory="read", sha256="0" * 64) for i in ids]
    return PhoneJob(
        device=_Device(output), serial="S1", label="phone", run_id="r1", tasks=tasks,  # type: ignore[arg-type]
        options=RunOptions.resolve(AgentOptions(), FarmConfig()), raw_dir=tmp_path / "raw",
        device_eval_dir="/sdcard/eval/r1", device_bundle_path="/sdcard/eval-tasks/r1.json",
    )


@pytest.fixture(autouse=True)
def _no_pull(monkeypatch: pytest.MonkeyPatch) -> None:
    # Nothing to pull from a scripted stream: the tree is "not found", so no look is taken either.
    monkeypatch.setattr(ie, "pull_tree_retrying", lambda *a, **k: PullResult())


def test_a_multi_line_failure_gives_a_one_line_infrastructure_error(tmp_path: Path,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    stack = "\n".join(f"\tat dev.C.frame{i}(C.java:{i})" for i in range(3000))  # tens of KiB, as a real runner's
    output = (_status("a", 1) + "INSTRUMENTATION_RESULT: stream=\nFatal exception when running tests\n"
              f"java.lang.RuntimeException: boom\n{stack}\nINSTRUMENTATION_CODE: -1\n")
    outcome = ie.InstrumentExecutor(PullLimits()).run(_job(tmp_path, output, ["a", "b"]), _Progress())
    error = outcome.infrastructure_error
    assert error is not None and "\n" not in error and len(error) <= 400
    assert error.startswith("instrumentation: Instrumentation reported numtests=2 but only ran 0. Fatal exception")
    assert error.endswith(f"(whole text: {ie.FAILURE_FILE})")
    # The parser's whole text (which it caps at 64 KiB) is kept: in the job's tree and in the log.
    kept = (tmp_path / "raw" / ie.FAILURE_FILE).read_text(encoding="utf-8")
    assert "java.lang.RuntimeException: boom" in kept and "frame2000" in kept and len(kept) > 60_000
    assert any("frame2000" in r.getMessage() for r in caplog.records)
    assert outcome.unfinished == ["a", "b"]


def test_a_short_failure_is_kept_whole() -> None:
    assert ie.one_line("Process crashed.") == ("Process crashed.", False)
    short, cut = ie.one_line("\n  first line  \nsecond")
    assert (short, cut) == ("first line", True)
    short, cut = ie.one_line("x" * 1000)
    assert cut and len(short) == ie.REASON_CHARS and short.endswith("…")


def test_task_finished_once_per_task_when_the_runner_reports_a_test_twice(tmp_path: Path) -> None:
    # The runner re-ran `a` (a retry rule): it starts and ends twice in one call, as a new execution (the
    # parser reports both ends); then `b` runs once.
    output = (_status("a", 1, 3) + _status("a", -2, 3) + _status("a", 1, 3, 2) + _status("a", 0, 3, 2)
              + _status("b", 1, 3, 3) + _status("b", 0, 3, 3)
              + "INSTRUMENTATION_RESULT: stream=\nOK (2 tests)\nINSTRUMENTATION_CODE: -1\n")
    progress = _Progress()
    outcome = ie.InstrumentExecutor(PullLimits()).run(_job(tmp_path, output, ["a", "b"]), progress)
    assert [tid for tid, _status_ in progress.finished] == ["a", "b"]
    assert progress.finished[0] == ("a", "failed")  # the first end is the one counted live
    assert sorted(outcome.finished) == ["a", "b"]
