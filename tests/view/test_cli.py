"""`farm view` on the command line: loopback only, a port in use, a missing runs directory — one line, exit 2."""

from __future__ import annotations

import socket
from pathlib import Path

import httpx
import pytest

from farm.cli import main
from farm.view.server import ViewServer


def _fails(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(["view", *args])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err
    return err


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.5", "::1", "example.com", ""])
def test_a_host_that_is_not_loopback_is_refused(host: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _fails(["--host", host, "--runs-dir", str(tmp_path)], capsys)
    assert err.startswith(f"error: --host {host}: the viewer serves this machine only")


def test_a_port_in_use_names_the_port_and_the_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        err = _fails(["--port", str(port), "--runs-dir", str(tmp_path)], capsys)
    assert err == f"error: 127.0.0.1:{port}: port in use — pass another --port (0 picks a free one)"


def test_a_port_out_of_range_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _fails(["--port", "70000", "--runs-dir", str(tmp_path)], capsys)
    assert err.startswith("error: --port 70000: not a TCP port")


def test_a_missing_runs_directory_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _fails(["--runs-dir", str(tmp_path / "nothing")], capsys)
    assert err.startswith(f"error: --runs-dir {tmp_path / 'nothing'}: no such directory")


def test_the_server_listens_on_loopback_and_answers(tmp_path: Path) -> None:
    with ViewServer(tmp_path, port=0) as server:
        assert server.url == f"http://127.0.0.1:{server.port}/"
        page = httpx.get(server.url, timeout=10)
        assert page.status_code == 200 and "No runs yet" in page.text
    with pytest.raises(httpx.TransportError):
        httpx.get(server.url, timeout=2)


def test_view_prints_its_address_opens_it_with_open_and_stops_on_ctrl_c(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import webbrowser

    opened: list[str] = []
    answers: list[int] = []

    def wait(server: ViewServer) -> None:
        answers.append(httpx.get(server.url, timeout=10).status_code)
        raise KeyboardInterrupt

    monkeypatch.setattr(webbrowser, "open", opened.append)
    monkeypatch.setattr(ViewServer, "wait", wait)
    with pytest.raises(SystemExit) as exit_info:
        main(["view", "--port", "0", "--open", "--runs-dir", str(tmp_path)])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert len(opened) == 1 and opened[0].startswith("http://127.0.0.1:") and f"farm view: {opened[0]}" in out
    assert answers == [200]
