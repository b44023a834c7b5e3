"""Telling the team: after every `farm sweep`, its payload (`farm.report.notify_payload`) goes to the notifiers
farm.yaml's `notify:` names — a command and/or an HTTP URL.

A notifier is told; it never decides. Whatever it does (fails to start, exits non-zero, hangs, answers 500, is
refused), the sweep logs one warning line on stderr and ends with its own exit status. Each notifier gets
`timeout_s`: a command is then killed with its process group, a POST abandoned.

- command: argv, no shell; the payload JSON on stdin, and `FARM_NOTIFY_PAYLOAD_FILE` naming a private temporary
  file holding it (removed afterwards); its output (stdout and stderr together) is read to the end but only the
  first `OUTPUT_BYTES` are kept and logged.
- url: POST of the payload as `application/json` with urllib (http/https only, checked at load for `url`, at
  send for `url_env`'s value); redirects are not followed (a header would go to another host); proxies come
  from the environment as for any urllib client.

No credential reaches the payload or a log: headers come from environment variables (`headers_env`), the URL is
logged as its scheme, host and port only, and logged output has the values of the credential variables
(`farm.redact`) and of those headers removed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING
from urllib.parse import urlsplit

from farm import __version__
from farm.config import NotifyConfig, check_notify_url
from farm.errors import FarmError
from farm.redact import redact_text, secret_values
from farm.report.notify_payload import EXIT_MEANINGS, Payload, Regressions, refused_payload, sweep_payload

if TYPE_CHECKING:
    from farm.sweep.sweep import SweepResult

PAYLOAD_FILE_ENV = "FARM_NOTIFY_PAYLOAD_FILE"
"""The environment variable naming the file that holds the payload, for a command that reads no stdin."""
OUTPUT_BYTES = 4096
"""A command's output (or a receiver's answer) kept and logged, at most."""
_READ_AFTER_EXIT_S = 2.0
"""How long the output is still read after the command exits (a child it left in the background may hold it)."""

Log = Callable[[str], None]


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _one_line(data: bytes | str, secrets: Collection[str]) -> str:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return redact_text(" ".join(text.split()), secrets)


def url_shown(url: str) -> str:
    """What a log says of a URL: its scheme, host and port (a path or query may hold a secret: webhooks do)."""
    try:
        parts = urlsplit(url)
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(a URL that is not one)"
    return f"{parts.scheme}://{parts.hostname or ''}{port}"


def _secrets(cfg: NotifyConfig) -> frozenset[str]:
    """Values no log may show: the credential variables (`farm.redact`), the headers' and the URL's variables."""
    named = [*cfg.headers_env.values(), *([cfg.url_env] if cfg.url_env else [])]
    return secret_values(cfg.model_dump(mode="json")) | {v for n in named if (v := os.environ.get(n, ""))}


# -- the command ----------------------------------------------------------------------------------------------
def _drain(stream: IO[bytes], head: bytearray) -> None:
    """Read `stream` to its end, keeping its first OUTPUT_BYTES: a chatty command can never fill our memory."""
    for chunk in iter(lambda: stream.read1(65536), b""):  # type: ignore[attr-defined]
        if len(head) < OUTPUT_BYTES:
            head += chunk[: OUTPUT_BYTES - len(head)]


def _feed(stream: IO[bytes], data: bytes) -> None:
    """Write the payload to stdin; a command that does not read it (or is gone) is not an error."""
    try:
        stream.write(data)
        stream.close()
    except OSError:
        pass


def run_command(argv: list[str], data: bytes, *, timeout_s: float, secrets: Collection[str] = (),
                log: Log = _stderr) -> bool:
    """Run the notifier command with the payload on stdin and in FARM_NOTIFY_PAYLOAD_FILE; True when it exited 0.
    Logs one line either way (a warning when it failed), with the first OUTPUT_BYTES of its output."""
    what = f"notify: command {Path(argv[0]).name}"
    with tempfile.TemporaryDirectory(prefix="farm-notify-") as tmp:
        # mkdtemp makes the directory private (0700): the payload names the farm's paths, never for other users.
        payload_file = Path(tmp) / "payload.json"
        payload_file.write_bytes(data)
        try:
            # Its own session: on a timeout, the whole process group (a shell script's children too) is killed.
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    env={**os.environ, PAYLOAD_FILE_ENV: str(payload_file)},
                                    start_new_session=True, close_fds=True)
        except OSError as exc:
            log(f"warning: {what} did not start ({exc.strerror or exc}); the sweep's exit status is unchanged")
            return False
        assert proc.stdin is not None and proc.stdout is not None
        head = bytearray()
        reader = threading.Thread(target=_drain, args=(proc.stdout, head), daemon=True)
        writer = threading.Thread(target=_feed, args=(proc.stdin, data), daemon=True)
        reader.start()
        writer.start()
        timed_out = False
        try:
            code = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass  # it ended between the timeout and the kill
            code = proc.wait()
        reader.join(_READ_AFTER_EXIT_S)
        writer.join(_READ_AFTER_EXIT_S)
        if not reader.is_alive():
            # A pipe a background child still holds is left to the daemon reader: closing it would wait for it.
            proc.stdout.close()
    output = _one_line(bytes(head), secrets)
    said = f" (output: {output})" if output else ""
    if timed_out:
        log(f"warning: {what} did not finish within {timeout_s:g} s and was killed{said}; the sweep's exit status "
            "is unchanged")
        return False
    if code != 0:
        log(f"warning: {what} exited with status {code}{said}; the sweep's exit status is unchanged")
        return False
    log(f"{what} done{said}")
    return True


# -- the URL --------------------------------------------------------------------------------------------------
class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer, not a new destination: the headers (a token) must not follow it elsewhere."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def post(url: str, data: bytes, *, timeout_s: float, headers: Mapping[str, str] | None = None,
         secrets: Collection[str] = (), log: Log = _stderr) -> bool:
    """POST the payload JSON to `url`; True on a 2xx answer. Logs one line either way (a warning on failure)."""
    shown = url_shown(url)
    result: list[str] = []

    def send() -> None:
        request = urllib.request.Request(url, data=data, method="POST", headers={
            "Content-Type": "application/json", "User-Agent": f"agent-farm/{__version__}", **(headers or {})})
        opener = urllib.request.build_opener(_NoRedirect)
        try:
            with opener.open(request, timeout=timeout_s) as answer:
                answer.read(OUTPUT_BYTES)
                result.append(f"ok:{answer.status}")
        except urllib.error.HTTPError as exc:
            body = exc.read(OUTPUT_BYTES) if exc.fp is not None else b""
            text = _one_line(body, secrets)[:200]
            result.append(f"answered HTTP {exc.code}" + (f" ({text})" if text else ""))
        except urllib.error.URLError as exc:
            result.append(f"not reached ({_one_line(str(exc.reason), secrets)})")
        except TimeoutError:
            result.append(f"no answer within {timeout_s:g} s")
        except (OSError, ValueError) as exc:
            result.append(f"failed ({_one_line(str(exc), secrets)})")

    # urllib's timeout bounds each socket operation; the thread bounds the whole exchange (a trickling answer).
    worker = threading.Thread(target=send, daemon=True)
    worker.start()
    worker.join(timeout_s + 1)
    outcome = result[0] if result else f"no answer within {timeout_s:g} s"
    if outcome.startswith("ok:"):
        log(f"notify: posted to {shown} (HTTP {outcome[3:]})")
        return True
    log(f"warning: notify: POST to {shown} {outcome}; the sweep's exit status is unchanged")
    return False


# -- both -----------------------------------------------------------------------------------------------------
def send(payload: Payload, cfg: NotifyConfig, *, log: Log = _stderr) -> bool:
    """Give `payload` to every notifier of `cfg` (the command, then the URL); True when all succeeded. Never
    raises: a notifier's failure is one logged line."""
    secrets = _secrets(cfg)
    data = payload.model_dump_json(indent=1).encode("utf-8")
    ok = True
    if cfg.command is not None:
        ok = run_command(cfg.command, data, timeout_s=cfg.timeout_s, secrets=secrets, log=log) and ok
    url = cfg.url
    if cfg.url_env is not None:
        url = os.environ.get(cfg.url_env) or None
        if url is None:
            log(f"warning: notify: url_env {cfg.url_env} is not set; nothing posted")
            return False
        try:
            check_notify_url(url)
        except ValueError as exc:
            log(f"warning: notify: url_env {cfg.url_env}: {exc}; nothing posted")
            return False
    if url is not None:
        headers: dict[str, str] = {}
        for name, var in cfg.headers_env.items():
            value = os.environ.get(var)
            if value is None:
                log(f"warning: notify: header {name}: {var} is not set; posted without it")
            else:
                headers[name] = value
        ok = post(url, data, timeout_s=cfg.timeout_s, headers=headers, secrets=secrets, log=log) and ok
    return ok


def notify_sweep(result: SweepResult, cfg: NotifyConfig, *, log: Log = _stderr) -> bool:
    """After a sweep: its payload (`sweep_payload`) to every notifier. Never raises, whatever goes wrong."""
    try:
        payload = sweep_payload(result.run_dir, exit_status=result.exit_code, reports=result.reports,
                                history=result.history, quarantined=result.quarantined,
                                interrupted=result.interrupted, regressions_listed=cfg.regressions_listed)
    except Exception as exc:  # noqa: BLE001 - whatever breaks here, the night's exit status must not change
        # The run is on disk whatever happens here: say so, and tell the team the little that is certain.
        text = redact_text(exc.line() if isinstance(exc, FarmError) else f"{type(exc).__name__}: {exc}",
                           _secrets(cfg))
        log(f"warning: notify: the payload of {result.run_id} could not be built ({text}); sending what is known")
        payload = Payload(
            run=result.run_id, label=None, status="interrupted" if result.interrupted else "finished",
            exit_status=result.exit_code, exit_meaning=EXIT_MEANINGS.get(result.exit_code, "unknown"),
            regressions=Regressions(compared_with=None, count=None, listed=[]), lost_hosts=[], quarantined=[],
            left_out=[], run_dir=str(result.run_dir), reports=[str(p) for p in result.reports],
            history=[str(p) for p in result.history], notes=[f"payload incomplete: {text}"])
    return _guarded(payload, cfg, log)


def notify_refused(error: FarmError, cfg: NotifyConfig, *, run: str | None, label: str | None,
                   log: Log = _stderr) -> bool:
    """A sweep that ended in an error instead of a summary is news too: refused to start (no healthy phone, the
    farm's lock held…) or stopped midway (a full disk). Never raises."""
    payload = refused_payload(redact_text(error.line(), _secrets(cfg)), exit_status=error.exit_code, run=run,
                              label=label)
    return _guarded(payload, cfg, log)


def _guarded(payload: Payload, cfg: NotifyConfig, log: Log) -> bool:
    try:
        return send(payload, cfg, log=log)
    except Exception as exc:  # noqa: BLE001 - a notifier's bug must never change the night's exit status
        log(f"warning: notify: {type(exc).__name__}: {_one_line(str(exc), _secrets(cfg))}; the sweep's exit status "
            "is unchanged")
        return False

