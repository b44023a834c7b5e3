"""docs/agent-app.md and docs/schemas/ say what the code does: the documented `am instrument` line is the one the
executor builds, the shipped schemas are the models' (byte for byte), and the contract models agree with what
the harness reads."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any, get_args

import jsonschema
import pytest

from farm.android.agent_contract import CONTRACT_VERSION, AppEvidence, Bundle, ScoreLine
from farm.android.agent_schemas import SCHEMAS, WRITE_COMMAND, default_schema_dir, schema_file, schema_text
from farm.android.bundle import bundle_device_path, bundle_json
from farm.android.executor import ResolvedTask
from farm.android.instrument_executor import instrument_argv
from farm.android.options import AgentOptions, RunOptions
from farm.config import FarmConfig
from farm.results.device_line import DeviceScore
from farm.scoring.evidence import Evidence
from farm.scoring.transcript import HARNESS_ONLY
from farm.taskset.model import Task
from farm.taskset.placeholders import resolve_task

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "agent-app.md"
SCHEMA_DIR = ROOT / "docs" / "schemas"

# Every optional group of the documented template, in its order, and the option that sends it.
OPTIONAL: list[dict[str, Any]] = [
    {"set_prefix": "read/system"}, {"split": "holdout"}, {"price_in": 3.0}, {"price_out": 15.0},
    {"price_cached": 0.3}, {"allow_irreversible": True}, {"channel": "web"}, {"on_takeover": "wait"},
    {"flags": "fastScroll=on,cache=off"}, {"learn_skills": True}, {"memory": True},
]


def documented(marker: str) -> list[str]:
    """The words of the fenced block after `<!-- contract: marker -->` in docs/agent-app.md."""
    text = DOC.read_text(encoding="utf-8")
    assert f"<!-- contract: {marker} -->" in text, f"docs/agent-app.md lost its `{marker}` block"
    block = text.split(f"<!-- contract: {marker} -->", 1)[1].split("```sh\n", 1)[1].split("\n```", 1)[0]
    return shlex.split(block.replace("\\\n", " "))


def groups(words: list[str]) -> tuple[list[str | list[str]], int]:
    """The template as required words and optional groups (`[-e key value]`), and the number of groups."""
    out: list[str | list[str]] = []
    group: list[str] | None = None
    count = 0
    for word in words:
        if word.startswith("["):
            group, word = [], word[1:]
        closing = word.endswith("]")
        word = word.removesuffix("]")
        if group is not None:
            group.append(word)
        else:
            out.append(word)
        if closing and group is not None:
            out.append(group)
            group, count = None, count + 1
    return out, count


def expand(template: list[str | list[str]], values: dict[str, str], keep: set[int]) -> list[str]:
    """The command line the template gives with the optional groups numbered in `keep`."""
    def fill(word: str) -> str:
        return re.sub(r"<(\w+)>", lambda m: values[m.group(1)], word)

    out: list[str] = []
    index = 0
    for part in template:
        if isinstance(part, list):
            if index in keep:
                out += [fill(w) for w in part]
            index += 1
        else:
            out.append(fill(part))
    return out


def _opts(**agent: Any) -> RunOptions:
    return RunOptions.resolve(AgentOptions(**agent), FarmConfig())


def test_the_documented_default_command_line_is_the_one_the_executor_builds() -> None:
    opts = _opts()
    bundle = bundle_device_path(opts.profile.resolved_files_dir(), "<run>")
    assert documented("argv-default") == instrument_argv(opts, "<run>", bundle)


@pytest.mark.parametrize("given", [None, *range(len(OPTIONAL)), "all"], ids=lambda g: f"option {g}")
def test_the_documented_template_gives_the_executors_command_line_for_every_option(given: int | str | None) -> None:
    template, count = groups(documented("argv-template"))
    assert count == len(OPTIONAL), "every optional extra of the template has an option in OPTIONAL"
    keep = set(range(count)) if given == "all" else {given} if isinstance(given, int) else set()
    chosen: dict[str, Any] = {"split": "all"}
    for i in keep:
        chosen.update(OPTIONAL[i])
    opts = _opts(**chosen)
    values = {"evalClass": opts.profile.eval_class, "run": "r1.calc-add_1.1", "set": "read/system",
              "split": "holdout", "bundle": "/sdcard/b.json", "priceIn": "3", "priceOut": "15", "priceCached": "0.3",
              "channel": "web", "onTakeover": "wait", "flags": "fastScroll=on,cache=off",
              "testPackage": opts.profile.test_package, "runner": opts.profile.runner}
    assert expand(template, values, keep) == instrument_argv(opts, "r1.calc-add_1.1", "/sdcard/b.json")


def test_every_extra_the_executor_sends_is_in_the_documents_table() -> None:
    opts = _opts(**{k: v for o in OPTIONAL for k, v in o.items()})
    text = DOC.read_text(encoding="utf-8")
    first_cells = [line.split(" | ")[0] for line in text.splitlines() if line.startswith("| `")]
    for key, _value in opts.agent.instrument_extras("r", "/b", opts.profile):
        assert any(f"`{key}`" in cell for cell in first_cells), f"extra {key} is not in docs/agent-app.md's table"
    assert f"**Contract version {CONTRACT_VERSION}.**" in text


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_the_shipped_schemas_are_the_models_schemas(name: str) -> None:
    path = SCHEMA_DIR / schema_file(name)
    assert path.is_file(), f"{path.relative_to(ROOT)} is missing: run `{WRITE_COMMAND}`"
    assert path.read_text(encoding="utf-8") == schema_text(name), (
        f"{path.relative_to(ROOT)} is stale (a model in farm/android/agent_contract.py changed): run "
        f"`{WRITE_COMMAND}`")


def test_no_other_file_sits_among_the_schemas() -> None:
    assert default_schema_dir() == SCHEMA_DIR
    assert sorted(p.name for p in SCHEMA_DIR.iterdir()) == sorted(schema_file(n) for n in SCHEMAS)


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_each_schema_is_a_valid_draft_2020_12_schema_naming_the_contract(name: str) -> None:
    schema = json.loads(schema_text(name))
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"].endswith("/draft/2020-12/schema")
    assert f"contract version {CONTRACT_VERSION}" in schema["$comment"] and WRITE_COMMAND in schema["$comment"]
    # Every property says what it is (the field docstrings reach the schema).
    for where, sub in [("", schema), *schema.get("$defs", {}).items()]:
        for prop, spec in sub.get("properties", {}).items():
            assert spec.get("description"), f"{name}: {where or 'root'}.{prop} has no description"


def test_the_score_line_model_knows_every_field_the_harness_reads() -> None:
    reads = {f.alias or n for n, f in DeviceScore.model_fields.items()}
    writes = {f.alias or n for n, f in ScoreLine.model_fields.items()}
    assert reads <= writes, f"scores.jsonl fields the harness reads but the contract misses: {reads - writes}"


def test_app_evidence_is_the_harness_evidence_without_its_own_fields() -> None:
    mine = AppEvidence.model_fields
    theirs = Evidence.model_fields
    assert set(mine) <= set(theirs)
    assert all(mine[n].annotation == theirs[n].annotation for n in mine)
    assert set(theirs) - set(mine) == set(HARNESS_ONLY) == {"fresh_looks", "probes", "probes_after", "app_choices",
                                                           "judge_verdicts", "state_before", "state_after"}
    full = AppEvidence.model_validate({"end": "confirmation", "confirmations": [{"action": "发送"}],
                                       "asks": [{"step": 2, "question": "几点?", "reply": "7点"}]})
    assert Evidence.model_validate(full.model_dump(by_alias=True)).confirmations[0].action == "发送"
    outcomes = get_args(ScoreLine.model_fields["outcome"].annotation)
    assert set(outcomes) == {"succeeded", "failed", "confirmation", "takeover", "skipped", "error"}


def test_a_bundle_the_harness_pushes_follows_the_bundle_schema() -> None:
    write = Task.model_validate({
        "id": "notes-new", "goal": "在备忘录里新建一条笔记,标题写 AF-{run}-n1", "apps": ["{app:notes}"],
        "category": "write", "partition": "tune", "expect": "succeeded", "marker": "AF-{run}-n1",
        "checks": [{"type": "screen_has", "marker": True, "packageName": "{app:notes}"}],
    })
    ask = Task.model_validate({
        "id": "clock-ask", "goal": "帮我定个闹钟", "apps": ["{app:alarm}"], "category": "write", "partition": "holdout",
        "expect": "succeeded", "answers": {"几点|什么时间": "早上7点"}, "checks": [{"type": "asked_user"}],
    })
    # Notes has no standard intent: its placeholder stays for the agent to resolve, as the resolver leaves it.
    APPS = {"alarm": "com.android.deskclock", "notes": "{app:notes}"}  # noqa: N806 - a constant of this test
    tasks = [ResolvedTask(resolve_task(t, apps=APPS, probes={}, run="r1"), d, "0" * 64)
             for t, d in ((write, "write"), (ask, "write"))]
    data = json.loads(bundle_json("r1.notes-new_1.1", tasks))
    jsonschema.validate(data, json.loads(schema_text("bundle")))
    bundle = Bundle.model_validate(data)
    assert [t.marker for t in bundle.tasks] == ["AF-r1-n1", None] and bundle.tasks[1].directory == "write"
