"""`am instrument -w -r …` of the simulated agent app: the real status protocol, streamed as it runs.

Each selected task is one test (`class=<eval class>`, `test=<task id>`); the output format follows
AOSP `Instrument.java` (bundle keys sorted, raw `-r` text) and the androidx runner's streams, as in
the captures under `data/instrument/`.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TYPE_CHECKING, Any

from farm.sim import system_log
from farm.sim.apps.simagent import Attempt, EvalOptions, EvalTree, attempt, select

if TYPE_CHECKING:
    from farm.sim.phone import PhoneState

RUNNER_ID = "AndroidJUnitRunner"
_STACK_TAIL = (
    "\tat org.junit.Assert.fail(Assert.java:89)\n"
    "\tat {cls}.{test}(EvalRunTest.kt:{line})\n"
    "\tat java.lang.reflect.Method.invoke(Native Method)\n"
    "\tat org.junit.runners.model.FrameworkMethod$1.runReflectiveCall(FrameworkMethod.java:59)\n"
    "\tat org.junit.runners.ParentRunner.run(ParentRunner.java:413)\n"
    "\tat androidx.test.internal.runner.TestExecutor.execute(TestExecutor.java:67)\n"
    "\tat androidx.test.runner.AndroidJUnitRunner.onStart(AndroidJUnitRunner.java:446)\n"
    "\tat android.app.Instrumentation$InstrumentationThread.run(Instrumentation.java:2361)\n"
)


def parse_argv(argv: list[str]) -> tuple[dict[str, str], str | None, set[str]]:
    """(`-e` extras, component, flags) of an `am instrument` command line (with or without `am instrument`)."""
    args = list(argv)
    if args[:2] == ["am", "instrument"]:
        args = args[2:]
    elif args[:1] == ["instrument"]:
        args = args[1:]
    extras: dict[str, str] = {}
    flags: set[str] = set()
    component: str | None = None
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-e", "--es", "--ez", "--ei") and i + 2 < len(args):
            extras[args[i + 1]] = args[i + 2]
            i += 3
            continue
        if a in ("-p", "--user", "--abi", "-f"):
            i += 2
            continue
        if a.startswith("-"):
            flags.add(a)
        else:
            component = a
        i += 1
    return extras, component, flags


def _bundle(pairs: dict[str, str], code: int) -> bytes:
    lines = [f"INSTRUMENTATION_STATUS: {k}={pairs[k]}" for k in sorted(pairs)]
    lines.append(f"INSTRUMENTATION_STATUS_CODE: {code}")
    return ("\n".join(lines) + "\n").encode("utf-8")


class _Reporter:
    """Instrument.java's TextStatusReporter: `-r` prints every bundle; otherwise only `stream` values."""

    def __init__(self, raw: bool) -> None:
        self.raw = raw

    def status(self, pairs: dict[str, str], code: int) -> bytes:
        if not self.raw and "stream" in pairs:
            return pairs["stream"].encode("utf-8")
        return _bundle(pairs, code)

    def result(self, pairs: dict[str, str], code: int) -> bytes:
        if not self.raw and "stream" in pairs:
            return (pairs["stream"] + "\n").encode("utf-8")
        lines = [f"INSTRUMENTATION_RESULT: {k}={pairs[k]}" for k in sorted(pairs)]
        lines.append(f"INSTRUMENTATION_CODE: {code}")
        return ("\n".join(lines) + "\n").encode("utf-8")


def _failed_to_start(component: str) -> bytes:
    return (
        "INSTRUMENTATION_STATUS: id=ActivityManagerService\n"
        f"INSTRUMENTATION_STATUS: Error=Unable to find instrumentation info for: ComponentInfo{{{component}}}\n"
        "INSTRUMENTATION_STATUS_CODE: -1\n"
        f"android.util.AndroidException: INSTRUMENTATION_FAILED: {component}\n"
        "\tat com.android.commands.am.Instrument.run(Instrument.java:519)\n"
        "\tat com.android.commands.am.Am.runInstrument(Am.java:196)\n"
        "\tat com.android.commands.am.Am.onRun(Am.java:128)\n"
        "\tat com.android.internal.os.BaseCommand.run(BaseCommand.java:60)\n"
        "\tat com.android.commands.am.Am.main(Am.java:91)\n"
        "\tat com.android.internal.os.RuntimeInit.nativeFinishInit(Native Method)\n"
        "\tat com.android.internal.os.RuntimeInit.main(RuntimeInit.java:355)\n"
    ).encode()


def _options(extras: dict[str, str]) -> EvalOptions:
    def num(key: str) -> float | None:
        try:
            return float(extras[key]) if key in extras else None
        except ValueError:
            return None

    return EvalOptions(
        run=extras.get("evalRun", ""), split=extras.get("evalSplit"), eval_set=extras.get("evalSet"),
        tasks_path=extras.get("evalTasks"), price_in=num("evalPriceIn"), price_out=num("evalPriceOut"),
        price_cached=num("evalPriceCached"),
        allow_irreversible=extras.get("evalAllowIrreversible", "").lower() == "true",
        channel=extras.get("evalChannel"), on_takeover=extras.get("evalOnTakeover", "cancel"),
        flags=extras.get("evalFlags"), learn_skills=extras.get("learnSkills") == "on",
        memory=extras.get("memory") == "on", extras=extras,
    )


def _load_tasks(phone: PhoneState, path: str) -> list[dict[str, Any]]:
    data = json.loads(phone.read_text(path))
    tasks = data.get("tasks") if isinstance(data, dict) else None
    if not isinstance(tasks, list):
        raise ValueError("bundle has no tasks list")
    return [t for t in tasks if isinstance(t, dict)]


def _format_time(seconds: float) -> str:
    text = f"{seconds:.3f}".rstrip("0").rstrip(".")
    return text or "0"


async def run_instrument(phone: PhoneState, argv: list[str]) -> AsyncGenerator[bytes, None]:
    """Yield the output of `am instrument -w -r …` as the simulated eval run produces it."""
    extras, component, flags = parse_argv(argv)
    rep = _Reporter(raw="-r" in flags)
    agent = phone.profile.agent
    expected = f"{agent.test_package}/{agent.runner}"
    if component is None or component != expected or phone.profile.package(agent.test_package) is None:
        yield _failed_to_start(component or "")
        return
    cls, _, only = extras.get("class", agent.eval_class).partition("#")
    opts = _options(extras)
    began = time.monotonic()
    setup_error: str | None = None
    tasks: list[dict[str, Any]] = []
    if not opts.run:
        setup_error = "java.lang.IllegalArgumentException: evalRun is required"
    elif cls != agent.eval_class:
        setup_error = f"java.lang.ClassNotFoundException: {cls}"
    elif opts.tasks_path:
        try:
            tasks = select(_load_tasks(phone, opts.tasks_path), opts)
            if only:  # `-e class Cls#taskId` runs that one task, like a single test method
                tasks = [t for t in tasks if str(t.get("id")) == only]
        except (OSError, ValueError) as exc:
            setup_error = f"java.io.FileNotFoundException: {opts.tasks_path}: {exc.__class__.__name__}"
    if setup_error is not None:
        async for chunk in _setup_failure(rep, cls, setup_error, began):
            yield chunk
        return

    tree = EvalTree(phone, opts)
    faults = phone.profile.faults
    if faults.hostile_eval_tree:
        tree.make_hostile()
    numtests = len(tasks)
    failures: list[tuple[str, str]] = []
    ignored = 0
    system_log.test_runner(phone, agent.test_package, f"run started: {numtests} tests")
    for i, task in enumerate(tasks):
        tid = str(task.get("id", f"task{i}"))
        base = {"class": cls, "current": str(i + 1), "id": RUNNER_ID, "numtests": str(numtests), "test": tid}
        system_log.test_runner(phone, agent.test_package, f"started: {tid}({cls})")
        yield rep.status({**base, "stream": f"\n{cls}:" if i == 0 else ""}, 1)
        if faults.instrument_stop_after_tasks is not None and i >= faults.instrument_stop_after_tasks:
            await asyncio.Event().wait()  # the device went away: no more output, ever
        if faults.instrument_crash_after_tasks is not None and i >= faults.instrument_crash_after_tasks:
            died = "java.lang.IllegalStateException: agent service died"
            stack = died + "\n" + _STACK_TAIL.format(cls=cls, test=tid, line=120 + i)
            yield rep.status({**base, "stack": stack,
                              "stream": f"\nProcess crashed while executing {tid}({cls}):\n{stack}"}, -2)
            yield rep.result({"shortMsg": "Process crashed."}, 0)
            return
        att: Attempt = attempt(phone, task, opts, tree.files_dir)
        if att.sim_seconds > 0:
            await asyncio.sleep(att.sim_seconds / agent.time_scale)
        tree.add(att)
        if att.status == 0:
            yield rep.status({**base, "stream": "."}, 0)
        elif att.status == -3:
            ignored += 1
            yield rep.status({**base, "stream": ""}, -3)
        else:
            kind = "org.junit.AssumptionViolatedException" if att.status == -4 else "java.lang.AssertionError"
            stack = f"{kind}: {att.reason}\n" + _STACK_TAIL.format(cls=cls, test=tid, line=120 + i)
            if att.status == -2:
                failures.append((f"{tid}({cls})", stack))
                system_log.test_runner(phone, agent.test_package, f"failed: {tid}({cls})", failed=True)
            yield rep.status({**base, "stack": stack, "stream": f"\nError in {tid}({cls}):\n{stack}"}, att.status)
        system_log.test_runner(phone, agent.test_package, f"finished: {tid}({cls})")
    system_log.test_runner(phone, agent.test_package,
                       f"run finished: {numtests - ignored} tests, {len(failures)} failed, {ignored} ignored")
    yield rep.result({"stream": _result_stream(numtests - ignored, failures, time.monotonic() - began)}, -1)


def _result_stream(run_count: int, failures: list[tuple[str, str]], seconds: float) -> str:
    """JUnit's text summary (the result bundle's `stream`)."""
    text = f"\n\nTime: {_format_time(seconds)}\n"
    if failures:
        word = "failure" if len(failures) == 1 else "failures"
        text += f"There {'was' if len(failures) == 1 else 'were'} {len(failures)} {word}:\n"
        for n, (name, stack) in enumerate(failures, 1):
            text += f"{n}) {name}\n{stack}"
        text += f"\nFAILURES!!!\nTests run: {run_count},  Failures: {len(failures)}\n"
    else:
        text += f"\nOK ({run_count} test{'' if run_count == 1 else 's'})\n"
    return text + "\n"


async def _setup_failure(rep: _Reporter, cls: str, error: str, began: float) -> AsyncIterator[bytes]:
    """A run that cannot start its tasks: one failing test `initializationError`, like JUnit reports it."""
    base = {"class": cls, "current": "1", "id": RUNNER_ID, "numtests": "1", "test": "initializationError"}
    yield rep.status({**base, "stream": f"\n{cls}:"}, 1)
    stack = error + "\n" + _STACK_TAIL.format(cls=cls, test="initializationError", line=40)
    yield rep.status({**base, "stack": stack, "stream": f"\nError in initializationError({cls}):\n{stack}"}, -2)
    yield rep.result({"stream": _result_stream(1, [(f"initializationError({cls})", stack)],
                                               time.monotonic() - began)}, -1)
