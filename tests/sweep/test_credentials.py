"""A credential given to a sweep reaches no file: not the manifest, the journal, the lock, nor the records."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.android.options import HostSettings
from farm.errors import FarmError
from farm.sweep.sweep import sweep
from tests.helpers.sweep import scripted_tasks, sweep_request

SECRETS = ("sk-userinfo-4f1e9a", "sk-query-77c0d2")
URL = f"http://agent:{SECRETS[0]}@127.0.0.1:9/v1?api_key={SECRETS[1]}"


def _files_holding_a_secret(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and any(s.encode() in p.read_bytes() for s in SECRETS)]


def test_a_base_url_with_credentials_is_written_nowhere_and_resume_says_why_it_cannot(
    virtual_farm, tmp_path: Path
) -> None:
    virtual_farm(1)
    tasks = scripted_tasks(tmp_path / "tasks", ("read/system/calculator-multiply",))
    host = HostSettings(policy="scripted", base_url=URL)
    argv = ["farm", "sweep", "--executor", "host", "--policy", "scripted", "--base-url", URL]
    result = sweep(sweep_request(tmp_path, tasks, run_id="cred", host=host, command=argv, label="nightly"))
    assert result.exit_code == 0
    assert (result.run_dir / "journal.sqlite").is_file()
    assert _files_holding_a_secret(tmp_path) == []
    with pytest.raises(FarmError, match="cannot resume: its options held a credential") as err:
        sweep(sweep_request(tmp_path, tasks, run_id="cred", resume=True))
    assert "--retry-from cred" in err.value.line()
