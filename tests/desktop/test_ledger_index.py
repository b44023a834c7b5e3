"""The ledger index next to the plan: it names the ledger's files, so stray files are never read, a finished
slot is refused wherever the new version would go, and an edit of the latest version shows."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

import farm.desktop.batch as batch_module
import farm.desktop.chain as chain_module
from farm.desktop.batch import Batch, BatchLink, dump_batch, load_batch, record_result, sha256_file
from farm.desktop.ledger import read_ledger
from farm.errors import FarmError
from tests.desktop.fs_snapshot import assert_refused, snapshot
from tests.helpers.desktop import farm, planned_batch, result_data, results_dir, write_config, write_result


def _index(b0: Path) -> Path:
    return b0.with_name("batch-000.ledger.jsonl")


def _chain(tmp_path: Path) -> tuple[Path, list[Path]]:
    """(results dir, [plan, v1, v2]); v1 next to the plan, v2 in another folder."""
    directory, b0 = planned_batch(tmp_path)
    b1 = directory / "batch-001.json"
    record_result(b0, "calculator-add/1", write_result(directory / "r1.json"), b1)
    b2 = tmp_path / "elsewhere" / "batch-002.json"
    record_result(b1, "calculator-add/2", write_result(directory / "r2.json", "failed"), b2)
    return directory, [b0, b1, b2]


def _hand_edit(path: Path) -> None:
    """A plausible edit that keeps the file valid: the recorded run needed fewer actions."""
    data = json.loads(path.read_text(encoding="utf-8"))
    slot = next(s for s in data["slots"] if s["id"] == data["recordedSlot"])
    slot["result"]["actions"] = 1
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


def test_init_writes_an_index_holding_the_plan(tmp_path: Path) -> None:
    directory = results_dir(tmp_path)
    b0 = directory / "batch-000.json"
    assert farm("desktop", "init", write_config(directory), b0).code == 0
    entries = read_ledger(_index(b0))
    assert [(e.sequence, e.file, e.sha256, e.recordedSlot) for e in entries] == [
        (0, "batch-000.json", sha256_file(b0), None)
    ]


def test_record_appends_each_version_to_the_index_wherever_it_is_written(tmp_path: Path) -> None:
    _, (b0, b1, b2) = _chain(tmp_path)
    entries = read_ledger(_index(b0))
    assert [(e.sequence, e.file, e.sha256, e.recordedSlot) for e in entries] == [
        (0, "batch-000.json", sha256_file(b0), None),
        (1, "batch-001.json", sha256_file(b1), "calculator-add/1"),
        (2, "../elsewhere/batch-002.json", sha256_file(b2), "calculator-add/2"),
    ]


def test_init_refuses_a_plan_whose_index_exists(tmp_path: Path) -> None:
    directory = results_dir(tmp_path)
    config = write_config(directory)
    index = directory / "batch-000.ledger.jsonl"
    index.write_text("left over\n", encoding="utf-8")
    before = snapshot(tmp_path)
    line = assert_refused(farm("desktop", "init", config, directory / "batch-000.json"), index)
    assert "ledger index already exists" in line
    assert snapshot(tmp_path) == before


# Item: a stray file next to the ledger must not break it. The seed keeps config.json and result.json in the
# results folder, so foreign JSON there is normal; the ledger finds its files through the index and never opens
# the others.
STRAY = {
    "deep-array": "[" * 100_000,
    "deep-object": '{"a":' * 100_000,
    "binary": "\udcff\udcfe",
    "fake-successor": '{"format": "farm.desktop.batch/1", "previous": {"file": "batch-000.json", "sha256": "x"}}',
}


@pytest.mark.parametrize("content", STRAY.values(), ids=STRAY.keys())
def test_record_ignores_a_stray_json_file_in_the_results_folder(tmp_path: Path, content: str) -> None:
    directory, b0 = planned_batch(tmp_path)
    (directory / "stray.json").write_bytes(content.encode("utf-8", "surrogateescape"))
    outcome = farm(
        "desktop", "record", b0, "calculator-add/1", write_result(directory / "r.json"), directory / "batch-001.json"
    )
    assert outcome.code == 0, outcome.stderr
    assert outcome.stderr == ""
    assert farm("desktop", "verify", directory / "batch-001.json").code == 0


def test_record_ignores_a_stray_file_in_the_output_folder(tmp_path: Path) -> None:
    directory, b0 = planned_batch(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    (other / "junk.json").write_text("[" * 100_000, encoding="utf-8")
    result = write_result(directory / "r.json")
    outcome = farm("desktop", "record", b0, "calculator-add/1", result, other / "batch-001.json")
    assert outcome.code == 0, outcome.stderr


# Item: the fork guard keys on the batch (its index), not on the folders it happens to scan.
@pytest.mark.parametrize("folder", ["results", "elsewhere", "third"])
def test_record_refuses_a_slot_finished_in_a_later_version_wherever_the_output_goes(
    tmp_path: Path, folder: str
) -> None:
    directory, (_, b1, b2) = _chain(tmp_path)
    out = tmp_path / folder / "b22.json"
    result = write_result(directory / "r3.json")
    before = snapshot(tmp_path)
    outcome = farm("desktop", "record", b1, "calculator-add/2", result, out)
    line = assert_refused(outcome, b1, "slot calculator-add/2 is already recorded in", os.path.normpath(b2))
    assert "a finished slot is never recorded twice" in line
    assert snapshot(tmp_path) == before


def test_record_refuses_a_pending_slot_of_an_old_version_in_another_folder(tmp_path: Path) -> None:
    directory, (b0, b1, _) = _chain(tmp_path)
    out = tmp_path / "third" / "fork.json"
    result = write_result(directory / "r3.json")
    before = snapshot(tmp_path)
    outcome = farm("desktop", "record", b0, "browser-form/1", result, out)
    assert "is not the latest version" in assert_refused(outcome, b0, b1)
    assert snapshot(tmp_path) == before


def test_record_refuses_the_same_slot_twice_from_one_version_into_two_folders(tmp_path: Path) -> None:
    directory, b0 = planned_batch(tmp_path)
    result = write_result(directory / "r.json")
    first = farm("desktop", "record", b0, "calculator-add/1", result, tmp_path / "x" / "b1.json")
    assert first.code == 0, first.stderr
    before = snapshot(tmp_path)
    again = farm("desktop", "record", b0, "calculator-add/1", result, tmp_path / "y" / "b1.json")
    assert_refused(again, "slot calculator-add/1 is already recorded in")
    assert snapshot(tmp_path) == before


def test_record_extends_the_latest_version_in_another_folder(tmp_path: Path) -> None:
    directory, (_, _, b2) = _chain(tmp_path)
    out = tmp_path / "third" / "batch-003.json"
    outcome = farm("desktop", "record", b2, "browser-form/1", write_result(directory / "r3.json"), out)
    assert outcome.code == 0, outcome.stderr
    verified = farm("desktop", "verify", out)
    assert verified.code == 0 and "chain ok: 4 version(s)" in verified.stdout


def test_verify_refuses_a_fork_the_index_does_not_list(tmp_path: Path) -> None:
    # A second history of one slot, as the old folder-scanning guard let `record` write it: valid on its own.
    directory, (_, b1, _) = _chain(tmp_path)
    batch = load_batch(b1)
    fork_dir = tmp_path / "fork"
    fork_dir.mkdir()
    result = write_result(directory / "r9.json")
    slots = [
        s.model_copy(
            update={
                "status": "success",
                "result": load_batch(b1).slot("calculator-add/1").result,
                "recordedAt": "2026-02-04T10:00:00.000000Z",
                "resultSha256": sha256_file(result),
            }
        )
        if s.id == "calculator-add/2"
        else s
        for s in batch.slots
    ]
    fork = Batch.model_validate(
        batch.model_copy(
            update={
                "sequence": 2,
                "createdAt": "2099-01-01T00:00:00.000000Z",
                "previous": BatchLink(file="../results/batch-001.json", sha256=sha256_file(b1)),
                "recordedSlot": "calculator-add/2",
                "slots": slots,
            }
        ).model_dump()
    )
    fork_path = fork_dir / "batch-002.json"
    fork_path.write_text(dump_batch(fork), encoding="utf-8")
    line = assert_refused(farm("desktop", "verify", fork_path), fork_path)
    assert "is not version 2 of the ledger index" in line


# Item: the hash of the latest version is kept in the index, so a hand edit of it shows.
def test_verify_refuses_a_hand_edited_latest_version(tmp_path: Path) -> None:
    _, (_, _, b2) = _chain(tmp_path)
    _hand_edit(b2)
    line = assert_refused(farm("desktop", "verify", b2), b2)
    assert "content changed after it was recorded" in line


def test_verify_refuses_a_hand_edited_plan_with_no_successor(tmp_path: Path) -> None:
    _, b0 = planned_batch(tmp_path)
    data = json.loads(b0.read_text(encoding="utf-8"))
    data["config"]["mainModel"] = "model-b (thinking: low)"
    b0.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    assert "content changed after it was recorded" in assert_refused(farm("desktop", "verify", b0), b0)


def test_verify_refuses_a_whitespace_edit_of_the_latest_version(tmp_path: Path) -> None:
    _, (_, _, b2) = _chain(tmp_path)
    b2.write_text(b2.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert "content changed after it was recorded" in assert_refused(farm("desktop", "verify", b2), b2)


def test_record_refuses_to_build_on_a_hand_edited_latest_version(tmp_path: Path) -> None:
    # Extending the edit would hash it into the next version and launder it.
    directory, (_, _, b2) = _chain(tmp_path)
    _hand_edit(b2)
    result = write_result(directory / "r3.json")
    before = snapshot(tmp_path)
    outcome = farm("desktop", "record", b2, "browser-form/1", result, directory / "b3.json")
    assert "content changed after it was recorded" in assert_refused(outcome, b2)
    assert snapshot(tmp_path) == before


def test_report_marks_a_hand_edited_latest_version_unverified(tmp_path: Path) -> None:
    _, (_, _, b2) = _chain(tmp_path)
    _hand_edit(b2)
    outcome = farm("desktop", "report", b2, "--json")
    assert outcome.code == 0, outcome.stderr
    chain = json.loads(outcome.stdout)["chain"]
    assert chain["verified"] is False and "content changed after it was recorded" in chain["problem"]


def test_verify_refuses_a_missing_index(tmp_path: Path) -> None:
    _, (b0, _, b2) = _chain(tmp_path)
    _index(b0).unlink()
    assert "ledger index not found" in assert_refused(farm("desktop", "verify", b2), _index(b0))


def test_verify_refuses_a_version_cut_from_the_index(tmp_path: Path) -> None:
    _, (b0, _, b2) = _chain(tmp_path)
    index = _index(b0)
    index.write_text("".join(index.read_text(encoding="utf-8").splitlines(keepends=True)[:2]), encoding="utf-8")
    assert "is not in the ledger index" in assert_refused(farm("desktop", "verify", b2), b2)


def test_verify_refuses_an_index_whose_last_line_is_cut(tmp_path: Path) -> None:
    _, (b0, _, b2) = _chain(tmp_path)
    index = _index(b0)
    index.write_text(index.read_text(encoding="utf-8")[:-10], encoding="utf-8")
    assert "last line is incomplete" in assert_refused(farm("desktop", "verify", b2), index)


def test_verify_refuses_an_index_with_versions_out_of_order(tmp_path: Path) -> None:
    _, (b0, _, b2) = _chain(tmp_path)
    index = _index(b0)
    lines = index.read_text(encoding="utf-8").splitlines(keepends=True)
    index.write_text(lines[0] + lines[2] + lines[1], encoding="utf-8")
    assert "field sequence" in assert_refused(farm("desktop", "verify", b2), f"{index} line 2")


def test_verify_of_an_older_version_passes_and_names_the_latest(tmp_path: Path) -> None:
    _, (b0, b1, b2) = _chain(tmp_path)
    outcome = farm("desktop", "verify", b1)
    assert outcome.code == 0, outcome.stderr
    assert "chain ok: 2 version(s)" in outcome.stdout
    assert "is not the latest version" in outcome.stderr and os.path.normpath(b2) in outcome.stderr


def test_record_of_an_over_budget_success_leaves_the_index_as_it_was(tmp_path: Path) -> None:
    directory, b0 = planned_batch(tmp_path)
    before = _index(b0).read_bytes()
    result = directory / "r.json"
    result.write_text(json.dumps(result_data(duration_ms=240_000, actions=31)), encoding="utf-8")
    assert farm("desktop", "record", b0, "calculator-add/1", result, directory / "b1.json").code == 2
    assert _index(b0).read_bytes() == before


def test_record_rechecks_the_index_under_its_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Two records from one version at once: the second walked the chain before the first appended to the index.
    directory, b0 = planned_batch(tmp_path)
    stale = chain_module.check_chain(b0)
    record_result(b0, "calculator-add/1", write_result(directory / "r1.json"), directory / "batch-001.json")
    monkeypatch.setattr(chain_module, "check_chain", lambda _path: stale)
    before = snapshot(tmp_path)
    with pytest.raises(FarmError, match="is not the latest version"):
        record_result(b0, "calculator-add/2", directory / "r1.json", tmp_path / "other" / "batch-001.json")
    assert snapshot(tmp_path) == before


def test_record_takes_back_the_new_version_when_the_index_cannot_be_appended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def disk_full(_fd: int, _entry: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    directory, b0 = planned_batch(tmp_path)
    result = write_result(directory / "r.json")
    monkeypatch.setattr(batch_module, "append_entry", disk_full)
    before = snapshot(tmp_path)
    with pytest.raises(FarmError, match="cannot append to the ledger index"):
        record_result(b0, "calculator-add/1", result, directory / "batch-001.json")
    assert snapshot(tmp_path) == before


def test_verify_refuses_an_index_that_names_another_slot(tmp_path: Path) -> None:
    _, (b0, _, b2) = _chain(tmp_path)
    index = _index(b0)
    index.write_text(
        index.read_text(encoding="utf-8").replace('"calculator-add/2"', '"browser-form/1"'), encoding="utf-8"
    )
    assert "field recordedSlot" in assert_refused(farm("desktop", "verify", b2), index)


def test_every_ledger_file_is_private_whatever_the_umask(tmp_path: Path) -> None:
    # Shared reports take the umask's mode; the ledger stays in the operator's private folder (seed: mkdir -m 700).
    old = os.umask(0o022)
    try:
        _, (b0, b1, b2) = _chain(tmp_path)
    finally:
        os.umask(old)
    for path in (b0, b1, b2, _index(b0)):
        assert path.stat().st_mode & 0o077 == 0, path
