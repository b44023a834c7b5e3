"""Placing the WebVoyager files: `fetch` through a real loopback HTTP server and `copy_from` a local directory,
both refusing anything but the pinned bytes and never leaving a half or wrong file behind."""

from __future__ import annotations

import hashlib
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Literal

import pytest

from farm.errors import FarmError
from tests.helpers.shared_data import shared_data
from web_bench.webvoyager.data_files import copy_from, default_data_dir, fetch, status
from web_bench.webvoyager.dataset import DATA_FILES, SET_126_IDS, data_file, load_tasks, locate
from web_bench.webvoyager.prompt import load_reference_prompt

Fault = Literal["flip_byte", "close_early", "length_too_large", "length_too_small", "not_found", "redirect_away"]
NAMES = [entry.name for entry in DATA_FILES]


class FileServer:
    """The pinned files (read from ../shared/data/webvoyager, served under their data-directory names) on a free
    127.0.0.1 port, with per-file faults."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files
        self.faults: dict[str, Fault] = {}
        self.requests: list[str] = []
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._http.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._http.server_address[1]}"
        self._thread = threading.Thread(target=self._http.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        served = self

        class Handler(BaseHTTPRequestHandler):
            # HTTP/1.0: the connection closes after each response, so a short body is a cut-off download.
            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                name = self.path.lstrip("/")
                served.requests.append(name)
                body, fault = served.files.get(name), served.faults.get(name)
                if fault == "redirect_away":
                    self.send_response(302)
                    self.send_header("Location", f"http://192.0.2.1/{name}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if body is None or fault == "not_found":
                    self.send_response(404)
                    self.send_header("Content-Length", "9")
                    self.end_headers()
                    self.wfile.write(b"not found")
                    return
                length = len(body)
                if fault == "flip_byte":
                    body = body[:100] + bytes([body[100] ^ 0x01]) + body[101:]
                elif fault == "close_early":
                    body = body[: length // 2]
                elif fault == "length_too_large":
                    length += 100
                elif fault == "length_too_small":
                    length -= 100
                self.send_response(200)
                self.send_header("Content-Length", str(length))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        return Handler


def _shared() -> Path:
    return shared_data("webvoyager")


@pytest.fixture
def server() -> Iterator[FileServer]:
    files: dict[str, bytes] = {}
    for entry in DATA_FILES:
        path = locate(_shared(), entry)
        assert path is not None, entry.name
        files[entry.name] = path.read_bytes()
    served = FileServer(files)
    try:
        yield served
    finally:
        served.close()


def _listing(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir()) if directory.exists() else []


def _fetch_refused(server: FileServer, dest: Path, name: str, fault: Fault) -> str:
    server.faults[name] = fault
    with pytest.raises(FarmError) as caught:
        fetch(dest, base_url=server.base_url)
    return caught.value.line()


def test_default_data_dir_is_the_environment_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("FARM_WEBVOYAGER_DATA", str(tmp_path / "wv"))
    assert default_data_dir() == tmp_path / "wv"


def test_default_data_dir_falls_back_to_the_user_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("FARM_WEBVOYAGER_DATA", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_data_dir() == tmp_path / ".cache" / "agent-farm" / "webvoyager"


def test_fetch_places_every_verified_file(server: FileServer, tmp_path: Path) -> None:
    dest = tmp_path / "data"
    placed = fetch(dest, base_url=server.base_url + "/")
    assert [(done.name, done.action) for done in placed] == [(name, "fetched") for name in NAMES]
    assert placed[0].source == f"{server.base_url}/WebVoyager_data.json"
    assert _listing(dest) == sorted(NAMES)
    assert all(entry.sha_ok for entry in status(dest))
    assert [task.task_id for task in load_tasks(dest)] == list(SET_126_IDS)
    assert load_reference_prompt(dest).sha256 == data_file("judge-prompt.md").sha256


def test_fetch_reports_each_file_to_progress(server: FileServer, tmp_path: Path) -> None:
    seen: list[str] = []
    fetch(tmp_path, base_url=server.base_url, progress=seen.append)
    prompt = data_file("judge-prompt.md")
    assert seen[2:4] == [
        f"judge-prompt.md: fetching {server.base_url}/judge-prompt.md",
        f"judge-prompt.md: fetched from {server.base_url}/judge-prompt.md, SHA-256 {prompt.sha256} verified",
    ]
    assert len(seen) == 2 * len(NAMES)
    seen.clear()
    fetch(tmp_path, base_url=server.base_url, progress=seen.append)
    assert seen == [f"{name}: already verified ({tmp_path / name})" for name in NAMES]


def test_fetch_keeps_verified_files_without_downloading_them(server: FileServer, tmp_path: Path) -> None:
    fetch(tmp_path, base_url=server.base_url)
    server.requests.clear()
    server.faults = {name: "flip_byte" for name in NAMES}
    placed = fetch(tmp_path, base_url=server.base_url)
    assert {done.action for done in placed} == {"kept"}
    assert server.requests == []
    assert all(entry.sha_ok for entry in status(tmp_path))


def test_fetch_refuses_one_byte_changed_and_leaves_nothing(server: FileServer, tmp_path: Path) -> None:
    line = _fetch_refused(server, tmp_path, "reference_answer.json", "flip_byte")
    entry = data_file("reference_answer.json")
    body = server.files[entry.name]
    flipped = body[:100] + bytes([body[100] ^ 0x01]) + body[101:]
    assert "reference_answer.json" in line
    assert entry.sha256 in line and hashlib.sha256(flipped).hexdigest() in line
    assert _listing(tmp_path) == []


def test_fetch_refuses_a_connection_closed_early(server: FileServer, tmp_path: Path) -> None:
    line = _fetch_refused(server, tmp_path, "WebVoyager_data.json", "close_early")
    entry = data_file("WebVoyager_data.json")
    half = server.files[entry.name][: entry.size // 2]
    assert f"broke off after {len(half)} of {entry.size} bytes" in line
    assert hashlib.sha256(half).hexdigest() in line and entry.sha256 in line
    assert _listing(tmp_path) == []


def test_fetch_refuses_a_content_length_beyond_the_body(server: FileServer, tmp_path: Path) -> None:
    line = _fetch_refused(server, tmp_path, "judge-prompt.md", "length_too_large")
    assert "judge-prompt.md" in line and "broke off" in line
    assert _listing(tmp_path) == []


def test_fetch_refuses_a_content_length_short_of_the_file(server: FileServer, tmp_path: Path) -> None:
    line = _fetch_refused(server, tmp_path, "LICENSE", "length_too_small")
    entry = data_file("LICENSE")
    short = server.files["LICENSE"][: entry.size - 100]
    assert f"SHA-256 {hashlib.sha256(short).hexdigest()} ({entry.size - 100} bytes), pinned {entry.sha256}" in line
    assert _listing(tmp_path) == []


def test_fetch_refuses_a_404_naming_the_file(server: FileServer, tmp_path: Path) -> None:
    line = _fetch_refused(server, tmp_path, "WebVoyager_data.jsonl", "not_found")
    assert f"WebVoyager_data.jsonl: {server.base_url}/WebVoyager_data.jsonl answered HTTP 404" in line
    assert "farm webvoyager data --fetch" in line


def test_fetch_places_nothing_when_any_file_fails(server: FileServer, tmp_path: Path) -> None:
    _fetch_refused(server, tmp_path, "LICENSE", "not_found")
    assert server.requests == NAMES  # the first four were downloaded and verified, then discarded
    assert _listing(tmp_path) == []


def test_fetch_refuses_a_redirect_off_loopback_before_following_it(server: FileServer, tmp_path: Path) -> None:
    line = _fetch_refused(server, tmp_path, "judge-prompt.md", "redirect_away")
    assert "http://192.0.2.1/judge-prompt.md: refused download URL" in line
    assert _listing(tmp_path) == []


@pytest.mark.parametrize("base_url", [
    "http://example.com/data", "http://10.0.0.1:8000", "http://127.0.0.1.nip.io", "ftp://127.0.0.1/x",
    "file:///tmp", "127.0.0.1:8000",
])
def test_fetch_refuses_a_non_loopback_plain_url_before_any_request(base_url: str, tmp_path: Path) -> None:
    dest = tmp_path / "data"
    with pytest.raises(FarmError, match="refused download URL .* https://"):
        fetch(dest, base_url=base_url)
    assert not dest.exists()


def test_fetch_refuses_credentials_in_the_url_without_repeating_them(tmp_path: Path) -> None:
    with pytest.raises(FarmError) as caught:
        fetch(tmp_path, base_url="https://user:s3cret@example.com")
    assert "s3cret" not in caught.value.line()


def test_fetch_replaces_a_bad_file_with_a_verified_one(server: FileServer, tmp_path: Path) -> None:
    prompt = tmp_path / "judge-prompt.md"
    prompt.write_bytes(server.files["judge-prompt.md"].replace(b"\n", b"\r\n"))
    placed = fetch(tmp_path, base_url=server.base_url)
    assert placed[1].action == "fetched"
    assert prompt.read_bytes() == server.files["judge-prompt.md"]


def test_fetch_never_replaces_a_file_with_a_bad_download(server: FileServer, tmp_path: Path) -> None:
    prompt = tmp_path / "judge-prompt.md"
    old = server.files["judge-prompt.md"] + b"\n"
    prompt.write_bytes(old)
    _fetch_refused(server, tmp_path, "judge-prompt.md", "flip_byte")
    assert prompt.read_bytes() == old
    assert _listing(tmp_path) == ["judge-prompt.md"]


def test_copy_from_takes_the_upstream_names_and_places_the_data_names(tmp_path: Path) -> None:
    placed = copy_from(_shared(), tmp_path)
    assert [(done.name, done.action) for done in placed] == [(name, "copied") for name in NAMES]
    assert placed[0].source == str(_shared() / "WebVoyager_data.549.json")
    assert _listing(tmp_path) == sorted(NAMES)
    assert [task.task_id for task in load_tasks(tmp_path)] == list(SET_126_IDS)


def test_copy_from_takes_the_data_names(tmp_path: Path) -> None:
    copy_from(_shared(), tmp_path / "first")
    copy_from(tmp_path / "first", tmp_path / "second")
    assert all(entry.sha_ok for entry in status(tmp_path / "second"))


def test_copy_from_refuses_one_byte_changed_naming_both_hashes(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(_shared(), src)
    raw = bytearray((src / "WebVoyager_data.jsonl").read_bytes())
    raw[-1] ^= 0x01
    (src / "WebVoyager_data.jsonl").write_bytes(bytes(raw))
    with pytest.raises(FarmError) as caught:
        copy_from(src, tmp_path / "dest")
    line = caught.value.line()
    assert str(src / "WebVoyager_data.jsonl") in line
    assert hashlib.sha256(bytes(raw)).hexdigest() in line and data_file("WebVoyager_data.jsonl").sha256 in line
    assert _listing(tmp_path / "dest") == []


def test_copy_from_refuses_a_missing_file_naming_its_names(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(_shared(), src)
    (src / "LICENSE-WebVoyager-Apache-2.0.txt").unlink()
    with pytest.raises(FarmError, match="no LICENSE or LICENSE-WebVoyager-Apache-2.0.txt .*--from DIR"):
        copy_from(src, tmp_path / "dest")
    assert _listing(tmp_path / "dest") == []


def test_copy_from_refuses_a_source_that_is_not_a_directory(tmp_path: Path) -> None:
    with pytest.raises(FarmError, match="not a directory"):
        copy_from(tmp_path / "absent", tmp_path / "dest")


def test_status_reports_absent_and_altered_files(tmp_path: Path) -> None:
    assert [(entry.name, entry.present, entry.sha_ok) for entry in status(tmp_path)] == [
        (name, False, False) for name in NAMES
    ]
    copy_from(_shared(), tmp_path)
    (tmp_path / "judge-prompt.md").write_bytes((tmp_path / "judge-prompt.md").read_bytes() + b"\n")
    by_name = {entry.name: entry for entry in status(tmp_path)}
    assert (by_name["judge-prompt.md"].present, by_name["judge-prompt.md"].sha_ok) == (True, False)
    assert by_name["judge-prompt.md"].sha256 == hashlib.sha256((tmp_path / "judge-prompt.md").read_bytes()).hexdigest()
    assert all(by_name[name].sha_ok for name in NAMES if name != "judge-prompt.md")
