"""`farm run --executor host` end to end on the virtual phone: same tree, same records, executor=host."""

from pathlib import Path
from typing import Any

import pytest

from farm.android.host_executor import llm_config
from farm.android.options import AgentOptions, HostSettings
from farm.errors import FarmError
from farm.results.store import read_records
from farm.sweep.dev_run import run, run_request


def _run(sim: Any, tmp_path: Path, set_prefix: str, **kw: Any) -> Any:
    req = run_request(agent=AgentOptions(split="tune", set_prefix=set_prefix), serials=[sim.serial],
                     executor="host", host=HostSettings(policy="scripted"), runs_dir=tmp_path / "runs",
                     show_progress=False, run_id="r-host", **kw)
    return run(req)


def test_host_executor_writes_records_like_the_instrument_lane(virtual_phone: Any, tmp_path: Path) -> None:
    result = _run(virtual_phone, tmp_path, "calculator-multiply")
    records = result.phones[0].records
    assert [(r.task_id, r.outcome, r.passed, r.executor) for r in records] == [
        ("calculator-multiply", "succeeded", True, "host")
    ]
    record = records[0]
    assert record.execution == "simulated" and record.metrics.total_ms and record.steps == 10
    assert read_records(result.run_dir / "records.jsonl")[0].task_id == "calculator-multiply"
    raw = next(result.run_dir.rglob("calculator-multiply/run/final.json"))
    assert (raw.parent / "steps.jsonl").exists() and (raw.parent.parent.parent / "summary.md").exists()


def test_model_policy_without_a_model_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("FARM_LLM_PROVIDER", "FARM_LLM_MODEL"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(FarmError, match="no model configured"):
        llm_config(None, HostSettings(policy="model"))


def test_flags_override_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FARM_LLM_PROVIDER", "openai")
    monkeypatch.setenv("FARM_LLM_MODEL", "env-model")
    cfg = llm_config(None, HostSettings(model="flag-model", base_url="http://127.0.0.1:9/v1"))
    assert (cfg.provider, cfg.model, cfg.base_url, cfg.api_key_env) == (
        "openai", "flag-model", "http://127.0.0.1:9/v1", "OPENAI_API_KEY")


def test_tasks_without_a_script_are_skipped_with_the_reason(virtual_phone: Any, tmp_path: Path) -> None:
    from host_agent.scripted import load_scripts

    result = _run(virtual_phone, tmp_path, "settings-")
    records = result.phones[0].records
    scripted = set(load_scripts())
    assert all(r.passed for r in records if r.task_id in scripted)
    unscripted = [r for r in records if r.task_id not in scripted]
    assert unscripted and all(r.outcome == "skipped" for r in unscripted)
    assert {r.task_id: r.reasons for r in unscripted}["settings-build-number"] == [
        "scripted policy: no script for this task"]


def test_farm_run_host_model_without_a_model_exits_2_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from farm.cli import main

    monkeypatch.chdir(tmp_path)
    for var in ("FARM_LLM_PROVIDER", "FARM_LLM_MODEL", "FARM_HOST_POLICY"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--executor", "host", "--policy", "model", "--runs-dir", str(tmp_path / "runs")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --policy model: no model configured") and "\n" not in err


def test_farm_run_with_the_model_policy_prices_tokens_from_the_flags(
    virtual_phone: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from farm.llm.stub import ModelStub
    from tests.helpers.host import CALCULATOR_PLAN, screen_reading_model

    monkeypatch.setenv("FARM_TEST_MODEL_KEY", "test-key")
    with ModelStub(responder=screen_reading_model(CALCULATOR_PLAN)) as stub:
        settings = HostSettings(policy="model", provider="openai", model="stub-model",
                                base_url=stub.base_url_openai, api_key_env="FARM_TEST_MODEL_KEY")
        agent = AgentOptions(split="tune", set_prefix="calculator-multiply", price_in=1.0, price_out=2.0)
        req = run_request(agent=agent, serials=[virtual_phone.serial], executor="host", host=settings,
                         runs_dir=tmp_path / "runs", show_progress=False, run_id="r-model")
        record = run(req).phones[0].records[0]
    n = len(CALCULATOR_PLAN)
    assert (record.outcome, record.passed, record.executor, record.metrics.round_trips) == (
        "succeeded", True, "host", n)
    assert (record.tokens.input_new, record.tokens.output) == (10 * n, 5 * n)
    assert record.cost_usd == pytest.approx(n * (10 * 1.0 + 5 * 2.0) / 1_000_000)


def test_a_phone_is_connected_once_for_all_its_units_and_closed_at_the_end(
    virtual_phone: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from host_agent.phone import Phone

    connects: list[str] = []
    closes: list[str] = []
    real_connect, real_close = Phone.connect.__func__, Phone.close  # type: ignore[attr-defined]

    def counting_connect(cls: type[Phone], device: Any, **kw: Any) -> Phone:
        connects.append(device.serial)
        return real_connect(cls, device, **kw)  # type: ignore[no-any-return]

    def counting_close(self: Phone) -> None:
        closes.append("closed")
        real_close(self)

    monkeypatch.setattr(Phone, "connect", classmethod(counting_connect))
    monkeypatch.setattr(Phone, "close", counting_close)
    result = _run(virtual_phone, tmp_path, "settings-")
    ran = [r for r in result.phones[0].records if r.outcome != "skipped"]
    units = [r for r in read_records(result.run_dir / "records.jsonl") if "unit" in r.extra]
    assert len(units) > 2 and all(r.passed for r in ran)
    # One unit per executor job, one connection for all of them, ended once when the run ends.
    assert connects == [virtual_phone.serial] and closes == ["closed"]
