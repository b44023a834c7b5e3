"""The record's DuckDB columns are derived from `Record`; the report's column types from the fields they read."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import duckdb
import pytest
from pydantic import BaseModel

from farm.results import duck
from farm.results.columns import (
    RECORD_COLUMNS,
    REPORT_READ,
    REPORT_SELECT,
    ReportColumn,
    column_type,
    model_columns,
    report_type,
    sql_type,
)
from farm.results.record import DeviceVerdict, Record, RunMetrics, Tokens
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
