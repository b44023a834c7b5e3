"""farm.yaml `notify:`: after every sweep its headline JSON goes to a command (stdin and a file) and/or an http(s)
URL, each bounded by a timeout; a notifier's failure is one logged line and never the sweep's exit status."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from farm import manifest as mf
from farm.config import NotifyConfig, load_config
from farm.errors import FarmError
from farm.notify import OUTPUT_BYTES, PAYLOAD_FILE_ENV, notify_refused, notify_sweep, run_command, send
from farm.report.build import build
from farm.report.headline import read_headline
from farm.report.notify_payload import Payload, refused_payload, sweep_payload
from tests.helpers.records import record, write_run
from tests.helpers.sweep import scripted_tasks, without_shop

FARM = str(Path(sys.executable).parent / "farm")
ROOT = Path(__file__).resolve().parent.parent
SECRET = "s3cr3t-token-value-123"
PHONES = [("SER-A", "Pixel 8"), ("SER-B", "Pixel 8")]


@pytest.fixture(autouse=True)
def _loopback_without_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    # A proxy from the environment would take the loopback POSTs elsewhere.
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("no_proxy", "*")


@dataclass
class Receiver:
    """A loopback HTTP server that records every request."""

    url: str
    requests: list[tuple[str, dict[str, str], bytes]] = field(default_factory=list)


@contextmanager
def receiver(status: int = 200, *, hang: bool = False) -> Iterator[Receiver]:
    """An http.server on 127.0.0.1:0 in a thread: answers `status`, or (`hang`) never answers until torn down."""
    release = threading.Event()
    got: list[tuple[str, dict[str, str], bytes]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            got.append((self.path, dict(self.headers.items()), body))
            if hang:
                release.wait(60)
                return
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(b"ok" if status < 400 else f"boom {SECRET}".encode())

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Receiver(f"http://127.0.0.1:{server.server_address[1]}/hooks/private-path", got)
    finally:
        release.set()
        server.shutdown()
        server.server_close()


def _payload() -> Payload:
    return refused_payload("no healthy phone on any adb server", exit_status=2, run="n1", label="nightly")


def _cfg(**kw: object) -> NotifyConfig:
    return NotifyConfig.model_validate(kw)


# -- the URL ----------------------------------------------------------------------------------------------------
def test_a_loopback_receiver_gets_one_post_of_the_payload_with_headers_from_the_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FARM_NOTIFY_TOKEN", f"Bearer {SECRET}")
    lines: list[str] = []
    with receiver() as r:
        ok = send(_payload(), _cfg(url=r.url, headers_env={"Authorization": "FARM_NOTIFY_TOKEN"}), log=lines.append)
    assert ok
    [(path, headers, body)] = r.requests
    assert path == "/hooks/private-path"
    assert headers["Content-Type"] == "application/json" and headers["Authorization"] == f"Bearer {SECRET}"
    assert Payload.model_validate_json(body) == _payload()
    assert json.loads(body)["format"] == 1
    port = r.url.split(":")[2].split("/")[0]
    # The log names the receiver by scheme, host and port: the path may be a secret (webhooks), the token is.
    assert lines == [f"notify: posted to http://127.0.0.1:{port} (HTTP 200)"]


def test_a_500_is_logged_once_and_never_raises() -> None:
    lines: list[str] = []
    with receiver(500) as r:
        assert send(_payload(), _cfg(url=r.url), log=lines.append) is False
    assert len(r.requests) == 1
    [line] = lines
    assert line.startswith("warning: notify: POST to http://127.0.0.1:") and "answered HTTP 500" in line
    assert "private-path" not in line


def test_the_receivers_answer_is_logged_without_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FARM_NOTIFY_TOKEN", SECRET)
    lines: list[str] = []
    with receiver(500) as r:
        send(_payload(), _cfg(url=r.url, headers_env={"X-Token": "FARM_NOTIFY_TOKEN"}), log=lines.append)
    assert "boom" in lines[0] and SECRET not in lines[0]


def test_a_receiver_that_hangs_times_out() -> None:
    lines: list[str] = []
    with receiver(hang=True) as r:
        start = time.monotonic()
        assert send(_payload(), _cfg(url=r.url, timeout_s=0.5), log=lines.append) is False
        took = time.monotonic() - start
    assert took < 5, took
    [line] = lines
    assert "no answer within 0.5 s" in line and "exit status is unchanged" in line


def test_a_receiver_nobody_listens_on_is_one_warning() -> None:
    with receiver() as r:
        url = r.url  # closed when the block ends: nothing listens there any more
    lines: list[str] = []
    assert send(_payload(), _cfg(url=url, timeout_s=2), log=lines.append) is False
    [line] = lines
    assert line.startswith("warning: notify: POST to http://127.0.0.1:") and "not reached" in line


def test_url_env_names_a_url_that_is_itself_a_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    lines: list[str] = []
    with receiver() as r:
        monkeypatch.setenv("FARM_NOTIFY_URL", r.url)
        assert send(_payload(), _cfg(url_env="FARM_NOTIFY_URL"), log=lines.append)
    assert len(r.requests) == 1 and "private-path" not in lines[0]
    monkeypatch.setenv("FARM_NOTIFY_URL", "file:///etc/passwd")
    lines.clear()
    assert send(_payload(), _cfg(url_env="FARM_NOTIFY_URL"), log=lines.append) is False
    assert lines == ["warning: notify: url_env FARM_NOTIFY_URL: only http and https URLs are posted to, not file;"
                     " nothing posted"]


# -- the command --------------------------------------------------------------------------------------------------
_ECHO = ("import os, sys, pathlib; out = pathlib.Path(sys.argv[1]); out.write_bytes(sys.stdin.buffer.read());"
         f" out.with_suffix('.file').write_bytes(pathlib.Path(os.environ['{PAYLOAD_FILE_ENV}']).read_bytes());"
         " print('sent to chat')")


def test_a_command_gets_the_payload_on_stdin_and_in_a_file(tmp_path: Path) -> None:
    out = tmp_path / "got.json"
    lines: list[str] = []
    assert send(_payload(), _cfg(command=[sys.executable, "-c", _ECHO, str(out)]), log=lines.append)
    assert Payload.model_validate_json(out.read_bytes()) == _payload()
    assert out.with_suffix(".file").read_bytes() == out.read_bytes()
    name = Path(sys.executable).name
    assert lines == [f"notify: command {name} done (output: sent to chat)"]


def test_a_failing_commands_output_is_bounded_and_redacted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAT_TOKEN", SECRET)
    script = f"import sys; print('token {SECRET} ' + 'x' * 20000); sys.exit(3)"
    lines: list[str] = []
    assert run_command([sys.executable, "-c", script], b"{}", timeout_s=10, secrets={SECRET},
                       log=lines.append) is False
    [line] = lines
    assert "exited with status 3" in line and SECRET not in line and "***redacted***" in line
    assert line.count("x") <= OUTPUT_BYTES


def test_a_command_that_hangs_is_killed_with_its_children(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    # A shell that starts a child and waits: the child is in the notifier's process group, and dies with it.
    script = f"sleep 60 & echo $! > {pid_file}; wait"
    lines: list[str] = []
    start = time.monotonic()
    assert run_command(["/bin/sh", "-c", script], b"{}", timeout_s=1, log=lines.append) is False
    assert time.monotonic() - start < 8
    [line] = lines
    assert "did not finish within 1 s and was killed" in line
    child = int(pid_file.read_text())
    for _ in range(50):
        if not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]:
            break
        time.sleep(0.1)
    else:
        pytest.fail("the notifier's child outlived the timeout")


def test_a_command_that_cannot_start_is_one_warning(tmp_path: Path) -> None:
    lines: list[str] = []
    assert send(_payload(), _cfg(command=[str(tmp_path / "no-such-notifier")]), log=lines.append) is False
    assert lines == ["warning: notify: command no-such-notifier did not start (No such file or directory);"
                     " the sweep's exit status is unchanged"]


def test_a_refused_sweep_is_news_too(tmp_path: Path) -> None:
    out = tmp_path / "got.json"
    notify_refused(FarmError("no healthy phone on any adb server", hint="see `farm devices`"),
                   _cfg(command=[sys.executable, "-c", _ECHO, str(out)]), run=None, label="nightly",
                   log=lambda _line: None)
    got = Payload.model_validate_json(out.read_bytes())
    assert (got.status, got.exit_status, got.run, got.label) == ("not_started", 2, None, "nightly")
    assert got.error == "no healthy phone on any adb server — see `farm devices`"
    # A sweep stopped midway by an error of another status (a full disk: 3) was started and can be resumed.
    stopped = FarmError("disk full on /: 1 MiB free", hint="free space and run `farm sweep --resume n1`")
    stopped.exit_code = 3
    notify_refused(stopped, _cfg(command=[sys.executable, "-c", _ECHO, str(out)]), run="n1", label="nightly",
                   log=lambda _line: None)
    got = Payload.model_validate_json(out.read_bytes())
    assert (got.status, got.exit_status, got.run) == ("interrupted", 3, "n1") and got.error is not None


# -- farm.yaml -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("yaml", "message"), [
    ("notify: {url: 'file:///etc/passwd'}", "notify.url: only http and https URLs are posted to, not file"),
    ("notify: {url: 'ftp://chat.example/hook'}", "notify.url: only http and https URLs are posted to, not ftp"),
    ("notify: {url: 'https://user:pw@chat.example/hook'}", "notify.url: a URL with user-info holds a credential"),
    ("notify: {command: []}", "notify.command: List should have at least 1 item"),
    ("notify: {url: 'https://chat.example', timeout_s: 3600}", "notify.timeout_s: Input should be less than or"),
    ("notify: {}", "notify: names no notifier"),
])
def test_a_bad_notify_section_is_refused_at_load_naming_the_field(tmp_path: Path, yaml: str, message: str) -> None:
    path = tmp_path / "farm.yaml"
    path.write_text(yaml + "\n", encoding="utf-8")
    with pytest.raises(FarmError, match="see farm.example.yaml") as caught:
        load_config(path)
    assert f"{path}: {message}" in caught.value.line()
    assert "pw@" not in caught.value.line()


def test_farm_sweep_refuses_a_non_http_scheme_with_exit_2_and_one_line(tmp_path: Path) -> None:
    (tmp_path / "farm.yaml").write_text("notify:\n  url: gopher://chat.example/hook\n", encoding="utf-8")
    scripted_tasks(tmp_path / "tasks", ("read/system/calculator-multiply",))
    proc = subprocess.run([FARM, "sweep", "--tasks-dir", str(tmp_path / "tasks"), "--runs-dir",
                           str(tmp_path / "runs")], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "farm.yaml: notify.url: only http and https" in proc.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


# -- the payload -------------------------------------------------------------------------------------------------
def _night(runs: Path, run_id: str, passed: dict[str, bool], **change: object) -> Path:
    recs = [record(task, run=run_id, device="SER-A", passed=ok, reasons=[] if ok else ["wrong screen"])
            for task, ok in passed.items()]
    run_dir = write_run(runs, run_id, recs, PHONES, names={"SER-A": "Bench 1"})

    def label(m: mf.Manifest) -> None:
        m.label, m.status, m.finished_at = "nightly", "finished", mf.utc_now()
        for key, value in change.items():
            setattr(m, key, value)

    mf.update(run_dir, label)
    build([run_dir])
    time.sleep(0.01)  # nights are ordered by creation time
    return run_dir


def test_the_payload_is_the_runs_headline_and_the_labels_regressions(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    _night(runs, "n1", {"a": True, "b": True, "c": False})
    phones = [mf.PhoneEntry(serial="SER-A", name="Bench 1", model="Pixel 8"),
              mf.PhoneEntry(serial="SER-C", name="Pixel 8 · SER-C", status="left_out", reason="battery 5%")]
    run_dir = _night(runs, "n2", {"a": False, "b": False, "c": True},
                     notes=["adb server unreachable: farm-host-2:5037: Connection refused"], phones=phones)
    payload = sweep_payload(run_dir, exit_status=1, reports=[run_dir / "report.md"],
                            history=[runs / "history" / "nightly-n2" / "history.md"],
                            quarantined={"SER-A": ["adb: device offline", "adb: closed"]}, regressions_listed=1)
    written = read_headline(run_dir)
    assert written is not None and payload.headline is not None
    assert (payload.headline.overall, payload.headline.text) == (written.overall, written.text)
    assert (payload.headline.holdout, payload.headline.hidden_holdout_units) == ("hidden", 0)
    assert (payload.run, payload.label, payload.status, payload.exit_status) == ("n2", "nightly", "finished", 1)
    assert payload.exit_meaning == "every unit finished, some failed"
    assert payload.regressions.model_dump() == {"compared_with": "n1", "count": 2, "listed": ["a on Bench 1"]}
    assert [h.model_dump() for h in payload.lost_hosts] == [{"server": "farm-host-2:5037",
                                                             "reason": "Connection refused", "phones": []}]
    assert [q.model_dump() for q in payload.quarantined] == [
        {"phone": "Bench 1", "reason": "adb: device offline; adb: closed"}]
    assert [q.model_dump() for q in payload.left_out] == [{"phone": "Pixel 8 · SER-C", "reason": "battery 5%"}]
    assert payload.reports == [str(run_dir / "report.md")] and payload.run_dir == str(run_dir)
    assert payload.notes == []


def test_a_first_night_or_no_label_says_why_there_are_no_regressions(tmp_path: Path) -> None:
    run_dir = _night(tmp_path / "runs", "only", {"a": True})
    payload = sweep_payload(run_dir, exit_status=0)
    assert payload.regressions.count is None and payload.lost_hosts == []
    assert payload.notes == ["regressions: the first night of 'nightly', nothing to compare with"]
    mf.update(run_dir, lambda m: setattr(m, "label", None))
    assert sweep_payload(run_dir, exit_status=0).notes == [
        "regressions: the sweep has no --label, so no night to compare with"]
    assert sweep_payload(run_dir, exit_status=3, interrupted=True).regressions.count is None


def test_the_deploy_example_command_says_the_night_in_one_line(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOTIFY_MAIL_TO", raising=False)
    runs = tmp_path / "runs"
    _night(runs, "n1", {"a": True})
    payload = sweep_payload(_night(runs, "n2", {"a": False}), exit_status=1)
    lines: list[str] = []
    assert send(payload, _cfg(command=[str(ROOT / "deploy" / "notify-example.sh")]), log=lines.append)
    assert payload.headline is not None
    assert lines == [f"notify: command notify-example.sh done (output: nightly n2: exit 1 (every unit finished, some"
                     f" failed) · {payload.headline.text} · 1 regressed since n1 (a on Bench 1) · lost hosts: none)"]


def test_a_payload_that_cannot_be_built_still_tells_what_is_certain(tmp_path: Path) -> None:
    from farm.sweep.sweep import SweepResult

    run_dir = tmp_path / "runs" / "gone"  # no manifest: nothing to read the night from
    run_dir.mkdir(parents=True)
    result = SweepResult("gone", run_dir, {"done": 0}, False, 5, reports=[run_dir / "report.md"])
    lines: list[str] = []
    with receiver() as r:
        notify_sweep(result, _cfg(url=r.url), log=lines.append)
    [(_path, _headers, body)] = r.requests
    got = Payload.model_validate_json(body)
    assert (got.run, got.status, got.exit_status, got.headline) == ("gone", "finished", 5, None)
    assert got.exit_meaning == "infrastructure errors after every try" and got.reports == [str(run_dir / "report.md")]
    assert got.notes[0].startswith("payload incomplete: ")
    assert lines[0].startswith("warning: notify: the payload of gone could not be built")


# -- end to end ----------------------------------------------------------------------------------------------------
def _sweep(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "no_proxy": "*"}
    return subprocess.run([FARM, "sweep", "--run-id", "s1", "--label", "nightly", "--executor", "host", "--policy",
                           "scripted", "--tasks-dir", str(tmp_path / "tasks"), "--runs-dir", str(tmp_path / "runs"),
                           "--quiet", *extra], cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)


def test_after_a_sweep_the_receiver_and_the_command_get_the_nights_payload(virtual_farm, tmp_path: Path) -> None:
    virtual_farm(1)
    scripted_tasks(tmp_path / "tasks", ("read/system/calculator-multiply",))
    out = tmp_path / "got.json"
    with receiver() as r:
        (tmp_path / "farm.yaml").write_text(json.dumps({"notify": {
            "url": r.url, "command": [sys.executable, "-c", _ECHO, str(out)], "timeout_s": 20}}), encoding="utf-8")
        done = _sweep(tmp_path)
    assert done.returncode == 0, done.stderr
    [(_path, _headers, body)] = r.requests
    posted = Payload.model_validate_json(body)
    assert Payload.model_validate_json(out.read_bytes()) == posted
    written = read_headline(tmp_path / "runs" / "s1")
    assert written is not None and posted.headline is not None
    assert (posted.run, posted.label, posted.status, posted.exit_status) == ("s1", "nightly", "finished", 0)
    assert posted.headline.overall == written.overall and f"run s1: {written.text}" in done.stdout
    assert any(p.endswith("report.html") for p in posted.reports) and posted.history
    assert "notify: posted to http://127.0.0.1:" in done.stderr and "private-path" not in done.stderr


def test_a_receiver_that_hangs_leaves_the_sweeps_exit_status_as_it_was(virtual_farm, tmp_path: Path) -> None:
    virtual_farm(1, profile=without_shop())
    # The only task needs the Shop app, which the phone lacks: skipped, nothing attempted, so below any
    # --fail-under (4): a status other than 0, which the notifier must leave as it is.
    scripted_tasks(tmp_path / "tasks", ("read/shopping/shop-search-headphones",))
    with receiver(hang=True) as r:
        (tmp_path / "farm.yaml").write_text(f"notify:\n  url: {r.url}\n  timeout_s: 1\n", encoding="utf-8")
        done = _sweep(tmp_path, "--fail-under", "0.5")
    assert len(r.requests) == 1 and Payload.model_validate_json(r.requests[0][2]).exit_status == 4
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning: notify:")]
    assert len(warnings) == 1 and "no answer within 1 s" in warnings[0]
    assert done.returncode == 4, done.stderr
