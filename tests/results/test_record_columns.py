"""The record's DuckDB columns are derived from `Record`; the report's column types from the fields they read."""

from __future__ import annotations

import copy
import json
import math
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import annotated_types
import duckdb
import pytest
from pydantic import BaseModel, Field, ValidationError

from farm.results import duck
from farm.results.columns import (
    RECORD_BOUNDS,
    RECORD_COLUMNS,
    REPORT_READ,
    REPORT_SELECT,
    Bound,
    Number,
    ReportColumn,
    column_type,
    model_bounds,
    model_columns,
    report_type,
    sql_type,
)
from farm.results.record import (
    MAX_COST_USD,
    MAX_COUNT,
    MAX_MS,
    MAX_TOKENS,
    Count,
    DeviceVerdict,
    Millis,
    Record,
    RunMetrics,
    Tokens,
)
from farm.results.store import RECORDS_FILE
from tests.helpers.records import record, write_run


def _struct_members(struct: str) -> list[tuple[str, str]]:
    inner = re.fullmatch(r"STRUCT\((.*)\)", struct)
    assert inner, struct
    pairs = [member.split(" ", 1) for member in inner.group(1).split(", ")]
    return [(name, kind) for name, kind in pairs]


def test_every_record_field_is_a_column_of_its_mapped_type() -> None:
    assert list(RECORD_COLUMNS) == list(Record.model_fields)
    assert {k: RECORD_COLUMNS[k] for k in ("schema_version", "run", "lane", "partition", "repeat", "steps",
                                           "passed", "cost_usd", "reasons", "markers")} == {
        "schema_version": "BIGINT", "run": "VARCHAR", "lane": "VARCHAR", "partition": "VARCHAR", "repeat": "BIGINT",
        "steps": "BIGINT", "passed": "BOOLEAN", "cost_usd": "DOUBLE", "reasons": "VARCHAR[]", "markers": "VARCHAR[]",
    }


def test_struct_columns_hold_the_nested_model_fields_in_order() -> None:
    for column, model in (("metrics", RunMetrics), ("tokens", Tokens), ("device_verdict", DeviceVerdict)):
        members = _struct_members(RECORD_COLUMNS[column])
        assert [name for name, _ in members] == list(model.model_fields)
        assert dict(members) == model_columns(model)
    assert dict(_struct_members(RECORD_COLUMNS["metrics"]))["round_trips"] == "BIGINT"
    assert dict(_struct_members(RECORD_COLUMNS["metrics"]))["total_ms"] == "DOUBLE"


def test_checks_and_extra_are_json() -> None:
    assert RECORD_COLUMNS["checks"] == "JSON"
    assert RECORD_COLUMNS["extra"] == "JSON"


def test_duckdb_reads_records_with_the_derived_types(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, "r", [record("t1", run="r", reasons=["why"], markers=["m"])])
    con = duck.connect([run_dir])
    described = {row[0]: row[1] for row in con.execute("DESCRIBE records").fetchall()}
    assert described == RECORD_COLUMNS


def test_report_types_are_the_types_of_the_fields_they_read() -> None:
    assert {c.name: report_type(c.name) for c in REPORT_SELECT if c.name in (
        "first_feedback_ms", "round_trips", "cost_usd", "markers", "passed", "dv_passed", "reason", "repeat",
        "instance", "dv_outcome", "input_new")} == {
        "first_feedback_ms": "DOUBLE", "round_trips": "BIGINT", "cost_usd": "DOUBLE", "markers": "VARCHAR[]",
        "passed": "BOOLEAN", "dv_passed": "BOOLEAN", "reason": "VARCHAR", "repeat": "BIGINT", "instance": "VARCHAR",
        "dv_outcome": "VARCHAR", "input_new": "BIGINT",
    }
    for column in REPORT_SELECT:
        if not column.member and not column.first:
            assert report_type(column.name) == RECORD_COLUMNS[column.field]


def test_report_types_are_what_duckdb_computes_from_the_columns(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, "r", [record("t1", run="r")])
    filled = duckdb.connect(":memory:")
    duck.report_records(filled, [run_dir])
    empty = duckdb.connect(":memory:")
    duck.report_records(empty, [])
    for con in (filled, empty):
        described = {row[0]: row[1] for row in con.execute("DESCRIBE rec").fetchall()}
        assert described == {**{c.name: report_type(c.name) for c in REPORT_SELECT}, "pos": "BIGINT"}


def test_report_reads_exactly_the_fields_its_columns_name() -> None:
    assert set(REPORT_READ) == {c.field for c in REPORT_SELECT}
    assert set(REPORT_READ) <= set(RECORD_COLUMNS)
    assert len(REPORT_READ) == len(set(REPORT_READ))


def test_report_column_sql_names_its_field() -> None:
    assert ReportColumn("reason", "reasons", first=True).sql == "reasons[1]"
    assert ReportColumn("dv_passed", "device_verdict", "passed").sql == "device_verdict.passed"
    assert ReportColumn("instance", "instance", default="''").sql == "coalesce(instance, '')"


def test_a_field_added_to_a_record_subclass_becomes_a_column() -> None:
    class Detail(BaseModel):
        label: str
        weight: float | None = None

    class Wider(Record):
        screens: int | None = None
        mode: Literal["fast", "slow"] = "fast"
        detail: Detail | None = None

    columns = model_columns(Wider)
    assert list(columns) == [*RECORD_COLUMNS, "screens", "mode", "detail"]
    assert {k: columns[k] for k in ("screens", "mode", "detail")} == {
        "screens": "BIGINT", "mode": "VARCHAR", "detail": "STRUCT(label VARCHAR, weight DOUBLE)",
    }
    assert column_type(Wider, ReportColumn("detail_weight", "detail", "weight")) == "DOUBLE"


@pytest.mark.parametrize("annotation", [set[int], tuple[int, int], int | str, Literal["a", 1], list[list[str]]])
def test_an_unmappable_annotation_is_refused(annotation: object) -> None:
    odd = type("Odd", (BaseModel,), {"__annotations__": {"thing": annotation}})
    with pytest.raises(TypeError, match=r"Odd\.thing"):
        model_columns(odd)


def test_an_unmappable_nested_field_is_refused_by_its_path() -> None:
    class Inner(BaseModel):
        pair: tuple[int, int]

    class Outer(BaseModel):
        inner: Inner

    with pytest.raises(TypeError, match=r"Outer\.inner\.pair"):
        model_columns(Outer)
    with pytest.raises(TypeError, match="here"):
        sql_type(frozenset[str], "here")


# The range of every bounded number of a record, as the model declares it (`Millis`, `Count`, `Ordinal`,
# `CostUsd`; token counts through `TokenCount`, which `Record` checks them as).
EXPECTED_BOUNDS = {
    "repeat": (1, MAX_COUNT), "steps": (0, MAX_COUNT), "cost_usd": (0, MAX_COST_USD), "attempt": (1, MAX_COUNT),
    **{f"metrics.{name}": (0, MAX_MS) for name in ("first_feedback_ms", "model_ms", "screen_read_ms", "action_ms",
                                                    "other_ms", "total_ms")},
    "metrics.round_trips": (0, MAX_COUNT),
    **{f"tokens.{name}": (0, MAX_TOKENS) for name in ("input_new", "cache_read", "cache_write", "output")},
}


def _numeric_leaves(columns: dict[str, str], prefix: str = "") -> list[str]:
    """The dotted paths of the BIGINT and DOUBLE columns and STRUCT members."""
    out: list[str] = []
    for name, kind in columns.items():
        if kind.startswith("STRUCT("):
            out.extend(_numeric_leaves(dict(_struct_members(kind)), f"{prefix}{name}."))
        elif kind in ("BIGINT", "DOUBLE"):
            out.append(prefix + name)
    return out


_MISSING = object()


def _with(data: dict[str, Any], path: tuple[str, ...], value: object) -> dict[str, Any]:
    """`data` (a record as JSON) with the number at `path` set to `value`; `_MISSING` deletes its key."""
    out = copy.deepcopy(data)
    *parents, leaf = path
    target = out
    for name in parents:
        target = target[name]
    if value is _MISSING:
        del target[leaf]
    else:
        target[leaf] = value
    return out


def _outside(value: Number, step: int) -> Number:
    """The nearest number past `value` (down with step -1, up with +1), of its type."""
    return value + step if isinstance(value, int) else math.nextafter(value, step * math.inf)


def _accepts(data: dict[str, Any]) -> bool:
    try:
        Record.model_validate_json(json.dumps(data))
    except ValidationError:
        return False
    return True


def test_the_derived_bounds_are_every_bounded_number_of_the_record_with_the_models_bounds() -> None:
    assert {b.name: (b.lower, b.upper) for b in RECORD_BOUNDS} == EXPECTED_BOUNDS
    assert len({b.name for b in RECORD_BOUNDS}) == len(RECORD_BOUNDS)
    # Every number of the record has a derived bound exactly when the model refuses some value of it
    # (`schema_version` is a Literal: one value, not a range).
    base = record("t1", run="r").model_dump(mode="json")
    derived = {b.name: b for b in RECORD_BOUNDS}
    leaves = [leaf for leaf in _numeric_leaves(RECORD_COLUMNS) if leaf != "schema_version"]
    assert set(derived) <= set(leaves)
    for leaf in leaves:
        path = tuple(leaf.split("."))
        if leaf not in derived:
            assert _accepts(_with(base, path, -(10**15))) and _accepts(_with(base, path, 10**15)), leaf
            continue
        bound = derived[leaf]
        assert bound.lower is not None and bound.upper is not None
        assert _accepts(_with(base, path, bound.lower)) and _accepts(_with(base, path, bound.upper)), leaf
        assert not _accepts(_with(base, path, _outside(bound.lower, -1))), leaf
        assert not _accepts(_with(base, path, _outside(bound.upper, +1))), leaf
        assert bound.lower <= bound.default <= bound.upper


def test_the_sql_reader_refuses_exactly_the_lines_the_model_refuses(tmp_path: Path) -> None:
    base = record("t0", run="r")
    run_dir = write_run(tmp_path, "r", [base])
    data = base.model_dump(mode="json")
    lines: list[tuple[str, dict[str, Any]]] = []  # (what it is, the line), from line 2 on
    for bound in RECORD_BOUNDS:
        assert bound.lower is not None and bound.upper is not None
        for label, value in (("lower", bound.lower), ("upper", bound.upper), ("missing", _MISSING),
                             ("below", _outside(bound.lower, -1)), ("above", _outside(bound.upper, +1))):
            line = _with(data, bound.path, value)
            line["task_id"] = f"{bound.name}:{label}"
            lines.append((line["task_id"], line))
    path = run_dir / RECORDS_FILE
    with path.open("a", encoding="utf-8") as fh:
        fh.writelines(json.dumps(line) + "\n" for _, line in lines)

    refused = {number for number, (_, line) in enumerate(lines, start=2) if not _accepts(line)}
    assert {lines[n - 2][0].rsplit(":", 1)[1] for n in refused} == {"below", "above"}
    assert len(refused) == 2 * len(RECORD_BOUNDS)
    ((_, damage),) = duck.damaged_lines([run_dir])
    assert (damage.total, set(damage.lines)) == (len(refused), refused)
    con = duckdb.connect(":memory:")
    ((_, reported),) = duck.report_records(con, [run_dir]).damaged
    assert (reported.total, set(reported.lines)) == (len(refused), refused)
    kept = {row[0] for row in con.execute("SELECT task_id FROM rec").fetchall()}
    assert kept == {"t0"} | {name for n, (name, _) in enumerate(lines, start=2) if n not in refused}
    _, rows = duck.query(duck.query_connection([run_dir]), "SELECT task_id FROM records")
    assert {row[0] for row in rows} == kept


def test_a_bounded_number_added_to_a_record_subclass_gets_its_range_check() -> None:
    class Detail(BaseModel):
        weight: Annotated[float, Field(ge=0.5, le=2)] | None = None
        note: str = ""
        free: float | None = None

    class Wider(Record):
        screens: Count | None = None
        level: Annotated[int, Field(gt=0, lt=10)] = 1
        span: Annotated[int, annotated_types.Interval(ge=-5, le=5)] = 0
        size: Annotated[int, Field(ge=0)] = 0
        detail: Detail = Field(default_factory=Detail)
        slow: Millis | None = None

    assert model_bounds(Wider) == (
        *RECORD_BOUNDS, Bound(("screens",), 0, MAX_COUNT), Bound(("level",), 1, 9), Bound(("span",), -5, 5),
        Bound(("size",), 0, None), Bound(("detail", "weight"), 0.5, 2), Bound(("slow",), 0, MAX_MS),
    )
    checks = {b.name: duck._bound_check(b) for b in model_bounds(Wider)}
    assert checks["detail.weight"] == "coalesce(detail.weight, 0.5) BETWEEN 0.5 AND 2"
    assert checks["size"] == "coalesce(size, 0) >= 0"
    assert checks["slow"] == "coalesce(slow, 0) BETWEEN 0 AND 100000000000"
    assert checks["tokens.output"] == "coalesce(TRY_CAST(tokens->>'$.output' AS DOUBLE), 0) BETWEEN 0 AND 1000000000000"


def test_a_bound_no_sql_check_can_hold_is_refused_by_its_path() -> None:
    class Strict(BaseModel):
        share: Annotated[float, Field(gt=0)] = 1.0

    class Listed(BaseModel):
        times: list[Millis] = []

    class Nested(BaseModel):
        parts: list[RunMetrics] = []

    with pytest.raises(TypeError, match=r"Strict\.share: a strict bound"):
        model_bounds(Strict)
    with pytest.raises(TypeError, match=r"Listed\.times: a bounded number inside a list"):
        model_bounds(Listed)
    with pytest.raises(TypeError, match=r"Nested\.parts: a bounded number inside a list"):
        model_bounds(Nested)
