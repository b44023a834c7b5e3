"""`farm desktop init`: config validation, refusals (exit 2, one line) and warnings."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from farm.desktop.batch import load_batch
from tests.helpers.desktop import REPO, farm, results_dir, write_config


def _init_error(tmp_path: Path, **overrides: object) -> str:
    directory = results_dir(tmp_path)
    config = write_config(directory, **overrides)  # type: ignore[arg-type]
    outcome = farm("desktop", "init", config, directory / "batch-000.json")
    assert outcome.code == 2
    assert not (directory / "batch-000.json").exists()
    assert len(outcome.stderr.strip().splitlines()) == 1
    return outcome.stderr


def test_init_writes_every_slot_pending(tmp_path: Path) -> None:
    directory = results_dir(tmp_path)
    config = write_config(directory, repetitions=3)
    outcome = farm("desktop", "init", config, directory / "batch-000.json")
    assert outcome.code == 0, outcome.stderr
    batch = load_batch(directory / "batch-000.json")
    assert len(batch.slots) == 18
    assert {s.status for s in batch.slots} == {"pending"}
    assert batch.slots[0].id == "calculator-add/1" and batch.slots[-1].id == "browser-delayed/3"
    assert batch.sequence == 0 and batch.previous is None
    assert outcome.stderr == ""


def test_init_refuses_the_unedited_example_config(tmp_path: Path) -> None:
    directory = results_dir(tmp_path)
    config = directory / "config.json"
    shutil.copy(REPO / "fixtures/desktop/config.example.json", config)
    os.chmod(config, 0o600)
    outcome = farm("desktop", "init", config, directory / "batch-000.json")
    assert outcome.code == 2
    assert "field commit" in outcome.stderr


def test_init_refuses_placeholder_text_left_from_the_example(tmp_path: Path) -> None:
    stderr = _init_error(tmp_path, appVersions="Calculator=实际版本; TextEdit=实际版本; Chrome=实际版本")
    assert "field appVersions" in stderr and "placeholder" in stderr


def test_init_refuses_an_unknown_mode(tmp_path: Path) -> None:
    assert "field mode" in _init_error(tmp_path, mode="hybrid")


def test_init_refuses_an_unknown_execution(tmp_path: Path) -> None:
    assert "field execution" in _init_error(tmp_path, execution="real")


def test_init_refuses_a_short_commit(tmp_path: Path) -> None:
    assert "field commit" in _init_error(tmp_path, commit="0123456")


def test_init_refuses_a_non_hex_commit(tmp_path: Path) -> None:
    assert "field commit" in _init_error(tmp_path, commit="g" * 40)


def test_init_refuses_a_jev_model_in_native_mode(tmp_path: Path) -> None:
    stderr = _init_error(tmp_path, jevModel="jev-latest")
    assert "jevModel" in stderr and "native" in stderr


def test_init_refuses_jev_mode_without_a_jev_model(tmp_path: Path) -> None:
    stderr = _init_error(tmp_path, mode="jev", jevModel="none")
    assert "jevModel" in stderr and "jev mode" in stderr


def test_init_accepts_jev_mode_with_a_model(tmp_path: Path) -> None:
    directory = results_dir(tmp_path)
    config = write_config(directory, mode="jev", jevModel="jev-latest (2026-02-03)")
    assert farm("desktop", "init", config, directory / "b.json").code == 0


def test_init_refuses_zero_repetitions(tmp_path: Path) -> None:
    assert "field repetitions" in _init_error(tmp_path, repetitions=0)


def test_init_refuses_an_unknown_field(tmp_path: Path) -> None:
    assert "field extra" in _init_error(tmp_path, extra="x")


def test_init_refuses_a_results_dir_inside_a_git_work_tree(tmp_path: Path) -> None:
    repo = tmp_path / "checkout"
    (repo / ".git").mkdir(parents=True)
    directory = repo / "results"
    directory.mkdir(mode=0o700)
    config = write_config(directory)
    outcome = farm("desktop", "init", config, directory / "batch-000.json")
    assert outcome.code == 2
    assert "inside the git work tree" in outcome.stderr
    assert not (directory / "batch-000.json").exists()


def test_init_refuses_an_existing_output(tmp_path: Path) -> None:
    directory = results_dir(tmp_path)
    config = write_config(directory)
    out = directory / "batch-000.json"
    out.write_text("keep me", encoding="utf-8")
    outcome = farm("desktop", "init", config, out)
    assert outcome.code == 2 and "already exists" in outcome.stderr
    assert out.read_text(encoding="utf-8") == "keep me"


def test_init_refuses_a_missing_config(tmp_path: Path) -> None:
    outcome = farm("desktop", "init", tmp_path / "nope.json", tmp_path / "b.json")
    assert outcome.code == 2 and "not found" in outcome.stderr


def test_init_refuses_invalid_json(tmp_path: Path) -> None:
    directory = results_dir(tmp_path)
    config = directory / "config.json"
    config.write_text("{mode: native", encoding="utf-8")
    outcome = farm("desktop", "init", config, directory / "b.json")
    assert outcome.code == 2 and "not valid UTF-8 JSON" in outcome.stderr


def test_init_warns_about_open_permissions(tmp_path: Path) -> None:
    directory = results_dir(tmp_path)
    os.chmod(directory, 0o755)
    config = write_config(directory)
    os.chmod(config, 0o644)
    outcome = farm("desktop", "init", config, directory / "batch-000.json")
    assert outcome.code == 0
    assert "mode 755, expected 700" in outcome.stderr
    assert "mode 644, expected 600" in outcome.stderr


def test_init_batch_file_is_private(tmp_path: Path) -> None:
    directory = results_dir(tmp_path)
    out = directory / "batch-000.json"
    assert farm("desktop", "init", write_config(directory), out).code == 0
    assert out.stat().st_mode & 0o077 == 0
    assert json.loads(out.read_text(encoding="utf-8"))["suite"] == "desktop-v1"
