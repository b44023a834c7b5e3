"""The shared-data helper never skips: absent shared data or a missing file inside it fails the test."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import shared_data as sd


def test_a_file_missing_from_present_shared_data_fails_not_skips(monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    (tmp_path / "dumps").mkdir()
    monkeypatch.setattr(sd, "SHARED_DATA", tmp_path)
    with pytest.raises(pytest.fail.Exception, match="missing from ../shared/data"):
        sd.shared_data("dumps", "renamed.xml")


def test_absent_shared_data_fails_naming_the_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sd, "SHARED_DATA", tmp_path / "nowhere")
    with pytest.raises(pytest.fail.Exception, match="nowhere is absent"):
        sd.shared_data("dumps", "a.xml")


def test_a_present_file_is_returned(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "instrument").mkdir()
    (tmp_path / "instrument" / "a.input").write_text("x")
    monkeypatch.setattr(sd, "SHARED_DATA", tmp_path)
    assert sd.shared_data("instrument", "a.input") == tmp_path / "instrument" / "a.input"
