"""Values of the wrong kind are refused by field, never coerced: true is not 1, 2.0 and NaN are not counts,
a control character is not part of a name, and a hand-edited batch version is held to the same rules."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from farm.desktop.batch import record_result
from tests.desktop.fs_snapshot import assert_refused, snapshot
from tests.helpers.desktop import config_data, farm, planned_batch, result_data, results_dir, write_result

COUNTS = ["humanInterventions", "plannerHandoffs", "actions", "wrongActions"]


def _with_raw(data: dict[str, object], field: str, raw: str) -> str:
    """`data` as JSON text with `field` set to the literal JSON text `raw` (NaN, huge numbers, …)."""
    data = dict(data, **{field: "@@RAW@@"})
    return json.dumps(data, ensure_ascii=False).replace('"@@RAW@@"', raw)


def _init_refusal(tmp_path: Path, text: str) -> str:
    directory = results_dir(tmp_path)
    config = directory / "config.json"
    config.write_text(text, encoding="utf-8")
    os.chmod(config, 0o600)
    before = snapshot(tmp_path)
    line = assert_refused(farm("desktop", "init", config, directory / "batch-000.json"), config)
    assert snapshot(tmp_path) == before
    return line


def _record_refusal(tmp_path: Path, text: str) -> str:
    directory, b0 = planned_batch(tmp_path)
    result = directory / "result.json"
    result.write_text(text, encoding="utf-8")
    before = snapshot(tmp_path)
    line = assert_refused(farm("desktop", "record", b0, "calculator-add/1", result, directory / "b1.json"), result)
    assert snapshot(tmp_path) == before
    return line


@pytest.mark.parametrize("raw", ["true", "false", "2.0", "NaN", "Infinity", '"2"', "101", "1000000000", "null"])
def test_init_refuses_repetitions_that_are_not_a_small_whole_number(tmp_path: Path, raw: str) -> None:
    assert "field repetitions" in _init_refusal(tmp_path, _with_raw(config_data(), "repetitions", raw))


def test_init_accepts_the_largest_repetitions(tmp_path: Path) -> None:
    directory = results_dir(tmp_path)
    config = directory / "config.json"
    config.write_text(_with_raw(config_data(), "repetitions", "100"), encoding="utf-8")
    os.chmod(config, 0o600)
    assert farm("desktop", "init", config, directory / "batch-000.json").code == 0


@pytest.mark.parametrize("value", ["model-a\u001b[31m", "model-a\u202e", "model-a\nline two", "model\u0000a"])
def test_init_refuses_a_control_character_in_a_config_value(tmp_path: Path, value: str) -> None:
    line = _init_refusal(tmp_path, json.dumps(config_data(mainModel=value)))
    assert "field mainModel" in line and "control character" in line


@pytest.mark.parametrize("raw", ["true", "false", "2.0", "NaN", "-Infinity", '"3"', "10001", "-1", "null"])
def test_record_refuses_an_action_count_that_is_not_a_count(tmp_path: Path, raw: str) -> None:
    assert "field actions" in _record_refusal(tmp_path, _with_raw(result_data(), "actions", raw))


@pytest.mark.parametrize("field", COUNTS)
def test_record_refuses_true_as_a_count(tmp_path: Path, field: str) -> None:
    line = _record_refusal(tmp_path, _with_raw(result_data(), field, "true"))
    assert f"field {field}" in line and "true/false" in line


@pytest.mark.parametrize(
    "stamp", ["٢٠٢٦-02-03T09:00:00.000Z", "２０２６-02-03T09:00:00.000Z", "2026-02-30T09:00:00.000Z"]
)
def test_record_refuses_a_timestamp_that_is_not_a_utc_clock_reading(tmp_path: Path, stamp: str) -> None:
    assert "field startedAt" in _record_refusal(tmp_path, json.dumps(result_data(startedAt=stamp)))


def test_record_quotes_only_the_start_of_a_huge_bad_timestamp(tmp_path: Path) -> None:
    line = _record_refusal(tmp_path, json.dumps(result_data(startedAt="9" * 100_000)))
    assert "field startedAt" in line and len(line) < 600


@pytest.mark.parametrize(
    ("field", "value"),
    [("reason", "wrong value\u001b[2J"), ("verification", "shows 30244\u0000"), ("evidence", ["trace\nsecond"])],
)
def test_record_refuses_a_control_character_in_free_text(tmp_path: Path, field: str, value: object) -> None:
    status = "failed" if field == "reason" else "success"
    line = _record_refusal(tmp_path, json.dumps(result_data(status, **{field: value})))
    assert f"field {field}" in line and "control character" in line


def test_record_keeps_line_breaks_in_the_verification(tmp_path: Path) -> None:
    directory, b0 = planned_batch(tmp_path)
    result = write_result(directory / "r.json", verification="body:\nDeskhand desktop benchmark, line one.\n\t(ok)")
    assert farm("desktop", "record", b0, "textedit-type/1", result, directory / "b1.json").code == 0


def _latest_edited(tmp_path: Path, edit: str, raw: str) -> Path:
    """A two-version chain whose latest file got `edit` (a dotted path) set to the JSON text `raw` by hand."""
    directory, b0 = planned_batch(tmp_path)
    b1 = directory / "batch-001.json"
    record_result(b0, "calculator-add/1", write_result(directory / "r.json"), b1)
    data = json.loads(b1.read_text(encoding="utf-8"))
    *parents, last = edit.split(".")
    target = data
    for part in parents:
        target = target[int(part)] if isinstance(target, list) else target[part]
    target[last] = "@@RAW@@"
    b1.write_text(json.dumps(data, ensure_ascii=False).replace('"@@RAW@@"', raw), encoding="utf-8")
    return b1


@pytest.mark.parametrize(
    ("edit", "raw"),
    [
        ("sequence", "true"),
        ("slots.0.repetition", "true"),
        ("slots.0.result.actions", "NaN"),
        ("config.repetitions", "2.0"),
        ("createdAt", '"yesterday"'),
        ("slots.0.recordedAt", '"2026-02-03 10:00"'),
        ("slots.0.resultSha256", '"not-a-hash"'),
        ("previous.sha256", '"ABC"'),
        ("previous.file", '"/etc/passwd"'),
        ("previous.file", '"batch-000.json\\u001b"'),
        ("recordedSlot", '"nope/1"'),
    ],
)
def test_verify_refuses_a_hand_edited_value_of_the_wrong_kind(tmp_path: Path, edit: str, raw: str) -> None:
    b1 = _latest_edited(tmp_path, edit, raw)
    assert f"field {edit}" in assert_refused(farm("desktop", "verify", b1), b1)
