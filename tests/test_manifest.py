"""The run manifest: created first, never overwritten, credentials removed."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm import manifest as mf
from farm.errors import FarmError
from farm.results.store import RunStore

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
    run_dir = RunStore.create(tmp_path, _manifest()).run_dir
    assert mf.load(run_dir).run_id == "r1"


def test_create_run_dir_refuses_existing_run(tmp_path: Path) -> None:
    RunStore.create(tmp_path, _manifest())
    with pytest.raises(FarmError, match="already exists"):
        RunStore.create(tmp_path, _manifest())


def test_add_lane_merges_outputs_of_the_same_lane(tmp_path: Path) -> None:
    run_dir = RunStore.create(tmp_path, _manifest()).run_dir
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

    run_dir = RunStore.create(tmp_path, mf.Manifest(run_id="r", created_at=mf.utc_now())).run_dir

    def add(n: int) -> None:
        for i in range(20):
            mf.update(run_dir, lambda m, n=n, i=i: m.notes.append(f"{n}-{i}"))

    threads = [threading.Thread(target=add, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(mf.load(run_dir).notes) == 80


URL_KEY = "sk-url-userinfo-0a1b2c3d"
QUERY_KEY = "sk-url-query-4e5f6a7b"
ENV_KEY = "sk-env-value-8c9d0e1f"
HEADER_KEY = "sk-header-2a3b4c5d"


def _leaky_manifest() -> mf.Manifest:
    return mf.Manifest(
        run_id="leaky", created_at=mf.utc_now(),
        command=["farm", "run", "--base-url", f"https://h.example/v1?api_key={QUERY_KEY}",
                 f"--base-url=https://user:{URL_KEY}@h.example/v1", "--api-key-env", "FARM_TEST_MANIFEST_KEY",
                 "--label", ENV_KEY],
        config={"llm": {"base_url": f"https://user:{URL_KEY}@h.example/v1?api_key={QUERY_KEY}",
                        "api_key_env": "FARM_TEST_MANIFEST_KEY", "max_output_tokens": 4096},
                "headers": [f"Authorization: Bearer {HEADER_KEY}", f"x-api-key: {HEADER_KEY}"],
                "echo": f"key={ENV_KEY}!"},
        lanes=[mf.LaneEntry(lane="android", detail={"request": {"host": {"base_url": f"https://{URL_KEY}@h/v1"}}})],
        notes=[f"endpoint https://h.example/v1?token={QUERY_KEY} failed", f"raw {ENV_KEY}"],
    )


def test_a_saved_manifest_holds_no_credential_from_config_command_lanes_or_notes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FARM_TEST_MANIFEST_KEY", ENV_KEY)
    run_dir = RunStore.create(tmp_path, _leaky_manifest()).run_dir
    data = mf.manifest_path(run_dir).read_bytes()
    for secret in (URL_KEY, QUERY_KEY, ENV_KEY, HEADER_KEY):
        assert secret.encode() not in data
    assert mf.load(run_dir).run_id == "leaky"


def test_a_saved_manifest_keeps_what_is_not_a_credential(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FARM_TEST_MANIFEST_KEY", ENV_KEY)
    loaded = mf.load(RunStore.create(tmp_path, _leaky_manifest()).run_dir)
    assert loaded.command[:3] == ["farm", "run", "--base-url"]
    assert loaded.command[4] == f"--base-url=https://{mf.REDACTED}@h.example/v1"
    assert loaded.command[5:7] == ["--api-key-env", "FARM_TEST_MANIFEST_KEY"]
    assert loaded.config["llm"] == {
        "base_url": f"https://{mf.REDACTED}@h.example/v1?api_key={mf.REDACTED}",
        "api_key_env": "FARM_TEST_MANIFEST_KEY", "max_output_tokens": 4096,
    }


def test_credentials_added_later_through_update_never_reach_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FARM_TEST_MANIFEST_KEY", ENV_KEY)
    run_dir = RunStore.create(tmp_path, _manifest()).run_dir
    mf.update(run_dir, lambda m: m.notes.append(f"retry https://u:{URL_KEY}@h/v1"))
    mf.update(run_dir, lambda m: m.command.extend(["--api-key", CANARY]))
    mf.add_lane(run_dir, mf.LaneEntry(lane="web", detail={"api_key": CANARY, "base_url": f"https://{URL_KEY}@h"}))
    data = mf.manifest_path(run_dir).read_bytes()
    assert URL_KEY.encode() not in data and CANARY.encode() not in data
    assert mf.load(run_dir).command == ["--api-key", mf.REDACTED]


def test_save_leaves_the_callers_manifest_as_it_was(tmp_path: Path) -> None:
    manifest = _manifest()
    manifest.command = ["farm", "--api-key", CANARY]
    RunStore.create(tmp_path, manifest)
    assert manifest.command == ["farm", "--api-key", CANARY]


def test_an_ordinary_manifest_is_saved_unchanged(tmp_path: Path) -> None:
    manifest = mf.Manifest(
        run_id="plain", created_at=mf.utc_now(), label="nightly",
        command=["farm", "sweep", "--split", "all", "--base-url", "http://127.0.0.1:8000/v1", "--repeats", "2"],
        config={"adb_servers": ["127.0.0.1:5037"], "llm": {"base_url": "https://api.example.com/v1",
                                                          "api_key_env": "OPENAI_API_KEY", "max_output_tokens": 10}},
        phones=[mf.PhoneEntry(serial="emulator-5554", adb_server="127.0.0.1:5037", model="Pixel 8")],
        tasks=[mf.TaskEntry(id="calc-multiply", sha256="ab" * 32)],
        lanes=[mf.LaneEntry(lane="android", outputs=["records.jsonl"], detail={"split": "all", "repeats": 2})],
        notes=["adb server unreachable: 10.0.0.9:5037"],
    )
    assert mf.load(RunStore.create(tmp_path, manifest).run_dir) == manifest


@pytest.mark.parametrize("run_id", ["../x", "/tmp/x", "a/b", "..", ""])
def test_a_manifest_never_names_a_run_directory_outside_its_runs_directory(run_id: str, tmp_path: Path) -> None:
    from pydantic import ValidationError

    from farm.manifest import Manifest

    with pytest.raises(ValidationError, match="not a safe name"):
        Manifest(run_id=run_id, created_at="2026-12-01T00:00:00Z")
    assert list(tmp_path.iterdir()) == []
