import json
from pathlib import Path

from farm.results.device_line import DeviceMetrics, WrittenScore
from farm.results.normalise import Context, normalise_file
from host_agent.evalout import EvalTree


def _line(task_id: str, **kw: object) -> WrittenScore:
    fields = {"id": task_id, "category": "write", "expect": "succeeded", "outcome": "succeeded", "passed": True,
              "metrics": DeviceMetrics(total_ms=1500.0, round_trips=3), **kw}
    return WrittenScore.model_validate(fields)


def test_tree_files_follow_the_on_device_layout(tmp_path: Path) -> None:
    tree = EvalTree(tmp_path, "r1")
    tree.add(_line("a", markers=["AF-r1-a"]))
    tree.add(_line("b", passed=False, outcome="failed", reason="x|y"))
    scores = [json.loads(line) for line in (tmp_path / "scores.jsonl").read_text().splitlines()]
    assert [s["id"] for s in scores] == ["a", "b"] and "failureCategory" in scores[0] and "costUsd" in scores[0]
    assert json.loads((tmp_path / "metrics.json").read_text())["a"]["totalMs"] == 1500.0
    summary = (tmp_path / "summary.md").read_text()
    assert "## 运行小结" in summary and "## 人工改判" in summary and "- AF-r1-a" in summary
    assert "x/y" in summary  # a reason never breaks the table


def test_lines_normalise_into_records_with_nothing_left_over(tmp_path: Path) -> None:
    tree = EvalTree(tmp_path, "r1")
    tree.add(_line("a", app_package="dev.agentfarm.notes", execution="simulated"))
    result = normalise_file(tmp_path / "scores.jsonl", Context(run="r1", device="d", executor="host"), "scores.jsonl")
    record = result.records[0]
    assert (record.task_id, record.executor, record.execution, record.metrics.round_trips) == ("a", "host",
                                                                                              "simulated", 3)
    assert record.extra == {"appPackage": "dev.agentfarm.notes"}
