"""The run manifest: created first, never overwritten, credentials removed."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm import manifest as mf
from farm.errors import FarmError

CANARY = "sk-canary-5f1e2d3c4b5a"


def _manifest(run_id: str = "r1") -> mf.Manifest:
    return mf.Manifest(run_id=run_id, created_at=mf.utc_now())


def test_redact_removes_nested_credentials_and_keeps_env_names() -> None:
    config = {
        "llm": {"api_key": CANARY, "api_key_env": "OPENAI_API_KEY", "model": "m"},
        "servers": [{"host": "127.0.0.1", "auth_token": CANARY}],
        "password": CANARY,
    }
    redacted = mf.redact(config)
    text = repr(redacted)
    assert CANARY not in text
    assert "OPENAI_API_KEY" in text
    assert redacted["llm"]["model"] == "m"  # type: ignore[index,call-overload]


def test_create_run_dir_writes_manifest_first(tmp_path: Path) -> None:
    run_dir = mf.create_run_dir(tmp_path, _manifest())
    assert mf.load(run_dir).run_id == "r1"


def test_create_run_dir_refuses_existing_run(tmp_path: Path) -> None:
    mf.create_run_dir(tmp_path, _manifest())
    with pytest.raises(FarmError, match="already exists"):
        mf.create_run_dir(tmp_path, _manifest())


def test_add_lane_merges_outputs_of_the_same_lane(tmp_path: Path) -> None:
    run_dir = mf.create_run_dir(tmp_path, _manifest())
    mf.add_lane(run_dir, mf.LaneEntry(lane="web", outputs=["web/a.jsonl"]))
    mf.add_lane(run_dir, mf.LaneEntry(lane="web", outputs=["web/a.jsonl", "web/report.md"]))
    lanes = mf.load(run_dir).lanes
    assert [lane.lane for lane in lanes] == ["web"]
    assert lanes[0].outputs == ["web/a.jsonl", "web/report.md"]


def test_load_reports_invalid_manifest_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text('{"run_id": 3}')
    with pytest.raises(FarmError) as info:
        mf.load(tmp_path)
    assert "\n" not in info.value.line()
    assert "manifest.json" in info.value.line()


def test_code_fingerprint_names_the_commit_of_this_checkout() -> None:
    fp = mf.code_fingerprint()
    assert fp.git_commit is not None and len(fp.git_commit) == 40


def test_concurrent_updates_lose_nothing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import threading

    from farm import manifest as mf

    run_dir = mf.create_run_dir(tmp_path, mf.Manifest(run_id="r", created_at=mf.utc_now()))

    def add(n: int) -> None:
        for i in range(20):
            mf.update(run_dir, lambda m, n=n, i=i: m.notes.append(f"{n}-{i}"))

    threads = [threading.Thread(target=add, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(mf.load(run_dir).notes) == 80
