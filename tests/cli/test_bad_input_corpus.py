"""Bad input to every `farm` command, through the real entry point: one error line, the documented exit status,
no traceback, nothing written, no adb server started.

Each case is (argv, files to create first, environment, exit status, a substring of the error line). The
child runs in an empty temp directory with HOME, the internal-error log directory and the sim state directory
inside it, and ANDROID_ADB_SERVER_PORT on a free port where no adb server runs: bad input must be refused
before any phone, browser or file is touched.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from farm.sim.launcher import free_port
from tests.helpers.records import SMALL_TASKS, record, write_run

ENTRY = "import sys; from farm.cli import main; main(sys.argv[1:])"
ADB = shutil.which("adb")

Files = Mapping[str, bytes | None]
"""Relative path → content; None makes a directory."""


@dataclass(frozen=True)
class Case:
    """One bad invocation and what it must produce."""

    argv: tuple[str, ...]
    """Arguments after `farm`."""
    needle: str
    """A substring the single `error: ` line must contain (the flag, field, file or variable named)."""
    files: Files = field(default_factory=dict)
    """Created in the working directory before the run."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Set for the child on top of the isolated base environment."""
    status: int = 2
    """Expected exit status: 2 for bad input (see `farm --help`)."""
    setup: Callable[[Path], None] | None = None
    """Builds what plain files cannot (a run directory, a desktop batch) in the working directory."""


DIR = None
DEEP_JSON = b"[" * 100_000
DEEP_OBJECT = b'{"a":' * 50_000
DEEP_YAML = b"a: " + b"[" * 100_000
BINARY = bytes(range(256)) * 8
BAD_UTF8 = b'{"id": "caf\xe9 \xff\xfe"}\n'
EMPTY = b""


def _json(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode()


def tasks_at(root: str, extra: Files | None = None) -> dict[str, bytes | None]:
    """The small valid task set under `root`, plus `extra` (paths relative to `root`)."""
    files: dict[str, bytes | None] = {f"{root}/{d}/{t['id']}.json": _json(t) for d, t in SMALL_TASKS}
    files.update({f"{root}/{k}": v for k, v in (extra or {}).items()})
    return files


def one_task(root: str, name: str, content: bytes | None) -> dict[str, bytes | None]:
    """A task set of one file (or directory) `root/read/system/<name>`."""
    return {f"{root}/read/system/{name}": content}


def _a_run(cwd: Path) -> None:
    write_run(cwd / "runs", "r1", [record(run="r1")])


def _damaged_run(manifest: bytes) -> Callable[[Path], None]:
    def make(cwd: Path) -> None:
        run = cwd / "runs" / "bad"
        run.mkdir(parents=True)
        (run / "manifest.json").write_bytes(manifest)

    return make


DESKTOP_CONFIG = {
    "mode": "native", "execution": "simulated", "commit": "0123456789abcdef0123456789abcdef01234567",
    "mainModel": "model-x thinking=off", "jevModel": "none", "macOS": "15.1 en", "appVersions": "Calculator=1",
    "runtime": "runtime-1", "display": "1 display 2560x1600 @2x", "repetitions": 1,
}


def _a_batch(cwd: Path) -> None:
    from farm.desktop.batch import init_batch

    config = cwd / "desk" / "config.json"
    config.parent.mkdir(mode=0o700)
    config.write_text(json.dumps(DESKTOP_CONFIG), encoding="utf-8")
    config.chmod(0o600)
    init_batch(config, cwd / "desk" / "batch-000.json")


# -- the corpus --------------------------------------------------------------------------------------------------

WEB_DRY_ARGS = ("web", "run", "--dry-run", "--backends", "playwright", "--policy", "scripted")

CASES: list[object] = []


def case(case_id: str, *argv: str, needle: str, files: Files | None = None, env: Mapping[str, str] | None = None,
         status: int = 2, setup: Callable[[Path], None] | None = None, xfail: str | None = None) -> None:
    """Add one case; `xfail` (strict) names the owner file and what is wrong there."""
    c = Case(tuple(argv), needle, files or {}, env or {}, status, setup)
    marks = [pytest.mark.xfail(strict=True, reason=xfail)] if xfail else []
    CASES.append(pytest.param(c, id=case_id, marks=marks))


# The root command.
case("root-unknown-command", "nosuch", needle="No such command 'nosuch'")
case("root-unknown-option", "--nope", needle="No such option: --nope")
case("version-extra-argument", "version", "extra", needle="farm version")
case("version-unknown-option", "version", "--json", needle="No such option: --json")

# farm run: every numeric and choice flag.
for value in ("-5", "0", "inf"):
    case(f"run-deadline-{value}", "run", "--deadline", value, needle="--deadline")
for value in ("0", "-1", "nan"):
    case(f"run-idle-timeout-{value}", "run", "--idle-timeout", value, needle="--idle-timeout")
case("run-deadline-not-a-number", "run", "--deadline", "soon", needle="'--deadline'")
case("run-batch-0", "run", "--batch", "0", needle="'--batch'")
case("run-batch-huge", "run", "--batch", "100000", needle="'--batch'")
case("run-max-tries-0", "run", "--max-tries", "0", needle="'--max-tries'")
for value in ("1.5", "nan"):
    case(f"run-fail-under-{value}", "run", "--fail-under", value, needle="--fail-under")
for flag, value in (("--price-in", "-3"), ("--price-out", "inf"), ("--price-cached", "-1"), ("--price-in", "nan")):
    case(f"run{flag}-{value}", "run", flag, value, needle=flag)
case("run-split", "run", "--split", "bogus", needle="--split bogus")
case("run-on-takeover", "run", "--on-takeover", "later", needle="--on-takeover later")
case("run-channel", "run", "--channel", "tv", needle="--channel tv")
case("run-executor", "run", "--executor", "phone", needle="--executor phone")
case("run-policy", "run", "--executor", "host", "--policy", "magic", needle="--policy magic")
for n, value in enumerate(("====", "a=on,,b=on", "fast=maybe", "", "a=on,a=off")):
    case(f"run-flags-{n}", "run", "--flags", value, needle="--flags")
case("run-scripts-dir-missing", "run", "--executor", "host", "--policy", "scripted", "--scripts-dir", "nope",
     needle="--scripts-dir nope")
case("run-scripts-dir-file", "run", "--executor", "host", "--policy", "scripted", "--scripts-dir", "f.txt",
     files={"f.txt": b"x"}, needle="--scripts-dir f.txt")
for n, value in enumerate(("../x", "/tmp/x", "", "x" * 200)):
    case(f"run-run-id-{n}", "run", "--run-id", value, needle="--run-id")
case("run-resume-unsafe", "run", "--resume", "../x", needle="--resume")
case("run-resume-and-run-id", "run", "--resume", "a", "--run-id", "b", needle="--run-id")
case("run-runs-dir-file", "run", "--runs-dir", "f.txt", files={"f.txt": b"x"}, needle="--runs-dir f.txt")
case("run-runs-dir-under-file", "run", "--runs-dir", "f.txt/runs", files={"f.txt": b"x"}, needle="--runs-dir")
case("run-runs-dir-proc", "run", "--runs-dir", "/proc/agent-farm-runs", needle="--runs-dir /proc")
case("run-runs-dir-sys", "run", "--runs-dir", "/sys/kernel/x", needle="--runs-dir /sys")
case("run-tasks-dir-missing", "run", "--tasks-dir", "nope", needle="nope")
case("run-tasks-dir-file", "run", "--tasks-dir", "f.txt", files={"f.txt": b"x"}, needle="f.txt")
case("run-tasks-default-missing", "run", needle="tasks")
case("run-tasks-deep", "run", "--tasks-dir", "t", files=tasks_at("t", {"read/system/deep.json": DEEP_JSON}),
     needle="deep.json")
case("run-tasks-bad-utf8", "run", "--tasks-dir", "t", files=tasks_at("t", {"write/bad.json": BAD_UTF8}),
     needle="bad.json")
case("run-tasks-binary", "run", "--tasks-dir", "t", files=tasks_at("t", {"write/bin.json": BINARY}),
     needle="bin.json")
case("run-tasks-empty-file", "run", "--tasks-dir", "t", files=tasks_at("t", {"write/empty.json": EMPTY}),
     needle="empty.json")
case("run-set-matches-nothing", "run", "--tasks-dir", "t", "--set", "nothing/here", files=tasks_at("t"),
     needle="no task matches")
case("run-profile-unknown", "run", "--profile", "nope", needle="profiles.nope")
case("run-no-adb-server", "run", "--tasks-dir", "t", files=tasks_at("t"), needle="no adb server")

# Selection flags of run, sweep and tasks list: a bad -k, an unknown run, an empty value, two spellings at once.
for selecting in (("run",), ("sweep",), ("tasks", "list")):
    name = "-".join(selecting)
    case(f"{name}-keyword-unbalanced", *selecting, "--tasks-dir", "t", "-k", "read and (write", files=tasks_at("t"),
         needle="-k 'read and (write': '(' at column 10 is never closed")
    case(f"{name}-keyword-empty", *selecting, "--tasks-dir", "t", "-k", " ", files=tasks_at("t"),
         needle="empty expression")
    case(f"{name}-keyword-operator-alone", *selecting, "--tasks-dir", "t", "-k", "not", files=tasks_at("t"),
         needle="-k 'not': expected a word at the end")
    case(f"{name}-only-failed-from-unknown", *selecting, "--tasks-dir", "t", "--only-failed-from", "nope",
         files=tasks_at("t"), needle="--only-failed-from nope: no such run")
    case(f"{name}-only-failed-from-unsafe", *selecting, "--only-failed-from", "../x",
         needle="--only-failed-from '../x'")
    case(f"{name}-only-failed-from-no-records", *selecting, "--only-failed-from", "bad", setup=_damaged_run(b"{}"),
         needle="--only-failed-from bad: the run has no records")
    case(f"{name}-exclude-empty", *selecting, "--tasks-dir", "t", "--exclude", "", files=tasks_at("t"),
         needle="--exclude ''")
    case(f"{name}-set-matches-nothing", *selecting, "--tasks-dir", "t", "--set", "write", "--set", "wirte",
         files=tasks_at("t"), needle="--set wirte: no task matches it")
case("run-run-and-run-id", "run", "--run", "a", "--run-id", "b", needle="--run and --run-id both given")
case("run-resume-and-selection", "run", "--resume", "a", "--set", "write", needle="its own selection")
case("sweep-resume-and-selection", "sweep", "--resume", "a", "-k", "x", needle="its own selection")
case("tasks-list-two-dirs", "tasks", "list", "--tasks-dir", "t", "--dir", "u", needle="--tasks-dir and --dir")
case("query-format-unknown", "query", "select 1", "--format", "xml", setup=_a_run, needle="--format xml")
case("query-json-and-csv", "query", "select 1", "--format", "csv", "--json", setup=_a_run, needle="--json and")
case("web-run-device-and-serial", *WEB_DRY_ARGS, "--device", "a", "--serial", "b", needle="--device and --serial")

# farm.yaml: wrong types, unknown keys, out-of-range numbers, .inf and .nan, deep nesting, not text.
BAD_CONFIGS: list[tuple[str, bytes | None, str]] = [
    ("idle-inf", b"idle_timeout_s: .inf\n", "idle_timeout_s"),
    ("idle-nan", b"idle_timeout_s: .nan\n", "idle_timeout_s"),
    ("idle-negative", b"idle_timeout_s: -5\n", "idle_timeout_s"),
    ("idle-zero", b"idle_timeout_s: 0\n", "idle_timeout_s"),
    ("idle-year", b"idle_timeout_s: 31536000\n", "idle_timeout_s"),
    ("idle-word", b"idle_timeout_s: soon\n", "idle_timeout_s"),
    ("price-negative", b"pricing: {input_per_m: -1}\n", "pricing.input_per_m"),
    ("price-inf", b"pricing: {output_per_m: .inf}\n", "pricing.output_per_m"),
    ("price-nan", b"pricing: {cached_per_m: .nan}\n", "pricing.cached_per_m"),
    ("pull-nan", b"pull: {max_file_mb: .nan}\n", "pull.max_file_mb"),
    ("pull-zero", b"pull: {max_total_mb: 0}\n", "pull.max_total_mb"),
    ("pull-inf", b"pull: {max_total_mb: .inf}\n", "pull.max_total_mb"),
    ("battery-over", b"health: {min_battery_pct: 101}\n", "health.min_battery_pct"),
    ("storage-negative", b"health: {min_free_storage_mb: -1}\n", "health.min_free_storage_mb"),
    ("server-port-zero", b"adb_servers: [{host: 10.0.0.2, port: 0}]\n", "adb_servers.0.port"),
    ("server-host-empty", b"adb_servers: [{host: '', port: 5037}]\n", "adb_servers.0.host"),
    ("servers-not-a-list", b"adb_servers: 5\n", "adb_servers"),
    ("unknown-key", b"idle_timeout: 60\n", "idle_timeout"),
    ("runs-dir-empty", b"runs_dir: ''\n", "runs_dir"),
    ("profile-template", b"profiles: {p: {package: a, test_package: b, eval_class: c, output_dir: '{nope}/x'}}\n",
     "profiles.p.output_dir"),
    ("default-profile-empty", b"default_profile: ''\n", "default_profile"),
    ("llm-timeout-inf", b"llm: {provider: openai, model: m, timeout_s: .inf}\n", "llm"),
    ("top-level-list", b"- a\n- b\n", "mapping"),
    ("deep-flow", DEEP_YAML, "nested too deeply"),
    ("deep-block", b"".join(b" " * i + b"a:\n" for i in range(1300)), "nested too deeply"),
    ("invalid-yaml", b"adb_servers: [\n", "invalid YAML"),
    ("binary", BINARY, "not UTF-8"),
    ("bad-utf8", b"runs_dir: caf\xe9\n", "not UTF-8"),
    ("directory", DIR, "is a directory"),
]
for name, content, needle in BAD_CONFIGS:
    case(f"config-{name}-devices", "devices", needle=needle, files={"farm.yaml": content})
for name, content, needle in (BAD_CONFIGS[0], BAD_CONFIGS[3], BAD_CONFIGS[-4], BAD_CONFIGS[-1]):
    case(f"config-{name}-run", "run", "--config", "c.yaml", needle=needle, files={"c.yaml": content})
for name, content, needle in (BAD_CONFIGS[1], BAD_CONFIGS[6], BAD_CONFIGS[-3]):
    case(f"config-{name}-sweep", "sweep", needle=needle, files={"farm.yaml": content})
case("config-missing", "devices", "--config", "missing.yaml", needle="missing.yaml")
case("config-runs-dir-proc", "run", needle="runs_dir", files={"farm.yaml": b"runs_dir: /proc/agent-farm\n"})
case("config-runs-dir-file", "sweep", needle="runs_dir", files={"farm.yaml": b"runs_dir: f.txt\n", "f.txt": b"x"})
case("config-history", "history", needle="idle_timeout_s", files={"farm.yaml": b"idle_timeout_s: .inf\n"})
case("config-pull", "pull", "--device", "X", "--run", "r", needle="pricing.input_per_m",
     files={"farm.yaml": b"pricing: {input_per_m: -1}\n"})

# ANDROID_ADB_SERVER_PORT, for every command that reaches adb.
for value in ("abc", "0", "70000", " "):
    case(f"env-port-{value.strip() or 'blank'}-devices", "devices", env={"ANDROID_ADB_SERVER_PORT": value},
         needle="ANDROID_ADB_SERVER_PORT")
for command in (("run",), ("sweep",), ("pull", "--device", "X", "--run", "r"), ("sim", "up")):
    for value in ("abc", "70000"):
        case(f"env-port-{value}-{command[0]}", *command, env={"ANDROID_ADB_SERVER_PORT": value},
             needle="ANDROID_ADB_SERVER_PORT")
case("devices-no-adb-server", "devices", needle="no adb server")
case("devices-profile-unknown", "devices", "--profile", "nope", needle="profiles.nope")

# farm sweep.
for flag, value in (("--repeats", "0"), ("--repeats", "100000"), ("--batch", "0"), ("--max-tries", "0"),
                    ("--quarantine-after", "0"), ("--quarantine-after", "x")):
    case(f"sweep{flag}-{value}", "sweep", flag, value, needle=f"'{flag}'")
for value in ("0", "inf"):
    case(f"sweep-recheck-{value}", "sweep", "--recheck", value, needle="--recheck")
case("sweep-fail-under", "sweep", "--fail-under", "2", needle="'--fail-under'")
case("sweep-fail-under-nan", "sweep", "--fail-under", "nan", needle="--fail-under")
case("sweep-spread", "sweep", "--spread", "everywhere", needle="--spread everywhere")
case("sweep-split", "sweep", "--split", "train", needle="--split train")
for n, value in enumerate(("../x", "/tmp/x")):
    case(f"sweep-label-{n}", "sweep", "--label", value, needle="--label")
    case(f"sweep-run-id-{n}", "sweep", "--run-id", value, needle="--run-id")
case("sweep-resume-unsafe", "sweep", "--resume", "../x", needle="--resume")
case("sweep-retry-from-unsafe", "sweep", "--retry-from", "/tmp/x", "--run-id", "new", needle="--retry-from")
case("sweep-retry-from-without-run-id", "sweep", "--retry-from", "old", needle="--run NEW")
case("sweep-resume-and-run-id", "sweep", "--resume", "a", "--run-id", "b", needle="--resume")
case("sweep-listed-without-device", "sweep", "--listed-phones", needle="--device")
case("sweep-price", "sweep", "--price-out", "-2", needle="--price-out")
case("sweep-flags", "sweep", "--flags", "====", needle="--flags")
case("sweep-runs-dir-file", "sweep", "--runs-dir", "f.txt", files={"f.txt": b"x"}, needle="--runs-dir f.txt")
case("sweep-runs-dir-proc", "sweep", "--runs-dir", "/proc/x", needle="--runs-dir /proc")
case("sweep-tasks-dir-missing", "sweep", "--tasks-dir", "nope", needle="nope")
case("sweep-tasks-deep", "sweep", "--tasks-dir", "t", files=tasks_at("t", {"write/deep.json": DEEP_JSON}),
     needle="deep.json")

# farm pull.
case("pull-no-device", "pull", "--run", "r", needle="--device")
case("pull-no-run", "pull", "--device", "X", needle="--run")
case("pull-run-parent", "pull", "--device", "X", "--run", "../x", needle="--run")
case("pull-run-absolute", "pull", "--device", "X", "--run", "/tmp/x", needle="--run")
case("pull-split", "pull", "--device", "X", "--run", "r", "--split", "train", needle="--split")
case("pull-runs-dir-file", "pull", "--device", "X", "--run", "r", "--runs-dir", "f.txt", files={"f.txt": b"x"},
     needle="--runs-dir f.txt")
case("pull-runs-dir-proc", "pull", "--device", "X", "--run", "r", "--runs-dir", "/proc/x", needle="--runs-dir")
case("pull-profile-unknown", "pull", "--device", "X", "--run", "r", "--profile", "nope", needle="profiles.nope")
case("pull-no-adb-server", "pull", "--device", "X", "--run", "r", needle="no adb server")

# farm history.
for value in ("0", "-1", "x", "100001"):
    case(f"history-last-{value}", "history", "--last", value, needle="'--last'")
case("history-runs-dir-missing", "history", "--runs-dir", "nope", needle="--runs-dir nope")
case("history-runs-dir-file", "history", "--runs-dir", "f.txt", files={"f.txt": b"x"}, needle="--runs-dir f.txt")
case("history-default-runs-missing", "history", needle="runs")
case("history-no-runs", "history", "--runs-dir", "runs", files={"runs": DIR}, needle="no runs with a manifest")
case("history-label-unknown", "history", "--label", "nightly", setup=_a_run, needle="nightly")
case("history-out-file", "history", "--out", "f.txt", setup=_a_run, files={"f.txt": b"x"}, needle="--out f.txt")
case("history-out-proc", "history", "--out", "/proc/x", setup=_a_run, needle="--out /proc")

# farm report.
case("report-no-run", "report", needle="Missing argument")
case("report-unknown-run", "report", "nope", needle="nope")
case("report-run-parent", "report", "../x", needle="../x")
case("report-run-absolute", "report", "/tmp/agent-farm-no-such-run", needle="/tmp/agent-farm-no-such-run")
case("report-runs-dir-file", "report", "r1", "--runs-dir", "f.txt", files={"f.txt": b"x"}, needle="r1")
case("report-three-runs", "report", "r1", "r1", "r1", setup=_a_run, needle="run")
case("report-overrides-missing", "report", "r1", "--overrides", "nope.yaml", setup=_a_run, needle="nope.yaml")
case("report-overrides-directory", "report", "r1", "--overrides", "o", files={"o": DIR}, setup=_a_run,
     needle="o")
case("report-overrides-binary", "report", "r1", "--overrides", "o.yaml", files={"o.yaml": BINARY}, setup=_a_run,
     needle="o.yaml")
case("report-overrides-deep", "report", "r1", "--overrides", "o.yaml", files={"o.yaml": DEEP_YAML}, setup=_a_run,
     needle="o.yaml")
case("report-overrides-bad-utf8", "report", "r1", "--overrides", "o.yaml", files={"o.yaml": b"x: caf\xe9\n"},
     setup=_a_run, needle="o.yaml")
case("report-out-file", "report", "r1", "--out", "f.txt", files={"f.txt": b"x"}, setup=_a_run, needle="f.txt")
case("report-manifest-binary", "report", "bad", setup=_damaged_run(BINARY), needle="manifest.json")
case("report-manifest-deep", "report", "bad", setup=_damaged_run(DEEP_JSON), needle="manifest.json")
case("report-manifest-empty", "report", "bad", setup=_damaged_run(EMPTY), needle="manifest.json")

# farm webvoyager.
WV = ("webvoyager", "run", "--headless")
case("wv-run-concurrency", *WV, "--concurrency", "9", needle="--concurrency")
case("wv-run-judge", *WV, "--judge", "magic", needle="--judge")
case("wv-run-timeout", *WV, "--timeout-ms", "0", needle="--timeout-ms")
case("wv-run-timeout-both-names", *WV, "--timeout", "5", "--timeout-ms", "6", needle="--timeout")
case("wv-run-run-parent", *WV, "--run", "../x", needle="../x")
case("wv-run-data-missing", *WV, "--dry-run", "--data", "nope", needle="nope")
case("wv-run-resume-unknown", *WV, "--resume", "--run", "gone", needle="gone")
case("wv-run-resume-and-retry-from", *WV, "--resume", "--retry-from", "old", needle="--retry-from")
case("wv-run-new-rerun-alone", *WV, "--new-rerun", needle="--new-rerun")
case("wv-run-record-and-replay", *WV, "--record-har", "a", "--replay-har", "b", needle="--record-har")
case("wv-run-judge-only-none", *WV, "--judge-only", "--judge", "none", needle="--judge-only")
case("wv-data-fetch-and-from", "webvoyager", "data", "--fetch", "--from", "x", needle="--fetch")
case("wv-data-from-missing", "webvoyager", "data", "--from", "nope", needle="nope")
case("wv-data-remote-mirror", "webvoyager", "data", "--fetch", "--base-url", "http://example.com/d",
     needle="example.com")
case("wv-backfill-unknown", "webvoyager", "backfill", "--run", "gone", needle="gone")
case("wv-reset-judge-unknown", "webvoyager", "reset-judge", "--run", "gone", needle="gone")
case("wv-report-unknown", "webvoyager", "report", "--run", "gone", needle="gone")

# farm query.
case("query-empty", "query", "", needle="empty query")
case("query-blank", "query", "  ;  ", needle="empty query")
case("query-drop", "query", "drop table records", needle="refused")
case("query-two", "query", "select 1; select 2", needle="2 statements")
case("query-syntax", "query", "selec 1", needle="query")
case("query-runs-dir-missing", "query", "select 1", "--runs-dir", "nope", needle="nope")
case("query-runs-dir-file", "query", "select 1", "--runs-dir", "f.txt", files={"f.txt": b"x"}, needle="f.txt")
case("query-run-unknown", "query", "select 1", "--run", "nope", needle="nope")
case("query-run-parent", "query", "select 1", "--run", "../x", needle="../x")
case("query-unknown-table", "query", "select * from nosuch", setup=_a_run, needle="nosuch")
case("query-runtime-error", "query", "select error('boom')", setup=_a_run, needle="boom")

# farm tasks list / show / check.
case("tasks-list-split", "tasks", "list", "--split", "train", needle="--split")
case("tasks-list-dir-missing", "tasks", "list", "--dir", "nope", needle="nope")
case("tasks-list-dir-file", "tasks", "list", "--dir", "f.txt", files={"f.txt": b"x"}, needle="f.txt")
TASK_FILE_CASES: list[tuple[str, bytes | None, str]] = [
    ("deep", DEEP_JSON, "nested deeper"),
    ("deep-object", DEEP_OBJECT, "nested deeper"),
    ("bad-utf8", BAD_UTF8, "not UTF-8"),
    ("binary", BINARY, "not UTF-8"),
    ("empty", EMPTY, "malformed JSON"),
    ("malformed", b'{"id": "x",', "malformed JSON"),
    ("array", b"[1, 2]", "one JSON object"),
    ("wrong-type", _json({**SMALL_TASKS[0][1], "maxSteps": "many"}), "maxSteps"),
    ("bool-as-count", _json({**SMALL_TASKS[0][1], "maxSteps": True}), "maxSteps"),
    ("float-as-count", _json({**SMALL_TASKS[0][1], "timeoutSec": 600.0}), "timeoutSec"),
    ("text-as-count", _json({**SMALL_TASKS[0][1], "maxSteps": "30"}), "maxSteps"),
    ("unknown-field", _json({**SMALL_TASKS[0][1], "colour": "red"}), "colour"),
    ("huge", b'{"id": "' + b"x" * (1 << 20) + b'"}', "larger than"),
]
for name, content, needle in TASK_FILE_CASES:
    case(f"tasks-list-{name}", "tasks", "list", "--dir", "t", files=one_task("t", "sys-version.json", content),
         needle=needle)
for name, content, needle in TASK_FILE_CASES[:3]:
    case(f"tasks-show-{name}", "tasks", "show", "sys-version", "--dir", "t",
         files=one_task("t", "sys-version.json", content), needle=needle)
case("tasks-show-no-id", "tasks", "show", needle="Missing argument 'ID'")
case("tasks-show-unknown", "tasks", "show", "nope", "--dir", "t", files=tasks_at("t"), needle="'nope' not found")
case("tasks-show-dir-missing", "tasks", "show", "x", "--dir", "nope", needle="nope")
case("tasks-check-missing", "tasks", "check", "nope", needle="nope")
case("tasks-check-file", "tasks", "check", "f.txt", files={"f.txt": b"x"}, needle="f.txt")
for name, content, _needle in TASK_FILE_CASES[:2] + TASK_FILE_CASES[3:5] + TASK_FILE_CASES[-1:]:
    # The file's own problem is listed on stdout with the other violations; the error line counts them.
    case(f"tasks-check-{name}", "tasks", "check", "t", files=tasks_at("t", {"read/system/sys-x.json": content}),
         needle="violation(s)")

# farm instrument parse.
case("instrument-no-file", "instrument", "parse", needle="Missing argument")
case("instrument-missing", "instrument", "parse", "nope.txt", needle="nope.txt")
case("instrument-directory", "instrument", "parse", "d", files={"d": DIR}, needle="d")
case("instrument-under-file", "instrument", "parse", "f.txt/x", files={"f.txt": b"x"}, needle="f.txt/x")
case("instrument-unreadable", "instrument", "parse", "/proc/self/mem", needle="/proc/self/mem")

# farm sim up / status / down.
for flag, value in (("--count", "0"), ("--count", "100000"), ("--adb-port", "0"), ("--adb-port", "70000"),
                    ("--disconnect-after-bytes", "-1"), ("--stall-after-bytes", "-1"), ("--slow-link-bps", "0"),
                    ("--instrument-crash-after", "-1"), ("--instrument-stop-after", "-1")):
    case(f"sim-up{flag}-{value}", "sim", "up", flag, value, needle=f"'{flag}'")
for value in ("-1", "nan"):
    case(f"sim-up-disconnect-after-s-{value}", "sim", "up", "--disconnect-after-s", value,
         needle="--disconnect-after-s")
case("sim-up-state", "sim", "up", "--state", "asleep", needle="--state")
SIM_PROFILES: list[tuple[str, bytes | None, str]] = [
    ("directory", DIR, "--profile p.yaml"),
    ("binary", BINARY, "--profile p.yaml"),
    ("bad-utf8", b"model: caf\xe9\n", "--profile p.yaml"),
    ("deep", DEEP_YAML, "p.yaml"),
    ("wrong-type", b"model: [1, 2]\n", "p.yaml"),
]
for name, content, needle in SIM_PROFILES:
    case(f"sim-up-profile-{name}", "sim", "up", "--profile", "p.yaml", files={"p.yaml": content}, needle=needle)
case("sim-up-profile-missing", "sim", "up", "--profile", "nope.yaml", needle="nope.yaml")
for name, content in (("binary", BINARY), ("deep", DEEP_JSON), ("directory", DIR)):
    for command in ("status", "down"):
        case(f"sim-{command}-state-{name}", "sim", command, files={"simstate/state.json": content},
             needle="state")
case("sim-status-extra", "sim", "status", "now", needle="farm sim status")

# farm web run / report / probe / serve (web_bench and farm/cli/web.py are another owner's).
WEB_DRY = ("web", "run", "--dry-run", "--backends", "playwright", "--policy", "scripted")
case("web-run-policy", "web", "run", "--dry-run", "--policy", "magic", needle="--policy")
case("web-run-tasks", *WEB_DRY, "--tasks", "nope", needle="--tasks")
case("web-run-seeds-word", *WEB_DRY, "--seeds", "x", needle="--seeds")
case("web-run-seeds-reversed", *WEB_DRY, "--seeds", "5-1", needle="--seeds")
case("web-run-seeds-empty", *WEB_DRY, "--seeds", "", needle="--seeds")
case("web-run-trials-0", *WEB_DRY, "--trials", "0", needle="--trials")
case("web-run-trials-negative", *WEB_DRY, "--trials", "-1", needle="--trials")
case("web-run-backends", "web", "run", "--dry-run", "--backends", "netscape", needle="--backends")
case("web-run-run-id-parent", *WEB_DRY, "--run-id", "../x", needle="--run-id")
case("web-run-run-id-absolute", *WEB_DRY, "--run-id", "/tmp/x", needle="--run-id")
WEB_RUN = ("web", "run", "--smoke", "--backends", "playwright", "--policy", "scripted")
case("web-run-timeout-0", *WEB_RUN, "--timeout-ms", "0", needle="--timeout-ms")
case("web-run-timeout-negative", *WEB_RUN, "--timeout-ms", "-1", needle="--timeout-ms")
case("web-run-runs-dir-file", *WEB_RUN, "--runs-dir", "f.txt", files={"f.txt": b"x"}, needle="--runs-dir")
case("web-run-runs-dir-proc", *WEB_RUN, "--runs-dir", "/proc/x", needle="--runs-dir")
case("web-run-output-directory", *WEB_RUN, "--output", "d", files={"d": DIR}, needle="d")
case("web-run-output-exists", *WEB_RUN, "--output", "o.jsonl", files={"o.jsonl": b""}, needle="o.jsonl")
case("web-run-env-port", *WEB_RUN[:3], "--backends", "android-chrome", "--policy", "scripted",
     env={"ANDROID_ADB_SERVER_PORT": "abc"}, needle="ANDROID_ADB_SERVER_PORT")
case("web-report-missing", "web", "report", "nope.jsonl", needle="nope.jsonl")
case("web-report-directory", "web", "report", "d", files={"d": DIR}, needle="d")
case("web-report-binary", "web", "report", "r.jsonl", files={"r.jsonl": BINARY}, needle="r.jsonl")
case("web-report-bad-utf8", "web", "report", "r.jsonl", files={"r.jsonl": BAD_UTF8}, needle="r.jsonl")
case("web-report-deep", "web", "report", "r.jsonl", files={"r.jsonl": DEEP_JSON + b"\n"}, needle="r.jsonl")
case("web-report-empty", "web", "report", "r.jsonl", files={"r.jsonl": EMPTY}, needle="r.jsonl")
case("web-report-no-results", "web", "report", needle="no web results")
case("web-report-runs-dir-file", "web", "report", "--runs-dir", "f.txt", files={"f.txt": b"x"}, needle="f.txt")
case("web-probe-backends", "web", "probe", "--backends", "netscape", needle="--backends")
# No adb server on the port: one line, and none is started (adbutils would start one by itself).
case("web-probe-no-adb-server", "web", "probe", "--backends", "android-chrome", needle="probe failed")
case("web-serve-port-negative", "web", "serve", "--port", "-1", needle="--port")
case("web-serve-port-huge", "web", "serve", "--port", "70000", needle="--port")
case("web-serve-port-word", "web", "serve", "--port", "http", needle="'--port'")

# farm desktop init / record / verify / report / attach (farm/desktop and farm/cli/desktop.py are another owner's).
DESKTOP_FILES: list[tuple[str, bytes | None]] = [
    ("directory", DIR), ("deep", DEEP_JSON), ("binary", BINARY), ("empty", EMPTY), ("array", b"[]"),
]
for name, content in DESKTOP_FILES:
    case(f"desktop-init-config-{name}", "desktop", "init", "c.json", "out/b.json", files={"c.json": content},
         needle="c.json")
case("desktop-init-config-missing", "desktop", "init", "nope.json", "out/b.json", needle="nope.json")
case("desktop-init-config-wrong-type", "desktop", "init", "c.json", "out/b.json",
     files={"c.json": _json({**DESKTOP_CONFIG, "repetitions": "three"})}, needle="repetitions")
case("desktop-init-config-unknown-key", "desktop", "init", "c.json", "out/b.json",
     files={"c.json": _json({**DESKTOP_CONFIG, "colour": "red"})}, needle="colour")
case("desktop-init-config-negative", "desktop", "init", "c.json", "out/b.json",
     files={"c.json": _json({**DESKTOP_CONFIG, "repetitions": -3})}, needle="repetitions")
case("desktop-init-out-exists", "desktop", "init", "c.json", "b.json",
     files={"c.json": _json(DESKTOP_CONFIG), "b.json": b"{}"}, needle="b.json")
case("desktop-init-out-proc", "desktop", "init", "c.json", "/proc/agent-farm/b.json",
     files={"c.json": _json(DESKTOP_CONFIG)}, needle="/proc")
case("desktop-init-out-under-file", "desktop", "init", "c.json", "f.txt/b.json",
     files={"c.json": _json(DESKTOP_CONFIG), "f.txt": b"x"}, needle="f.txt")
for name, content in DESKTOP_FILES[:2]:
    case(f"desktop-verify-{name}", "desktop", "verify", "b.json", files={"b.json": content}, needle="b.json")
    case(f"desktop-report-{name}", "desktop", "report", "b.json", files={"b.json": content}, needle="b.json")
    case(f"desktop-record-batch-{name}", "desktop", "record", "b.json", "calculator-add/1", "r.json", "b1.json",
         files={"b.json": content}, needle="b.json")
    case(f"desktop-record-result-{name}", "desktop", "record", "desk/batch-000.json", "calculator-add/1", "r.json",
         "desk/batch-001.json", files={"r.json": content}, setup=_a_batch, needle="r.json")
case("desktop-verify-missing", "desktop", "verify", "nope.json", needle="nope.json")
case("desktop-report-none", "desktop", "report", needle="Missing argument")
case("desktop-report-two", "desktop", "report", "desk/batch-000.json", "desk/batch-000.json", setup=_a_batch,
     needle="one")
case("desktop-record-unknown-slot", "desktop", "record", "desk/batch-000.json", "nope/1", "r.json",
     "desk/batch-001.json", files={"r.json": b"{}"}, setup=_a_batch, needle="nope/1")
case("desktop-attach-run-parent", "desktop", "attach", "../x", "desk/batch-000.json", setup=_a_batch, needle="../x")
case("desktop-attach-run-absolute", "desktop", "attach", "/tmp/x", "desk/batch-000.json", setup=_a_batch,
     needle="/tmp/x")
case("desktop-attach-batch-missing", "desktop", "attach", "r1", "nope.json", needle="nope.json")
case("desktop-attach-runs-dir-file", "desktop", "attach", "r1", "desk/batch-000.json", "--runs-dir", "f.txt",
     files={"f.txt": b"x"}, setup=_a_batch, needle="f.txt")
case("desktop-attach-runs-dir-proc", "desktop", "attach", "r1", "desk/batch-000.json", "--runs-dir", "/proc/x",
     setup=_a_batch, needle="/proc")


# -- the runner --------------------------------------------------------------------------------------------------

Snapshot = dict[str, tuple[bool, int, int]]
WORKERS = (os.cpu_count() or 2) + 1
"""Children run side by side (each is mostly interpreter start-up); every one has its own directory and port."""


@dataclass
class Outcome:
    """What one case's child did."""

    proc: subprocess.CompletedProcess[str]
    changed: list[str]
    """Entries of the working directory created, removed or modified (outside the log directory of exit 70)."""
    started: list[str]
    """Servers left running that the refused command should never have started."""


def snapshot(root: Path) -> Snapshot:
    """Every entry under `root`: (is a directory, size, mtime in ns), by relative path."""
    out: Snapshot = {}
    for base, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = Path(base, name)
            st = path.lstat()
            out[str(path.relative_to(root))] = (path.is_dir() and not path.is_symlink(), st.st_size, st.st_mtime_ns)
    return out


def make_files(root: Path, files: Files) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if content is None:
            path.mkdir(exist_ok=True)
        else:
            path.write_bytes(content)


def listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def base_env(cwd: Path, adb_port: int) -> dict[str, str]:
    """A clean environment: nothing of the developer's (FARM_*, XDG_*, keys) reaches the child."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "COLUMNS": "200",
        "HOME": str(cwd / "home"), "FARM_LOG_DIR": str(cwd / "logs"), "FARM_SIM_STATE_DIR": str(cwd / "simstate"),
        "ANDROID_ADB_SERVER_PORT": str(adb_port), "PYTHONDONTWRITEBYTECODE": "1",
    }
    if ADB:
        # The real adb: a server started implicitly would really start, and be caught below.
        env["ADBUTILS_ADB_PATH"] = ADB
    return env


def _clean_up(cwd: Path, adb_port: int, sim_state_before: tuple[bool, int, int] | None) -> list[str]:
    """Stop whatever a refused case should never have started; say what it was."""
    left: list[str] = []
    state = cwd / "simstate" / "state.json"
    if state.is_file() and snapshot(cwd).get("simstate/state.json") != sim_state_before:
        left.append("a virtual farm")
        subprocess.run([sys.executable, "-c", ENTRY, "sim", "down"], cwd=cwd, env=base_env(cwd, adb_port),
                       capture_output=True, timeout=60, check=False)
    if listening(adb_port):
        left.append(f"an adb server on port {adb_port}")
        if ADB:
            subprocess.run([ADB, "-P", str(adb_port), "kill-server"], capture_output=True, timeout=30, check=False)
    return left


def execute(c: Case, cwd: Path) -> Outcome:
    """Run one case in `cwd` (created here) and compare the directory before and after."""
    cwd.mkdir()
    make_files(cwd, c.files)
    if c.setup is not None:
        c.setup(cwd)
    adb_port = free_port()
    before = snapshot(cwd)
    try:
        proc = subprocess.run([sys.executable, "-c", ENTRY, *c.argv], cwd=cwd, env={**base_env(cwd, adb_port), **c.env},
                              capture_output=True, text=True, timeout=60, check=False)
    finally:
        started = _clean_up(cwd, adb_port, before.get("simstate/state.json"))
    after = snapshot(cwd)
    allowed = ("logs",) if c.status == 70 else ()
    changed = sorted(k for k in before.keys() | after.keys()
                     if before.get(k) != after.get(k) and k.split(os.sep, 1)[0] not in allowed)
    return Outcome(proc, changed, started)


@pytest.fixture(scope="module")
def outcomes(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    """Every selected case, run once, side by side, keyed by its test id."""
    selected: dict[str, Case] = {}
    for item in request.session.items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and item.module is sys.modules[__name__] and "c" in callspec.params:
            selected[callspec.id] = callspec.params["c"]
    root = tmp_path_factory.mktemp("corpus")
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        futures = {cid: pool.submit(execute, c, root / f"case{n}") for n, (cid, c) in enumerate(selected.items())}
        return {cid: f.result() for cid, f in futures.items()}


def test_corpus_is_large_and_covers_every_command() -> None:
    cases: list[Case] = [p.values[0] for p in CASES]  # type: ignore[attr-defined]
    assert len(cases) >= 150
    assert all(c.status == 2 for c in cases), "bad input is exit status 2"
    commands = {" ".join(a for a in c.argv[:2] if not a.startswith("-")) for c in cases}
    for command in ("run", "sweep", "history", "report", "query", "pull", "devices", "tasks list", "tasks show",
                    "tasks check", "sim up", "sim status", "sim down", "instrument parse", "web run", "web report",
                    "web probe", "web serve", "desktop init", "desktop record", "desktop verify", "desktop report",
                    "desktop attach", "version"):
        assert any(c == command or c.startswith(command + " ") for c in commands), command


@pytest.mark.parametrize("c", CASES)
def test_bad_input_is_one_line_and_changes_nothing(c: Case, outcomes: dict[str, Outcome],
                                                   request: pytest.FixtureRequest) -> None:
    got = outcomes[request.node.callspec.id]
    proc = got.proc
    shown = f"argv={list(c.argv)}\nexit={proc.returncode}\nstderr={proc.stderr!r}\nstdout={proc.stdout[-600:]!r}"
    assert "Traceback" not in proc.stderr + proc.stdout, shown
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), shown
    assert c.needle in lines[0], shown
    assert proc.returncode == c.status, shown
    assert got.started == [], f"{shown}\nleft running: {got.started}"
    assert got.changed == [], f"{shown}\nchanged: {got.changed}"
