"""Hostile JSON in a config, a result, a batch version or the ledger index: one line naming the file, exit 2,
nothing written — never a traceback."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from farm.desktop.jsonfile import MAX_FILE_BYTES
from tests.desktop.fs_snapshot import assert_refused, snapshot
from tests.helpers.desktop import config_data, farm, planned_batch, result_data, results_dir, write_result

DEEP = {"array": "[" * 100_000, "object": '{"a":' * 100_000}


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    os.chmod(path, 0o600)
    return path


@pytest.mark.parametrize("payload", DEEP.values(), ids=DEEP.keys())
def test_init_refuses_a_deeply_nested_config(tmp_path: Path, payload: str) -> None:
    directory = results_dir(tmp_path)
    config = _write(directory / "config.json", payload)
    before = snapshot(tmp_path)
    line = assert_refused(farm("desktop", "init", config, directory / "batch-000.json"), config)
    assert "not valid UTF-8 JSON" in line and "recursion limit" in line
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("payload", DEEP.values(), ids=DEEP.keys())
def test_record_refuses_a_deeply_nested_result(tmp_path: Path, payload: str) -> None:
    directory, b0 = planned_batch(tmp_path)
    result = _write(directory / "result.json", payload)
    before = snapshot(tmp_path)
    outcome = farm("desktop", "record", b0, "calculator-add/1", result, directory / "batch-001.json")
    assert "recursion limit" in assert_refused(outcome, result)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("payload", DEEP.values(), ids=DEEP.keys())
def test_record_refuses_a_deeply_nested_batch(tmp_path: Path, payload: str) -> None:
    directory, _ = planned_batch(tmp_path)
    batch = _write(directory / "deep-batch.json", payload)
    result = write_result(directory / "result.json")
    before = snapshot(tmp_path)
    outcome = farm("desktop", "record", batch, "calculator-add/1", result, directory / "batch-001.json")
    assert "recursion limit" in assert_refused(outcome, batch)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("command", ["verify", "report"])
def test_reading_commands_refuse_a_deeply_nested_batch(tmp_path: Path, command: str) -> None:
    directory = results_dir(tmp_path)
    batch = _write(directory / "batch-000.json", DEEP["object"])
    assert "recursion limit" in assert_refused(farm("desktop", command, batch), batch)


def test_attach_refuses_a_deeply_nested_batch_and_creates_no_run(tmp_path: Path) -> None:
    directory = results_dir(tmp_path)
    batch = _write(directory / "batch-000.json", DEEP["array"])
    runs = tmp_path / "runs"
    assert_refused(farm("desktop", "attach", "night-1", batch, "--runs-dir", runs), batch)
    assert not runs.exists()


def test_verify_refuses_a_deeply_nested_ledger_index(tmp_path: Path) -> None:
    _, b0 = planned_batch(tmp_path)
    index = b0.with_name("batch-000.ledger.jsonl")
    _write(index, DEEP["array"] + "\n")
    assert "recursion limit" in assert_refused(farm("desktop", "verify", b0), index, "line 1")


def test_record_refuses_an_integer_too_long_to_read(tmp_path: Path) -> None:
    directory, b0 = planned_batch(tmp_path)
    text = json.dumps(result_data()).replace('"actions": 8', '"actions": ' + "9" * 5000)
    result = _write(directory / "result.json", text)
    before = snapshot(tmp_path)
    assert_refused(farm("desktop", "record", b0, "calculator-add/1", result, directory / "b1.json"), result)
    assert snapshot(tmp_path) == before


def test_record_refuses_a_result_over_the_size_limit(tmp_path: Path) -> None:
    directory, b0 = planned_batch(tmp_path)
    data = result_data(evidence=["x" * (MAX_FILE_BYTES + 1)])
    result = _write(directory / "result.json", json.dumps(data))
    outcome = farm("desktop", "record", b0, "calculator-add/1", result, directory / "b1.json")
    assert "larger than" in assert_refused(outcome, result)
    assert not (directory / "b1.json").exists()


def test_record_refuses_a_fifo_as_result_without_waiting(tmp_path: Path) -> None:
    directory, b0 = planned_batch(tmp_path)
    fifo = directory / "result.json"
    os.mkfifo(fifo)
    outcome = farm("desktop", "record", b0, "calculator-add/1", fifo, directory / "b1.json")
    assert "not a regular file" in assert_refused(outcome, fifo)


def test_record_refuses_a_directory_as_result(tmp_path: Path) -> None:
    directory, b0 = planned_batch(tmp_path)
    folder = directory / "result.json"
    folder.mkdir()
    outcome = farm("desktop", "record", b0, "calculator-add/1", folder, directory / "b1.json")
    assert "not a regular file" in assert_refused(outcome, folder)


def test_record_refuses_a_result_that_is_not_utf8(tmp_path: Path) -> None:
    directory, b0 = planned_batch(tmp_path)
    result = directory / "result.json"
    result.write_bytes(json.dumps(result_data()).encode("utf-8").replace(b"session", b"sess\xffion"))
    outcome = farm("desktop", "record", b0, "calculator-add/1", result, directory / "b1.json")
    assert "not valid UTF-8 JSON" in assert_refused(outcome, result)


def test_record_refuses_a_key_given_twice_in_the_result(tmp_path: Path) -> None:
    # Which value counts would depend on the reader: a reviewer's viewer might show the first, the ledger the last.
    directory, b0 = planned_batch(tmp_path)
    text = json.dumps(result_data("failed", reason="wrong value")).replace(
        '"status": "failed"', '"status": "failed", "status": "success"'
    )
    result = _write(directory / "result.json", text)
    before = snapshot(tmp_path)
    outcome = farm("desktop", "record", b0, "calculator-add/1", result, directory / "b1.json")
    assert "field status: appears more than once" in assert_refused(outcome, result)
    assert snapshot(tmp_path) == before


def test_init_refuses_a_key_given_twice_in_the_config(tmp_path: Path) -> None:
    directory = results_dir(tmp_path)
    text = json.dumps(config_data()).replace('"execution": "live"', '"execution": "simulated", "execution": "live"')
    config = _write(directory / "config.json", text)
    outcome = farm("desktop", "init", config, directory / "batch-000.json")
    assert "field execution: appears more than once" in assert_refused(outcome, config)
    assert not (directory / "batch-000.json").exists()


def test_init_refuses_a_config_that_is_not_an_object(tmp_path: Path) -> None:
    directory = results_dir(tmp_path)
    config = _write(directory / "config.json", "[]")
    outcome = farm("desktop", "init", config, directory / "batch-000.json")
    assert "desktop config: Input should be an object" in assert_refused(outcome, config)


@pytest.mark.parametrize("key", ["\u001b[2J\u001b[31mall good", "k" * 100_000])
def test_record_names_a_hostile_unknown_key_without_echoing_it(tmp_path: Path, key: str) -> None:
    directory, b0 = planned_batch(tmp_path)
    result = _write(directory / "result.json", json.dumps(dict(result_data(), **{key: 1})))
    line = assert_refused(farm("desktop", "record", b0, "calculator-add/1", result, directory / "b1.json"), result)
    assert "Extra inputs are not permitted" in line
    assert "\u001b" not in line and len(line) < 600


def test_init_refuses_an_output_under_a_file(tmp_path: Path) -> None:
    directory = results_dir(tmp_path)
    config = _write(directory / "config.json", json.dumps(config_data()))
    (directory / "f.txt").write_text("x", encoding="utf-8")
    before = snapshot(tmp_path)
    line = assert_refused(farm("desktop", "init", config, directory / "f.txt" / "batch-000.json"), "f.txt")
    assert "is not a directory" in line
    assert snapshot(tmp_path) == before


def test_record_refuses_an_output_under_a_file(tmp_path: Path) -> None:
    directory, b0 = planned_batch(tmp_path)
    result = write_result(directory / "r.json")
    (directory / "f.txt").write_text("x", encoding="utf-8")
    before = snapshot(tmp_path)
    outcome = farm("desktop", "record", b0, "calculator-add/1", result, directory / "f.txt" / "batch-001.json")
    assert "is not a directory" in assert_refused(outcome, "f.txt")
    assert snapshot(tmp_path) == before
