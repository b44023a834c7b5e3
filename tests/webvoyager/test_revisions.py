"""The hash-chained result revisions and `results.ndjson`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from farm.errors import FarmError
from farm.fsutil import create_new_text
from tests.helpers.webvoyager import make_view
from web_bench.webvoyager import revisions
from web_bench.webvoyager.revisions import (
    commit,
    current,
    read_chain,
    read_state,
    rebuild,
    recover,
    revision_path,
)
from web_bench.webvoyager.run_tree import RunTree, sha256_json


def _three(tmp_path: Path) -> RunTree:
    tree = RunTree(tmp_path)
    commit(tree, make_view("Apple--0", judged=False), "agent")
    commit(tree, make_view("Apple--1", judged=False), "agent")
    commit(tree, make_view("Apple--0", passed=False), "judge")
    return tree


def test_commits_chain_by_the_previous_hash(tmp_path: Path) -> None:
    chain = read_chain(_three(tmp_path))
    assert [r.seq for r in chain] == [1, 2, 3]
    assert chain[0].prev_sha256 is None
    assert [r.prev_sha256 for r in chain[1:]] == [chain[0].sha256, chain[1].sha256]


def test_revision_files_are_named_with_eight_digits(tmp_path: Path) -> None:
    tree = _three(tmp_path)
    assert sorted(p.name for p in tree.revisions_dir.iterdir()) == ["00000001.json", "00000002.json",
                                                                    "00000003.json"]


def test_revision_hash_is_the_canonical_json_of_its_body(tmp_path: Path) -> None:
    tree = _three(tmp_path)
    raw = json.loads(revision_path(tree, 2).read_text())
    sha = raw.pop("sha256")
    assert sha == sha256_json(raw)
    assert raw["view"]["task_id"] == "Apple--1"


def test_current_view_is_the_latest_revision_per_task(tmp_path: Path) -> None:
    views = current(_three(tmp_path))
    assert list(views) == ["Apple--0", "Apple--1"]
    assert views["Apple--0"].judge is not None and views["Apple--0"].judge.passed is False
    assert views["Apple--1"].judge is None


def test_results_ndjson_gets_one_line_per_commit_with_the_pass_key(tmp_path: Path) -> None:
    tree = _three(tmp_path)
    lines = [json.loads(line) for line in tree.results.read_text().splitlines()]
    assert [line["task_id"] for line in lines] == ["Apple--0", "Apple--1", "Apple--0"]
    assert lines[2]["judge"]["pass"] is False


def test_an_edited_revision_is_refused(tmp_path: Path) -> None:
    tree = _three(tmp_path)
    path = revision_path(tree, 2)
    path.write_text(path.read_text().replace('"completed"', '"error"', 1))
    with pytest.raises(FarmError, match="00000002.json: revision content does not match its sha256.*damaged"):
        current(tree)


def test_an_edited_revision_with_a_recomputed_hash_breaks_the_next_link(tmp_path: Path) -> None:
    tree = _three(tmp_path)
    path = revision_path(tree, 2)
    raw = json.loads(path.read_text())
    raw["view"]["agent"]["final_answer"] = "forged"
    raw.pop("sha256")
    path.write_text(json.dumps({**raw, "sha256": sha256_json(raw)}))
    with pytest.raises(FarmError, match="00000003.json: prev_sha256 does not match revision 2"):
        current(tree)


def test_a_deleted_middle_revision_is_refused(tmp_path: Path) -> None:
    tree = _three(tmp_path)
    revision_path(tree, 2).unlink()
    with pytest.raises(FarmError, match="00000002.json: revision missing from the chain"):
        current(tree)


def test_reordered_revisions_are_refused(tmp_path: Path) -> None:
    tree = _three(tmp_path)
    two, three = revision_path(tree, 2), revision_path(tree, 3)
    a, b = two.read_bytes(), three.read_bytes()
    two.write_bytes(b)
    three.write_bytes(a)
    with pytest.raises(FarmError, match="00000002.json: holds revision 3"):
        current(tree)


def test_a_truncated_revision_is_refused(tmp_path: Path) -> None:
    tree = _three(tmp_path)
    path = revision_path(tree, 3)
    path.write_bytes(path.read_bytes()[:50])
    with pytest.raises(FarmError, match="00000003.json: revision is unreadable or truncated"):
        current(tree)


def test_a_commit_onto_an_edited_head_is_refused(tmp_path: Path) -> None:
    tree = _three(tmp_path)
    path = revision_path(tree, 3)
    path.write_text(path.read_text().replace('"judge"', '"rerun"', 1))
    with pytest.raises(FarmError, match="00000003.json"):
        commit(tree, make_view("Apple--2"), "agent")
    assert not revision_path(tree, 4).exists()


def test_a_stray_file_in_the_chain_is_refused(tmp_path: Path) -> None:
    tree = _three(tmp_path)
    (tree.revisions_dir / "notes.txt").write_text("x")
    with pytest.raises(FarmError, match="notes.txt: unexpected entry"):
        current(tree)


def test_a_leftover_temp_file_is_ignored(tmp_path: Path) -> None:
    tree = _three(tmp_path)
    (tree.revisions_dir / ".00000004.json.tmp123").write_text("{")
    assert len(read_chain(tree)) == 3


def test_revision_files_are_created_exclusively(tmp_path: Path) -> None:
    tree = _three(tmp_path)
    before = revision_path(tree, 3).read_bytes()
    with pytest.raises(FarmError, match="already exists"):
        create_new_text(revision_path(tree, 3), "{}")
    assert revision_path(tree, 3).read_bytes() == before


def test_a_concurrent_writer_of_the_same_seq_is_refused_not_overwritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _three(tmp_path)
    commit(tree, make_view("Apple--2"), "agent")
    theirs = revision_path(tree, 4).read_bytes()
    # This scheduler listed the directory before the other one created revision 4.
    monkeypatch.setattr(revisions, "_seqs", lambda directory: [1, 2, 3])
    with pytest.raises(FarmError, match="00000004.json: result revision .*already exists"):
        commit(tree, make_view("Apple--3"), "agent")
    assert revision_path(tree, 4).read_bytes() == theirs
    assert "Apple--3" not in tree.results.read_text()


def test_a_torn_last_results_line_is_skipped_and_counted(tmp_path: Path) -> None:
    tree = _three(tmp_path)
    with tree.results.open("a") as handle:
        handle.write('{"schema_version": 1, "task_id": "Apple--1", "ag')
    state = read_state(tree)
    assert state.results_torn == 1
    assert state.results_behind == []
    assert set(state.views) == {"Apple--0", "Apple--1"}


def test_a_commit_after_a_torn_results_line_keeps_its_line_whole(tmp_path: Path) -> None:
    tree = _three(tmp_path)
    with tree.results.open("a") as handle:
        handle.write('{"task_id": "Ap')
    commit(tree, make_view("Apple--2"), "agent")
    state = read_state(tree)
    assert state.results_torn == 1
    assert state.results_behind == []


def test_a_crash_between_the_revision_and_the_results_line_is_recovered(tmp_path: Path) -> None:
    tree = _three(tmp_path)
    lines_before = tree.results.read_text()
    commit(tree, make_view("Apple--1", passed=True), "judge")
    tree.results.write_text(lines_before)  # the append never happened
    state = read_state(tree)
    assert state.results_behind == ["Apple--1"]
    assert state.views["Apple--1"].judge is not None  # the revision wins
    assert recover(tree) == ["Apple--1"]
    assert read_state(tree).results_behind == []
    assert json.loads(tree.results.read_text().splitlines()[-1])["judge"]["pass"] is True


def test_a_results_line_without_a_revision_loses_to_the_chain(tmp_path: Path) -> None:
    tree = _three(tmp_path)
    with tree.results.open("a") as handle:
        handle.write(make_view("Apple--1", passed=True).model_dump_json(by_alias=True) + "\n")
        handle.write(make_view("Apple--7").model_dump_json(by_alias=True) + "\n")
    state = read_state(tree)
    assert state.views["Apple--1"].judge is None
    assert "Apple--7" not in state.views
    assert state.results_behind == ["Apple--1", "Apple--7"]
    assert recover(tree) == ["Apple--1"]


def test_an_empty_tree_has_no_views(tmp_path: Path) -> None:
    assert current(RunTree(tmp_path)) == {}


def test_rebuild_writes_a_new_chain_in_the_given_order(tmp_path: Path) -> None:
    tree = _three(tmp_path)
    views = [make_view("Apple--1", judged=False), make_view("Apple--0", judged=False)]
    rebuild(tree, views, "reset")
    chain = read_chain(tree)
    assert [(r.seq, r.task_id, r.reason) for r in chain] == [(1, "Apple--1", "reset"), (2, "Apple--0", "reset")]
    assert [json.loads(line)["task_id"] for line in tree.results.read_text().splitlines()] == ["Apple--1",
                                                                                                "Apple--0"]
    assert read_state(tree).results_behind == []
    assert not list(tmp_path.glob("*result-revisions.*"))


def test_rebuild_can_keep_the_old_chain_aside(tmp_path: Path) -> None:
    tree = _three(tmp_path)
    old = revision_path(tree, 3).read_bytes()
    rebuild(tree, [make_view("Apple--0")], "backfill", keep_old=True)
    (aside,) = tmp_path.glob("result-revisions.old-*")
    assert (aside / "00000003.json").read_bytes() == old
    assert len(read_chain(tree)) == 1


def test_rebuild_refuses_a_task_twice(tmp_path: Path) -> None:
    tree = _three(tmp_path)
    with pytest.raises(FarmError, match="twice"):
        rebuild(tree, [make_view("Apple--0"), make_view("Apple--0")], "reset")
    assert len(read_chain(tree)) == 3


def test_an_interrupted_rebuild_is_named(tmp_path: Path) -> None:
    tree = _three(tmp_path)
    tree.revisions_dir.rename(tmp_path / ".result-revisions.new-20260916T000000Z-1")
    with pytest.raises(FarmError, match="rebuild of the revision chain was interrupted"):
        current(tree)


def test_no_commit_starts_a_new_chain_beside_an_interrupted_rebuild(tmp_path: Path) -> None:
    tree = _three(tmp_path)
    tree.revisions_dir.rename(tmp_path / ".result-revisions.new-20260916T000000Z-1")
    with pytest.raises(FarmError, match="interrupted"):
        commit(tree, make_view("Apple--2"), "agent")
    assert not tree.revisions_dir.exists()


def test_a_commit_of_an_unsafe_task_id_is_refused(tmp_path: Path) -> None:
    view = make_view("Apple--0").model_copy(update={"task_id": "../Apple--0"})
    with pytest.raises(FarmError, match="task id"):
        commit(RunTree(tmp_path), view, "agent")
    assert not (tmp_path / "result-revisions").exists()
