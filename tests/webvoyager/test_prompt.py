"""The reference judge prompt is loaded byte for byte and refused unless its SHA-256 is the pinned one."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from farm.errors import FarmError
from tests.helpers.shared_data import shared_data
from web_bench.webvoyager.dataset import data_file
from web_bench.webvoyager.prompt import REFERENCE_PROMPT_SHA256, load_reference_prompt


def _shared_prompt() -> Path:
    return shared_data("webvoyager", "judge-prompt.md")


def _altered(tmp_path: Path, raw: bytes) -> str:
    """Refusal line for a judge-prompt.md holding `raw` (after checking it names the file, both hashes, the fix)."""
    (tmp_path / "judge-prompt.md").write_bytes(raw)
    with pytest.raises(FarmError) as caught:
        load_reference_prompt(tmp_path)
    line = caught.value.line()
    assert str(tmp_path / "judge-prompt.md") in line
    assert REFERENCE_PROMPT_SHA256 in line and hashlib.sha256(raw).hexdigest() in line
    assert "farm webvoyager data --fetch" in line
    return line


def test_the_pinned_prompt_hash_is_the_data_file_pin() -> None:
    assert data_file("judge-prompt.md").sha256 == REFERENCE_PROMPT_SHA256


def test_load_from_a_data_directory_keeps_the_bytes_verbatim() -> None:
    prompt = load_reference_prompt(_shared_prompt().parent)
    raw = _shared_prompt().read_bytes()
    assert prompt.text.encode("utf-8") == raw
    assert prompt.sha256 == REFERENCE_PROMPT_SHA256 == hashlib.sha256(raw).hexdigest()
    assert prompt.path == str(_shared_prompt())
    assert prompt.text.startswith("# WebVoyager Benchmark Evaluation\n")
    assert prompt.text.endswith("Evaluate all results now.\n")


def test_load_from_the_file_itself(tmp_path: Path) -> None:
    copy = tmp_path / "prompt-copy.md"
    shutil.copyfile(_shared_prompt(), copy)
    prompt = load_reference_prompt(str(copy))
    assert (prompt.path, prompt.sha256) == (str(copy), REFERENCE_PROMPT_SHA256)


def test_a_missing_prompt_is_refused_naming_the_file_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(FarmError) as caught:
        load_reference_prompt(tmp_path)
    line = caught.value.line()
    assert f"{tmp_path / 'judge-prompt.md'}: the reference judge prompt is missing" in line
    assert "farm webvoyager data --fetch" in line and "--from DIR" in line


def test_crlf_line_endings_are_refused(tmp_path: Path) -> None:
    _altered(tmp_path, _shared_prompt().read_bytes().replace(b"\n", b"\r\n"))


def test_an_added_trailing_newline_is_refused(tmp_path: Path) -> None:
    _altered(tmp_path, _shared_prompt().read_bytes() + b"\n")


def test_a_stripped_trailing_newline_is_refused(tmp_path: Path) -> None:
    _altered(tmp_path, _shared_prompt().read_bytes().rstrip(b"\n"))


def test_an_added_bom_is_refused(tmp_path: Path) -> None:
    _altered(tmp_path, b"\xef\xbb\xbf" + _shared_prompt().read_bytes())


def test_one_changed_word_is_refused(tmp_path: Path) -> None:
    raw = _shared_prompt().read_bytes()
    assert b"PASS" in raw
    line = _altered(tmp_path, raw.replace(b"PASS", b"pass", 1))
    assert "is not the pinned reference judge prompt" in line
