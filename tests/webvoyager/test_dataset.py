"""The pinned WebVoyager data: upstream pins, the 126-task set, its canonical hash, and task selection."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from farm.errors import FarmError
from tests.helpers.shared_data import shared_data
from web_bench.webvoyager.dataset import (
    DATA_FILES,
    SET_126_IDS,
    SET_126_SHA256,
    TASKS_FILE,
    canonical_json,
    data_file,
    data_file_hashes,
    load_tasks,
    locate,
    select,
    task_sha256,
    tasks_from_reference_file,
    tasks_sha256,
)
from web_bench.webvoyager.model import WvTask

SHARED_549 = "WebVoyager_data.549.json"


def _shared() -> Path:
    return shared_data("webvoyager")


def _tasks() -> list[WvTask]:
    return load_tasks(_shared())


def _task(task_id: str = "Apple--0", text: str = "Find it.") -> WvTask:
    return WvTask(task_id=task_id, confirmed_task=text, website="https://www.apple.com/", site="Apple")


def _copy_549(tmp_path: Path) -> Path:
    """A data directory in tmp_path holding only a copy of the 549-task file under its data-directory name."""
    data = tmp_path / "data"
    data.mkdir()
    shutil.copyfile(_shared() / SHARED_549, data / TASKS_FILE)
    return data


def test_every_data_file_pins_a_commit_and_its_raw_url() -> None:
    for entry in DATA_FILES:
        assert re.fullmatch(r"[0-9a-f]{40}", entry.commit), entry.name
        assert re.fullmatch(r"[0-9a-f]{64}", entry.sha256), entry.name
        assert entry.url == f"https://raw.githubusercontent.com/{entry.repo}/{entry.commit}/{entry.path}"
    pins = {entry.name: (entry.repo, entry.commit, entry.path) for entry in DATA_FILES}
    assert pins == {
        "WebVoyager_data.json": ("oktton/opencode-browser", "856867996e73f7dcc5e39827bf2af7555bd63d40",
                                 "assets/benchmark/WebVoyager_data.json"),
        "judge-prompt.md": ("oktton/opencode-browser", "856867996e73f7dcc5e39827bf2af7555bd63d40",
                            "assets/benchmark/judge-prompt.md"),
        "WebVoyager_data.jsonl": ("MinorJerry/WebVoyager", "5a7896738c10bfb8b9edccce6bb0e0411f8ae569",
                                  "data/WebVoyager_data.jsonl"),
        "reference_answer.json": ("MinorJerry/WebVoyager", "5a7896738c10bfb8b9edccce6bb0e0411f8ae569",
                                  "data/reference_answer.json"),
        "LICENSE": ("MinorJerry/WebVoyager", "5a7896738c10bfb8b9edccce6bb0e0411f8ae569", "LICENSE"),
    }


def test_data_file_hashes_are_the_pins_by_name() -> None:
    hashes = data_file_hashes()
    assert list(hashes) == [entry.name for entry in DATA_FILES]
    assert hashes["judge-prompt.md"] == "bcdf403484823037eaeb6cec7918b966fe90ee31a30bc8d69094d2ff42747ccf"


def test_pinned_hashes_and_sizes_match_the_shared_copies() -> None:
    for entry in DATA_FILES:
        path = locate(_shared(), entry)
        assert path is not None, entry.name
        raw = path.read_bytes()
        assert (hashlib.sha256(raw).hexdigest(), len(raw)) == (entry.sha256, entry.size), entry.name


def test_set_126_ids_are_the_three_sites_of_the_549_file_in_file_order() -> None:
    items = json.loads((_shared() / SHARED_549).read_bytes())
    assert len(items) == 549
    expected = [item["task_id"] for item in items
                if item["task_id"].split("--")[0] in {"Allrecipes", "Apple", "Amazon"}]
    assert list(SET_126_IDS) == expected
    assert Counter(task_id.split("--")[0] for task_id in SET_126_IDS) == {"Allrecipes": 45, "Apple": 42, "Amazon": 39}
    assert len(set(SET_126_IDS)) == 126


def test_load_tasks_gives_the_126_with_their_sites_and_pinned_hash() -> None:
    tasks = _tasks()
    assert [task.task_id for task in tasks] == list(SET_126_IDS)
    assert all(task.site == task.task_id.split("--")[0] for task in tasks)
    assert tasks_sha256(tasks) == SET_126_SHA256
    assert tasks[0].confirmed_task.startswith("Provide a recipe for vegetarian lasagna")
    assert tasks[0].website == "https://www.allrecipes.com/"


def test_load_tasks_reads_the_data_directory_name(tmp_path: Path) -> None:
    assert [task.task_id for task in load_tasks(_copy_549(tmp_path))] == list(SET_126_IDS)


def test_load_tasks_refuses_a_missing_file_naming_it_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(FarmError) as caught:
        load_tasks(tmp_path)
    assert str(tmp_path / TASKS_FILE) in caught.value.line()
    assert "farm webvoyager data --fetch" in caught.value.line()
    assert "--from DIR" in caught.value.line()


def test_load_tasks_refuses_one_byte_changed(tmp_path: Path) -> None:
    data = _copy_549(tmp_path)
    raw = bytearray((data / TASKS_FILE).read_bytes())
    offset = raw.index(b"vegetarian lasagna")
    raw[offset] = ord("V")
    (data / TASKS_FILE).write_bytes(bytes(raw))
    with pytest.raises(FarmError) as caught:
        load_tasks(data)
    line = caught.value.line()
    assert str(data / TASKS_FILE) in line
    assert data_file(TASKS_FILE).sha256 in line
    assert hashlib.sha256(bytes(raw)).hexdigest() in line


def test_a_changed_task_text_is_caught_by_the_set_hash_even_past_the_file_hash() -> None:
    raw = (_shared() / SHARED_549).read_bytes().replace(b"uses zucchini.", b"uses zucchini!", 1)
    with pytest.raises(FarmError, match=f"the 126 tasks' SHA-256 .* is not the pinned {SET_126_SHA256}"):
        tasks_from_reference_file(raw, Path("changed.json"))


def test_a_reordered_set_is_caught_by_the_ids() -> None:
    items = json.loads((_shared() / SHARED_549).read_bytes())
    items[0], items[1] = items[1], items[0]
    with pytest.raises(FarmError, match="not the pinned 126"):
        tasks_from_reference_file(json.dumps(items).encode(), Path("reordered.json"))


def test_a_dropped_task_is_caught_and_named() -> None:
    items = [item for item in json.loads((_shared() / SHARED_549).read_bytes()) if item["task_id"] != "Apple--7"]
    with pytest.raises(FarmError, match="missing \\['Apple--7'\\]"):
        tasks_from_reference_file(json.dumps(items).encode(), Path("short.json"))


def test_a_task_with_an_extra_field_is_refused() -> None:
    items = json.loads((_shared() / SHARED_549).read_bytes())
    items[3]["answer"] = "x"
    with pytest.raises(FarmError, match="task #3"):
        tasks_from_reference_file(json.dumps(items).encode(), Path("extra.json"))


def test_canonical_json_is_sorted_compact_utf8() -> None:
    task = _task(text="Café – “quoted”")
    assert canonical_json(task) == (
        '{"confirmed_task":"Café – “quoted”","task_id":"Apple--0","website":"https://www.apple.com/"}'
    ).encode()
    assert canonical_json([task, task]) == b"[" + canonical_json(task) + b"," + canonical_json(task) + b"]"


def test_task_sha256_changes_with_the_text_and_not_with_the_site() -> None:
    task = _task()
    assert task_sha256(task) == hashlib.sha256(canonical_json(task)).hexdigest()
    assert task_sha256(task) != task_sha256(_task(text="Find it. "))
    assert task_sha256(task) == task_sha256(task.model_copy(update={"site": "Amazon"}))


def test_select_without_ids_or_count_is_the_whole_set() -> None:
    assert select(_tasks()) == _tasks()


def test_select_ids_keep_data_order() -> None:
    chosen = select(_tasks(), ids=["Apple--0", "Amazon--0", "Allrecipes--0"])
    assert [task.task_id for task in chosen] == ["Allrecipes--0", "Amazon--0", "Apple--0"]


def test_select_refuses_an_unknown_id_naming_it() -> None:
    with pytest.raises(FarmError, match="Apple--9 is not in the 126-task set"):
        select(_tasks(), ids=["Apple--0", "Apple--9"])


def test_select_refuses_an_id_of_another_site() -> None:
    with pytest.raises(FarmError, match="ArXiv--0"):
        select(_tasks(), ids=["ArXiv--0"])


def test_select_refuses_a_duplicate_id_naming_it() -> None:
    with pytest.raises(FarmError, match="Amazon--3 is given twice"):
        select(_tasks(), ids=["Amazon--3", "Apple--1", "Amazon--3"])


def test_select_refuses_an_empty_id_list() -> None:
    with pytest.raises(FarmError, match="--ids is empty"):
        select(_tasks(), ids=[])


def test_select_count_takes_the_first_tasks_in_data_order() -> None:
    assert [task.task_id for task in select(_tasks(), count=3)] == ["Allrecipes--0", "Allrecipes--1", "Allrecipes--2"]
    assert len(select(_tasks(), count=126)) == 126


@pytest.mark.parametrize("count", [0, 127, -1])
def test_select_refuses_a_count_outside_1_to_126(count: int) -> None:
    with pytest.raises(FarmError, match=f"--count {count}: out of range .* from 1 to 126"):
        select(_tasks(), count=count)


def test_select_refuses_ids_and_count_together() -> None:
    with pytest.raises(FarmError, match="together"):
        select(_tasks(), ids=["Apple--0"], count=1)
